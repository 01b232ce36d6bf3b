package honest

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
)

// PacerProfile is the profile [Pacer] implements.
const PacerProfile = "gcra:burst=1"

// pacerAttempts bounds the optimistic transactions one call makes before
// it answers a store error: under the catalogue's concurrency a key sees
// a few dozen writers at once.
const pacerAttempts = 1000

// Pacer lets one request through every W/N and never two at once: GCRA
// with a burst of 1, as Guava's RateLimiter and Resilience4j are often
// configured. It reads a millisecond clock in the client (no grid: each
// user's pace starts with its first request) and keeps each user's
// theoretical arrival time TAT, exact (a fraction of a millisecond, as
// big.Rat writes it), in Redis, updated by an optimistic transaction
// (WATCH, MULTI/EXEC), the way client-side libraries write a
// compare-and-set. A request at t is allowed when TAT <= t, and then TAT =
// max(TAT, t) + W/N; a change of N or W keeps TAT as an instant. Like
// most libraries it takes any limit and window from 1 and 1ms, above
// rlconform's range too. It once failed robust/invalid-config, whose
// check assumed that a fresh user gets N requests at once.
type Pacer struct {
	store Store
	clock fakeclock.Clock
	*settings
}

// NewPacer returns a pacer on s; with no clock it reads the machine's.
func NewPacer(s Store) (*Pacer, error) {
	st, err := newSettings(s)
	if err != nil {
		return nil, err
	}
	return &Pacer{store: s, clock: clientClock(s), settings: st}, nil
}

func (p *Pacer) key(user string) string { return p.store.Prefix + user }

// decide reads user's TAT at now and, when record is set and the request
// is allowed, writes the next one, all in one transaction.
func (p *Pacer) decide(ctx context.Context, op, user string, record bool) (bool, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return false, fmt.Errorf("%s: %w", op, err)
	}
	key := p.key(user)
	for range pacerAttempts {
		var allowed bool
		err := p.store.Redis.Watch(ctx, func(tx *redis.Tx) error {
			cfg := p.cfg.Load()
			now := big.NewRat(p.clock.Now().UnixMilli(), 1)
			tat, err := readTAT(ctx, tx, key)
			if err != nil {
				return err
			}
			allowed = tat == nil || tat.Cmp(now) <= 0
			if !allowed || !record {
				return nil
			}
			next := new(big.Rat).Add(now, big.NewRat(cfg.w, cfg.n))
			// The state matters until TAT, and for one window more: a
			// slack for clocks of several instances.
			life := ceilMs(new(big.Rat).Sub(next, now)) + cfg.w
			_, err = tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
				pipe.Set(ctx, key, next.RatString(), time.Duration(min(life, maxTTLms))*time.Millisecond)
				return nil
			})
			return err
		}, key)
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		if err != nil {
			return false, storeErr(ctx, op, err)
		}
		return allowed, nil
	}
	return false, fmt.Errorf("%s: %w: %d transactions on %q failed, each to a concurrent write", op, contract.ErrStore, pacerAttempts, key)
}

// maxTTLms bounds a TTL so that time.Duration holds it (292 years): a
// state of a longer life is kept that long, which no spec outlives.
const maxTTLms = int64(time.Duration(1<<63-1) / time.Millisecond)

func readTAT(ctx context.Context, tx *redis.Tx, key string) (*big.Rat, error) {
	s, err := tx.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	tat, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("the TAT %q at %q is not a fraction", s, key)
	}
	return tat, nil
}

// ceilMs is r rounded up to a whole number (of milliseconds).
func ceilMs(r *big.Rat) int64 {
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

// AllowRequest implements [contract.RateLimiterContract].
func (p *Pacer) AllowRequest(ctx context.Context, user string) (bool, error) {
	return p.decide(ctx, "AllowRequest", user, true)
}

// GetRemainingRequests implements [contract.RateLimiterContract]: 1 when a
// request would be allowed now, else 0.
func (p *Pacer) GetRemainingRequests(ctx context.Context, user string) (int, error) {
	ok, err := p.decide(ctx, "GetRemainingRequests", user, false)
	if ok {
		return 1, err
	}
	return 0, err
}

// Reset implements [contract.RateLimiterContract].
func (p *Pacer) Reset(ctx context.Context, user string) error {
	if err := contract.ValidateUserID(user); err != nil {
		return fmt.Errorf("Reset: %w", err)
	}
	if err := p.store.Redis.Del(ctx, p.key(user)).Err(); err != nil {
		return storeErr(ctx, "Reset", err)
	}
	return nil
}

// Configure implements [contract.RateLimiterContract].
func (p *Pacer) Configure(ctx context.Context, n int, w time.Duration) error {
	return p.configure(ctx, n, w)
}
