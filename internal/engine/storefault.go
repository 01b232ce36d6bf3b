package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/grade"
	"github.com/rlconform/rlconform/redisenv"
)

// faultWhy says why the run cannot put faults on t's store, or "" when it
// can: through t.StoreFault, or on the redis-server the run started for a
// target that needs Redis.
func (r *runner) faultWhy(t Target) string {
	switch {
	case t.StoreFault != nil:
		return ""
	case !t.NeedsRedis:
		return "stops and freezes the target's store, which the run cannot reach: give a command that can (rlconform run --store-fault CMD, run as CMD stop, CMD freeze and CMD resume; Target.StoreFault), or let the run start the limiter on a Redis of its own (rlconform run --exec CMD)"
	case r.redis == nil || r.redis.Server == nil:
		return "stops and freezes the target's Redis, which this run did not start (it came from REDIS_URL, Config.Redis or a container): give a way to fault it (Target.StoreFault; rlconform run --store-fault CMD)"
	}
	return ""
}

// ownsFaults reports whether the run puts faults on t's store itself: on
// the redis-server it started, t having no StoreFault of its own.
func (r *runner) ownsFaults(t Target) bool {
	return t.StoreFault == nil && t.NeedsRedis && r.redis != nil && r.redis.Server != nil
}

// StoreFault puts fault on the target's store, or ends it
// (grade.StoreResume): through Target.StoreFault, or on the redis-server
// the run started. A spec that puts a fault on ends it before it returns,
// whatever happens (a deferred StoreFault(ctx, StoreResume) on a context
// that outlives the spec's). An error is the fault's, never the
// limiter's: the spec ends it with Fault.
func (h *Harness) StoreFault(ctx context.Context, fault grade.StoreFault) error {
	if h.target.StoreFault != nil {
		if err := h.target.StoreFault(ctx, fault); err != nil {
			return fmt.Errorf("store fault %s: %w", fault, err)
		}
		return nil
	}
	if !h.run.ownsFaults(h.target) {
		return fmt.Errorf("store fault %s: the run cannot reach the target's store (a bug of the catalogue: the spec needs %s)", fault, NeedOwnRedis)
	}
	if err := ownedFault(ctx, h.run.redis.Server, fault); err != nil {
		return fmt.Errorf("store fault %s on the run's redis-server: %w", fault, err)
	}
	return nil
}

// ownedFault puts fault on srv, a redis-server the run started: stop kills
// it (it comes back empty: no persistence), freeze sends SIGSTOP, resume
// starts a stopped one again (waiting until it answers) and sends SIGCONT
// to a frozen one.
func ownedFault(ctx context.Context, srv *redisenv.Server, fault grade.StoreFault) error {
	switch fault {
	case grade.StoreStop:
		return srv.Stop()
	case grade.StoreFreeze:
		return srv.Pause()
	case grade.StoreResume:
		if err := srv.Start(ctx); err != nil { // a running server is left as it is
			return err
		}
		if err := srv.Resume(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
		return nil
	}
	return fmt.Errorf("unknown store fault %q", fault)
}

// faultClient is a client of the Redis at url for the instances of a spec
// that faults it: dial, read and write timeouts of half the store timeout,
// and no retries of a command or a dial, so that a limiter on it answers within the store timeout
// while the store is stopped or frozen. Its pool checks a connection
// before use, so a limiter on it finds the store again once it is back.
func faultClient(url string, storeTimeout time.Duration) (*redis.Client, error) {
	if strings.Contains(url, ",") {
		return nil, errors.New("the run's Redis is a cluster")
	}
	if !strings.Contains(url, "://") {
		url = "redis://" + url
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("the run's Redis: %w", err)
	}
	half := storeTimeout / 2
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = half, half, half
	opts.MaxRetries, opts.DialerRetries = -1, 1 // one dial a call: a refused one answers at once
	opts.ContextTimeoutEnabled = true
	return redis.NewClient(opts), nil
}
