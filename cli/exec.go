package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/targets"
)

// execFlags start the limiter service for the run: --exec and its
// companions, shared by run, bench and identify.
type execFlags struct {
	command   string
	instances int
	ready     time.Duration
}

func (f *execFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.command, "exec", "", "start the limiter service with `CMD` (sh -c), on a Redis of the run's own: PORT, RLCONFORM_REDIS_URL and RLCONFORM_KEY_PREFIX are in its environment; it must serve protocol v1 on 127.0.0.1:$PORT. The run stops it on every exit, and grades what a remote --target cannot have graded (robust/store-outage, key hygiene)")
	fs.IntVar(&f.instances, "instances", 1, "with --exec: how many processes of CMD to start, sharing the Redis (2 or more grades the shared-store specs)")
	fs.DurationVar(&f.ready, "exec-ready", 30*time.Second, "with --exec: how long each process may take to answer GET /rlc/v1/capabilities")
}

// check reports flags that do not go together; set holds the flags given.
func (f *execFlags) check(set map[string]bool, targets, endpoints int) error {
	switch {
	case f.command == "" && (set["instances"] || set["exec-ready"]):
		return errors.New("--instances and --exec-ready go with --exec")
	case f.command == "":
		return nil
	case targets > 0 || endpoints > 0:
		return errors.New("--exec starts the target: it does not go with --target or --endpoint")
	case f.instances < 1:
		return errors.New("--instances must be at least 1")
	case f.ready <= 0:
		return errors.New("--exec-ready must be positive")
	}
	return nil
}

// execed is a limiter service that a run started, with its Redis: the
// processes of lane 0, and of the further lanes started for specs side by
// side (addLanes).
type execed struct {
	redis  *redisenv.Redis
	prefix string
	opts   targets.ExecOptions
	procs  *targets.Processes
	lanes  []*targets.Processes // lanes 1, 2, …
}

// maxExecLanes bounds the lanes of processes --exec starts for specs side
// by side (--parallel, up to suite.MaxParallel, asks for them): each is
// --instances processes more.
const maxExecLanes = 16

// defaultExecLanes are the lanes --exec starts without --parallel.
const defaultExecLanes = 4

// start starts a Redis of the run's own (a redis-server it may stop, so
// that robust/store-outage is graded; any Redis otherwise, with a note)
// and the processes, and says so on stderr.
func (f *execFlags) start(ctx context.Context, stderr io.Writer) (*execed, error) {
	red, err := redisenv.Start(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform: --exec: no redis-server to start (%v): using any Redis, and robust/store-outage will be skipped\n", err)
		if red, err = redisenv.Obtain(ctx); err != nil {
			return nil, fmt.Errorf("--exec: a Redis for the service: %w", err)
		}
	}
	// 8 random bytes: runs that share a Redis (CI jobs) never share keys.
	id := make([]byte, 8)
	rand.Read(id)
	prefix := "rlc-exec-" + hex.EncodeToString(id) + ":"
	opts := targets.ExecOptions{Command: f.command, Instances: f.instances, RedisURL: red.URL, KeyPrefix: prefix, Ready: f.ready}
	procs, err := targets.Exec(ctx, opts)
	if err != nil {
		red.Close()
		if strings.HasPrefix(err.Error(), "exec: ") {
			return nil, fmt.Errorf("--%w", err) // --exec: instance 2 (…): …
		}
		return nil, fmt.Errorf("--exec: %w", err)
	}
	fmt.Fprintf(stderr, "rlconform: started %d instance(s) of %q at %v, on %s under %q\n", f.instances, f.command, procs.URLs, redisenv.Redact(red.URL), prefix)
	return &execed{redis: red, prefix: prefix, opts: opts, procs: procs}, nil
}

// addLanes starts, all at once, lanes-1 more sets of the processes, each
// a lane of its own under a key prefix of its own (targets.LanePrefix),
// so that specs run side by side each configuring only its lane's. A lane
// that does not start is stopped and said on stderr: the run goes on
// with those that did. It returns how many lanes there are, and what the
// report's notes should say of lanes that did not start.
func (e *execed) addLanes(ctx context.Context, lanes int, stderr io.Writer) (int, []string) {
	started, errs := targets.ExecLanes(ctx, e.opts, lanes)
	var notes []string
	for lane := 1; lane < lanes; lane++ {
		if errs[lane] != nil {
			why := fmt.Sprintf("--exec: lane %d, for specs side by side, did not start (%v): the specs went on with the lanes that did (--parallel 1 starts none)", lane, errs[lane])
			fmt.Fprintln(stderr, "rlconform: "+why)
			notes = append(notes, why)
			continue
		}
		e.lanes = append(e.lanes, started[lane])
	}
	if len(e.lanes) > 0 {
		var urls []string
		for _, p := range e.lanes {
			urls = append(urls, p.URLs...)
		}
		fmt.Fprintf(stderr, "rlconform: started %d more lane(s) of %d instance(s) each at %v, for specs side by side, each under a key prefix of its own (%q, …)\n",
			len(e.lanes), e.opts.Instances, urls, targets.LanePrefix(e.prefix, 1))
	}
	return 1 + len(e.lanes), notes
}

// urls are the base URLs of the processes started, lane by lane.
func (e *execed) urls() []string {
	urls := slices.Clone(e.procs.URLs)
	for _, p := range e.lanes {
		urls = append(urls, p.URLs...)
	}
	return urls
}

// stop stops the processes, then their Redis.
func (e *execed) stop() error {
	errs := []error{e.procs.Stop()}
	for _, p := range e.lanes {
		errs = append(errs, p.Stop())
	}
	return errors.Join(append(errs, e.redis.Close())...)
}
