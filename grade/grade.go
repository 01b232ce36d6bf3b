// Package grade holds what a grading run is given and lists: the target
// (a name, its capabilities, a factory of instances), the environment each
// instance is made in, the run's configuration, and a spec's description.
// Package suite names them too (suite.Target is grade.Target), and is
// where they are used; the engine under it takes them as they are.
package grade

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/result"
)

// Config tunes a run. The zero value runs every spec with the defaults.
type Config struct {
	// Redis is the store given to targets that need one. When nil, the run
	// obtains one as redisenv.Obtain does, and closes it at the end.
	Redis *redisenv.Redis
	// Level is the highest level to run (default All: every spec).
	Level result.Level
	// IDs, when not empty, selects specs by id, or by a prefix ending in "/".
	// An id or prefix that names no spec is an error.
	IDs []string
	// Labels, when not empty, selects specs that carry any of these labels
	// (a level, or needs-<capability>).
	Labels []string
	// ExpectFail lists specs the target knowingly fails: their failures do
	// not fail the run, and their passing does (the list is out of date).
	ExpectFail []string
	// StorePrefix, when set, is the prefix under which a target writes in
	// Redis (a remote target's own); every spec inspects keys under it, and
	// the suite never writes or deletes there.
	StorePrefix string
	// Seed makes randomised specs reproducible; 0 picks one, shown in the report.
	Seed uint64
	// Limit and Window are the configuration specs start with (default 5
	// per minute). With a fake clock the window is long in real terms on
	// purpose: Redis TTLs run on real time and must not expire mid-spec.
	Limit  int
	Window time.Duration
	// RealTimeWindow is the window of the real-time specs, which grade
	// expiry on targets without clock control by waiting (default 1s,
	// raised when the target's round trips are too slow for it). Left at
	// 0 it may also be shorter: ten of the margins the first real-time
	// spec measures, rounded up to a tenth of a second, for a target that
	// declares millisecond windows (Capabilities.WindowGranularity 1ms)
	// and takes Configure; the report's notes say so.
	RealTimeWindow time.Duration
	// SpecTimeout bounds each spec (default 60s): a hanging target fails
	// the spec instead of hanging the run.
	SpecTimeout time.Duration
	// Parallel bounds how many specs run side by side (0: what the target
	// can take; 1: one at a time), in real time with a limit per user.
	// A target without Configure (an endpoint, an RLS server) runs specs
	// side by side, sharing its pacing (MaxRPS); a target with Configure
	// only as many as its Lanes, each spec on its lane's instances, since
	// each spec configures the target as it starts and a limiter may
	// forget its users when configured. Results are in catalogue order.
	Parallel int
	// StoreTimeout is how long a call may take while the target's store is
	// stopped or frozen (default 1s): robust/store-outage gives each call
	// of an in-process target a context with this deadline, and fails a
	// call that has not answered within it, the slowest round trip and a
	// grace (half of it, at least 500ms). The Redis client Env.Redis of
	// that spec has dial, read and write timeouts of half of it.
	StoreTimeout time.Duration
	// ReportDir receives artefacts of failures (linearizability
	// visualisations); default the system's temp directory.
	ReportDir string
	// Profile is the algorithm the target is graded against, with its
	// parameters, as Algorithms.Parse reads it: NAME[:key=value,...],
	// e.g. "fixed-window:align=first-hit,count-denied=true" (default
	// "sliding-log", the contract's exact log). docs/profiles.md gives
	// each profile's rules.
	Profile string
	// Algorithms are the algorithms Profile may name; nil means
	// model.Builtin(). To grade a limiter against an algorithm rlconform
	// does not ship, register its model.Algorithm in a set of your own.
	Algorithms *model.Algorithms
	// FailFast stops the run at the first spec that fails (one not in
	// ExpectFail): the specs not begun are not run, those running beside
	// it finish, and Report.StoppedAt names it. The verdict is then the
	// failures found, never a pass.
	FailFast bool
	// Progress, when set, is called after each spec.
	Progress func(result.Result)
	// Prior is an identification of the same target (Identify's, or
	// rlconform identify's JSON read back) whose passing probes of the
	// catalogue the run takes instead of grading them again: each where
	// it was graded as the run grades it (the target's name, the mode,
	// the profile, and the limit and window in force). A spec taken says
	// so in its message, and the report's notes count them. Give only an
	// identification of the limiter as it is now: a pass is not graded
	// again.
	Prior *result.Identification
}

// Variant is the profile graded: Profile, parsed against Algorithms.
func (c Config) Variant() (model.Variant, error) {
	set := c.Algorithms
	if set == nil {
		set = model.Builtin()
	}
	return set.Parse(c.Profile)
}

// Target is a limiter to grade: a name, the capabilities it declares, and a
// factory for fresh instances.
type Target struct {
	// Name appears in reports.
	Name string
	// Addresses are where the target is reached (the URLs of a remote
	// target's instances), for reports; empty for an in-process target.
	Addresses []string
	// Capabilities are what the target supports; specs needing anything
	// else are skipped, with the reason in the report.
	Capabilities contract.Capabilities
	// NeedsRedis tells the suite to provide Env.Redis (obtaining one as
	// redisenv.Obtain does when Config.Redis is nil); so does the
	// StoreInspection capability. The store-outage spec stops and freezes
	// the Redis of a target that needs one when the run started it (a
	// redis-server of its own); else only through StoreFault.
	NeedsRedis bool
	// StoreFault, when not nil, puts a fault on the store the target uses,
	// or takes it away: robust/store-outage calls it with StoreStop, then
	// StoreResume, then StoreFreeze, then StoreResume. It returns once the
	// fault is in force (after StoreResume: once the store answers again),
	// or an error, which ends the spec as a fault of the grader's, never a
	// verdict. rlconform run --store-fault CMD runs "CMD stop" and so on.
	StoreFault func(ctx context.Context, fault StoreFault) error
	// New makes one instance of the limiter for a spec. The suite calls it
	// once per spec, and again for each further instance a spec wants; all
	// calls of one spec get the same Env, so their instances share one store
	// and must enforce one limit. Close, when not nil, is called when the
	// spec ends.
	New func(ctx context.Context, env Env) (lim contract.RateLimiterContract, close func() error, err error)
	// KeyOf, when not nil, is the Redis key the target keeps userID's state
	// under, for a key prefix: the suite then cleans up and inspects keys
	// by name instead of scanning a Redis it did not start (SCAN MATCH
	// walks every key of the database).
	KeyOf func(prefix, userID string) string
	// Alive, when not nil, tells whether the target still answers. The run
	// asks it after a spec fails and stops with an error if it does not, so
	// that a target gone dead ends the run in seconds, not one timeout per
	// spec.
	Alive func(ctx context.Context) error
	// Request, for a black-box HTTP endpoint, sends one request as user to
	// instance i and returns the answer with its rate-limit fields; the
	// http/ specs grade those fields. Nil for any other target. A target
	// with Request receives identities the grader generates, so the specs
	// of opaque user ids do not grade it.
	Request func(ctx context.Context, instance int, user string) (HTTPAnswer, error)
	// StoreFailing, when not nil, says whether the target said, between
	// from and to, that an answer was its store-failure policy's (its
	// store failed: protocol v1's "store_failure" in an allow answer, an
	// endpoint's X-Rlc-Store-Failure header), and how: "" when it did not.
	// A spec that ran then is inconclusive, never a verdict
	// (result.KindStoreFailed).
	StoreFailing func(from, to time.Time) string
	// MaxRPS, for an endpoint, is the most requests the grader may send it
	// in any one second (0: no bound); the http/ specs fit their phases in
	// it.
	MaxRPS int
	// SharedLimit: every request shares one limit, whatever its user (an
	// endpoint graded with --identity none). Specs that need several users
	// are skipped, and each spec first waits until what the ones before it
	// left has expired.
	SharedLimit bool
	// Lanes, for a target with Configure, is how many specs may run side
	// by side in real time, each in a lane of its own: New, given
	// Env.Lane, makes instances that no spec of another lane configures
	// or sees configured (rlconform run --exec starts a set of processes
	// per lane, each under a key prefix of its own). An in-process
	// factory whose limiters keep their configuration in themselves, not
	// in a store they share, may set it to MaxParallel. 0 or 1: the specs
	// of a target with Configure run one at a time.
	Lanes int
}

// StoreFault is a fault put on a target's store, or its end.
type StoreFault string

// The faults.
const (
	// StoreStop stops the store: connections to it are refused.
	StoreStop StoreFault = "stop"
	// StoreFreeze freezes it (SIGSTOP, docker pause): connections to it
	// open, and hang.
	StoreFreeze StoreFault = "freeze"
	// StoreResume ends either: the store answers again, with what it held
	// (a store stopped without persistence comes back empty).
	StoreResume StoreFault = "resume"
)

// HTTPAnswer is what an endpoint answered one request: the decision, when
// it was sent and received, and what its fields said of the limit (nil:
// not sent).
type HTTPAnswer struct {
	Allowed        bool
	Sent, Returned time.Time
	// RetryAfter is Retry-After's delay.
	RetryAfter *time.Duration
	// Remaining (r) and Reset (t: the delay until more quota), from the
	// RateLimit fields in the form Form: "draft" (RateLimit), "draft-6"
	// (RateLimit-Remaining/-Reset) or "x" (X-RateLimit-*).
	Remaining *int
	Reset     *time.Duration
	Form      string
	// ResetAt is the instant the reset field named, when it named one
	// (an epoch timestamp): a client waits until then, and Reset is only
	// its distance from Returned in whole seconds.
	ResetAt *time.Time
	// PolicyLimit and PolicyWindow are RateLimit-Policy's q and w (the
	// limit alone from a -Limit field).
	PolicyLimit  *int
	PolicyWindow *time.Duration
	// Malformed lists the fields present but unreadable.
	Malformed []string
}

// Env is what a target's factory gets for one spec.
type Env struct {
	// Redis is a go-redis client of the store the suite provisioned (nil
	// unless Target.NeedsRedis or the StoreInspection capability).
	Redis redis.UniversalClient
	// RedisURL reaches the same store for a limiter built on another client
	// (rueidis, redigo, a subprocess): redis://[user:password@]host:port[/db],
	// or a comma-separated list of nodes for a cluster. It may hold
	// credentials: do not log it.
	RedisURL string
	// Clock is "now" for the limiter: read it with Clock.Now() at every
	// decision, never time.Now(). It is a fake clock that the spec moves
	// (when the target declares the Clock capability), or the real clock for
	// specs that run in real time.
	Clock fakeclock.Clock
	// KeyPrefix is unique to the spec; a target with the StoreInspection
	// capability writes every key under it.
	KeyPrefix string
	// Instance is which instance of the spec is being made: 0 for the first.
	Instance int
	// Lane is the lane the spec runs in (Target.Lanes): 0 unless specs of
	// a target with lanes run side by side.
	Lane int
	// MaxRequests and Window are the configuration to start with.
	MaxRequests int
	Window      time.Duration
}

// SpecInfo describes a spec for listings.
type SpecInfo struct {
	ID    string
	Level result.Level
	Rule  string
	Needs []string
	// NotGraded, when set, says why a profile's listing does not grade the
	// spec (ProfileSpecs); a run reports it skipped with this reason.
	NotGraded string `json:",omitempty"`
	// NotGradedInRealTime says why the spec is not graded without clock
	// control under the profile.
	NotGradedInRealTime string `json:",omitempty"`
}

// MaxParallel bounds Config.Parallel.
const MaxParallel = 64
