// Package mutants holds deliberately broken rate limiters, one constructor
// each, whose doc names the rule it breaks and the spec that catches it.
// rlconform's own tests run the catalogue on every one of them and assert
// that the named spec fails: a check that cannot fail is a defect.
package mutants

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/internal/luaprelude"
	"github.com/rlconform/rlconform/model"
)

// Store is what a mutant is built on: the same things the suite gives a
// target for one spec. A nil Clock means the Redis server's time.
type Store struct {
	Redis       redis.UniversalClient
	Clock       fakeclock.Clock
	Prefix      string
	MaxRequests int
	Window      time.Duration
}

// Mutant is one entry of the self-test table.
type Mutant struct {
	// Name is how the command line and the tests call it.
	Name string
	// Breaks is the rule it breaks.
	Breaks string
	// CaughtBy are the specs meant to catch it; the self-test asserts that
	// each fails, with a wrong answer or a broken rule.
	CaughtBy []string
	// NeedsRedis is false for mutants that keep their state in memory.
	NeedsRedis bool
	// New makes one instance.
	New func(Store) (contract.RateLimiterContract, error)
	// Profile is the profile the mutant claims, as model.ParseVariant reads
	// it ("" is the sliding log): the self-test grades it against that
	// profile.
	Profile string
	// Weighted: the mutant implements contract.CostLimiter, and is graded
	// with Capabilities.Cost.
	Weighted bool
	// StoreFailure is the policy the mutant declares while its store fails
	// ("": error, the default): it is graded with
	// Capabilities.StoreFailure set to it.
	StoreFailure contract.StoreFailure
}

// All lists every mutant.
func All() []Mutant {
	return append([]Mutant{
		{Name: "fixed-window-epoch", Breaks: "windows are fixed and aligned to the epoch", CaughtBy: []string{"strict/boundary-burst-epoch"}, NeedsRedis: true, New: FixedWindowEpoch},
		{Name: "fixed-window-first", Breaks: "a fixed window opens at the user's first request", CaughtBy: []string{"strict/boundary-burst-first"}, NeedsRedis: true, New: FixedWindowFirstRequest},
		{Name: "two-window-approx", Breaks: "the two-window counter approximates the log", CaughtBy: []string{"strict/boundary-burst-epoch"}, NeedsRedis: true, New: TwoWindowApprox},
		{Name: "same-ms-collision", Breaks: "requests in one millisecond share one ZSET member", CaughtBy: []string{"strict/same-millisecond-burst"}, NeedsRedis: true, New: SameMillisecondCollision},
		{Name: "logs-denied", Breaks: "denied requests are logged and keep the user locked out", CaughtBy: []string{"strict/denied-not-logged"}, NeedsRedis: true, New: LogsDenied},
		{Name: "off-by-one", Breaks: "N+1 requests are allowed", CaughtBy: []string{"core/block-over-limit", "strict/differential"}, NeedsRedis: true, New: OffByOne},
		{Name: "under-admits", Breaks: "only N-1 requests are allowed", CaughtBy: []string{"core/allow-within-limit"}, NeedsRedis: true, New: UnderAdmits},
		{Name: "global-limit", Breaks: "every user shares one log", CaughtBy: []string{"core/multi-user"}, NeedsRedis: true, New: GlobalLimit},
		{Name: "inclusive-boundary", Breaks: "an entry still counts at exactly s+W", CaughtBy: []string{"strict/rolling-expiry"}, NeedsRedis: true, New: InclusiveBoundary},
		{Name: "reconfigure-ignored", Breaks: "users seen before keep the old configuration", CaughtBy: []string{"core/reconfigure", "strict/raised-limit"}, NeedsRedis: true, New: ReconfigureIgnored},
		{Name: "config-in-key", Breaks: "keys name the limit and the window: Configure starts every user on a new, empty log", CaughtBy: []string{"core/reconfigure", "strict/raised-limit", "strict/lowered-limit"}, NeedsRedis: true, New: ConfigInKey},
		{Name: "window-ignored", Breaks: "Configure validates the window, then ignores it", CaughtBy: []string{"core/reconfigure", "strict/config-range"}, NeedsRedis: true, New: WindowIgnored},
		{Name: "remaining-no-prune", Breaks: "GetRemainingRequests counts expired entries", CaughtBy: []string{"core/remaining"}, NeedsRedis: true, New: RemainingWithoutPruning},
		{Name: "remaining-truncated-start", Breaks: "GetRemainingRequests counts from the window's start truncated to whole seconds (int(now - W)): up to a second of older entries", CaughtBy: []string{"core/remaining"}, NeedsRedis: true, New: RemainingTruncatedStart},
		{Name: "remaining-no-clamp", Breaks: "GetRemainingRequests goes negative when the limit is lowered", CaughtBy: []string{"strict/lowered-limit"}, NeedsRedis: true, New: RemainingNotClamped},
		{Name: "per-instance", Breaks: "each instance keeps its own log: instances do not share one limit", CaughtBy: []string{"strict/shared-store", "strict/shared-store-concurrent"}, NeedsRedis: false, New: PerInstanceState},
		{Name: "window-unit-mixup", Breaks: "the window in seconds is used as milliseconds", CaughtBy: []string{"core/sliding-expiry"}, NeedsRedis: true, New: WindowUnitMixup},
		{Name: "clock-ignored", Breaks: "the limiter reads the server's clock, not the one it was given", CaughtBy: []string{"core/sliding-expiry"}, NeedsRedis: true, New: ClockIgnored},
		{Name: "non-atomic", Breaks: "count and add are separate round trips: concurrent requests pass the same check", CaughtBy: []string{"core/concurrent-4", "strict/linearizable"}, NeedsRedis: true, New: NonAtomic},
		{Name: "reset-pattern", Breaks: "Reset deletes every key matching the id as a prefix", CaughtBy: []string{"core/reset"}, NeedsRedis: true, New: ResetByPattern},
		{Name: "clock-clamped", Breaks: "a clock that stepped back is held at the newest entry: requests are logged later than they were made", CaughtBy: []string{"strict/clock-step-back"}, NeedsRedis: true, New: ClockClamped},
		{Name: "drops-future", Breaks: "entries later than now are lost when one is added", CaughtBy: []string{"strict/clock-step-back"}, NeedsRedis: true, New: DropsFuture},
		{Name: "capped-limit", Breaks: "the limit is silently cut to 1000", CaughtBy: []string{"strict/config-range"}, NeedsRedis: true, New: CappedLimit},
		{Name: "capped-window", Breaks: "the window is silently cut to one day", CaughtBy: []string{"strict/config-range"}, NeedsRedis: true, New: CappedWindow},
		{Name: "late-reset", Breaks: "a retried Reset lands late and wipes requests made after the first one returned", CaughtBy: []string{"strict/reset-race", "core/reset"}, NeedsRedis: true, New: LateReset},
		{Name: "case-folded", Breaks: "user ids are lower-cased", CaughtBy: []string{"robust/user-id-zoo"}, NeedsRedis: true, New: CaseFolded},
		{Name: "truncated-id", Breaks: "user ids are cut to 256 bytes", CaughtBy: []string{"robust/user-id-zoo"}, NeedsRedis: true, New: TruncatedID},
		{Name: "oversize-ignored", Breaks: "a limit or window above the bounds is taken without an error, and ignored", CaughtBy: []string{"robust/invalid-config"}, NeedsRedis: true, New: OversizeIgnored},
		{Name: "oversize-clamped", Breaks: "a limit above the bounds is taken and kept in 32 bits: cut to 2^31-1", CaughtBy: []string{"robust/invalid-config"}, NeedsRedis: true, New: OversizeClamped},
		{Name: "plain-errors", Breaks: "invalid input gets errors that wrap none of the contract's sentinels", CaughtBy: []string{"robust/invalid-config", "robust/empty-user-id"}, NeedsRedis: true, New: PlainErrors},
		{Name: "no-ttl", Breaks: "keys never expire", CaughtBy: []string{"robust/key-hygiene"}, NeedsRedis: true, New: NoTTL},
		{Name: "ttl-a-day", Breaks: "keys live a day whatever the window: idle users cost memory for hours", CaughtBy: []string{"robust/key-hygiene"}, NeedsRedis: true, New: TTLADay},
		{Name: "ttl-oldest-entry", Breaks: "the key's TTL runs until its oldest entry leaves, not its newest: later entries are lost with the key", CaughtBy: []string{"robust/key-hygiene"}, NeedsRedis: true, New: TTLOldestEntry},
		{Name: "hangs-when-down", Breaks: "retries forever, ignoring the context, while Redis is down", CaughtBy: []string{"robust/store-outage"}, NeedsRedis: true, New: HangsWhenDown},
		{Name: "allows-when-down", Breaks: "allows every request, silently, while Redis is down", CaughtBy: []string{"robust/store-outage"}, NeedsRedis: true, New: AllowsWhenDown},
		{Name: "fail-open-errors", Breaks: "declares that it fails open (store_failure allow), and returns errors while Redis is down", CaughtBy: []string{"robust/store-outage"}, NeedsRedis: true, New: FailOpenErrors, StoreFailure: contract.StoreFailureAllow},
		{Name: "deny-allows", Breaks: "declares that it fails closed (store_failure deny), and allows every request while Redis is down", CaughtBy: []string{"robust/store-outage"}, NeedsRedis: true, New: DenyAllows, StoreFailure: contract.StoreFailureDeny},
		{Name: "retries-past-deadline", Breaks: "retries a failed store call for 5s of its own, past the caller's deadline and the store timeout", CaughtBy: []string{"robust/store-outage"}, NeedsRedis: true, New: RetriesPastDeadline},
		{Name: "fallback-leaks", Breaks: "fails open on a local fallback counter whose counts still spend the quota once Redis is back", CaughtBy: []string{"robust/store-outage"}, NeedsRedis: true, New: FallbackLeaks, StoreFailure: contract.StoreFailureAllow},
		{Name: "ignores-context", Breaks: "store calls run on a context of their own: a cancelled caller is still decided", CaughtBy: []string{"robust/context-cancel"}, NeedsRedis: true, New: IgnoresContext},
		{Name: "list-pop-inclusive", Breaks: "the compact log pops only entries older than now-W: an entry still counts at exactly s+W", CaughtBy: []string{"strict/rolling-expiry"}, NeedsRedis: true, New: ListPopInclusive},
		{Name: "list-push-unordered", Breaks: "the compact log pushes every entry at its tail, even one earlier than the newest (a clock behind another instance's, a step back): the log loses its order, and the prune stops at a later entry with expired ones behind it",
			CaughtBy: []string{"strict/clock-step-back"}, NeedsRedis: true, New: ListPushUnordered},
		{Name: "list-trim-no-ttl", Breaks: "the compact log's trim rebuilds the LIST (DEL, RPUSH), dropping its TTL, which only an added entry sets again: a refused request leaves a key that never expires",
			CaughtBy: []string{"robust/key-hygiene"}, NeedsRedis: true, New: ListTrimNoTTL},
		{Name: "fw-expire-every-hit", Breaks: "the window's EXPIRE is set on every hit: a user who keeps sending is never let through again",
			CaughtBy: []string{"strict/denied-not-logged", "strict/boundary-burst-first"}, NeedsRedis: true, New: FixedWindowExpireEveryHit, Profile: fixedHitProfile},
		{Name: "fw-incr-expire-split", Breaks: "INCR and EXPIRE are separate round trips: a crash between them leaves a key without a TTL",
			CaughtBy: []string{"robust/key-hygiene"}, NeedsRedis: true, New: FixedWindowIncrExpireSplit, Profile: fixedHitProfile},
		{Name: "gcra-burst-off-by-one", Breaks: "GCRA admits while TAT-now <= B×T: a burst of B+1",
			CaughtBy: []string{"core/block-over-limit", "strict/differential"}, NeedsRedis: true, New: GCRABurstOffByOne, Profile: gcraProfile},
		{Name: "gcra-debt-whole", Breaks: "a GCRA graded as cost=debt decides a weighted request whole: a cost above what is left is refused, though one request would be allowed",
			CaughtBy: []string{"strict/cost-all-or-nothing", "strict/cost-never-fit"}, NeedsRedis: true, New: GCRADebtDecidedWhole, Profile: gcraDebtProfile, Weighted: true},
		{Name: "gcra-float-drift", Breaks: "GCRA in float64 seconds: decisions on the exact edge flip",
			CaughtBy: []string{"strict/config-range", "core/concurrent-4"}, NeedsRedis: true, New: GCRAFloatDrift, Profile: gcraProfile},
		{Name: "tb-refill-wrong-instant", Breaks: "the token bucket's last refill moves to now while only whole tokens are added: the fraction earned is lost",
			CaughtBy: []string{"core/sliding-expiry", "strict/differential"}, NeedsRedis: true, New: TokenBucketRefillWrongInstant, Profile: bucketProfile},
		{Name: "tb-over-capacity", Breaks: "refills are not capped at the capacity: idle users bank tokens",
			CaughtBy: []string{"strict/boundary-burst-first", "strict/differential"}, NeedsRedis: true, New: TokenBucketOverCapacity, Profile: bucketProfile},
		{Name: "sc-weight-wrong-window", Breaks: "the two-window counter weights the previous count by the part of the current window gone",
			CaughtBy: []string{"strict/boundary-burst-epoch", "strict/differential"}, NeedsRedis: true, New: SlidingCounterWrongWindow, Profile: counterProfile},
	}, append(reconfigureMutants(), costMutants()...)...)
}

// NotInRealTime lists the mutants that grading without clock control
// cannot be expected to catch, each with the reason; the self-test grades
// every other mutant without clock control too.
func NotInRealTime() map[string]string {
	return map[string]string{
		"inclusive-boundary":            "the 1ms between s+W-1 and s+W is far inside any round trip",
		"clock-ignored":                 "without clock control every limiter reads its own clock: there is no given clock to ignore",
		"clock-clamped":                 "the clock never steps back in real time",
		"drops-future":                  "the clock never steps back in real time",
		"list-pop-inclusive":            "the 1ms between s+W-1 and s+W is far inside any round trip",
		"list-push-unordered":           "on the server's TIME entries are pushed in time order: the clock never steps back in real time",
		"capped-window":                 "a window cut to a day shows only once a day has passed",
		"gcra-float-drift":              "whether the floats round across the edge depends on the instant's bits: on the server's clock the instants are not chosen, so the drift shows only on some runs",
		"cost-spread-scores":            "all but one of a request's n entries leave 1 to n-1ms before s+W (1 and 2ms for the spec's cost of 3): far inside any round trip",
		"tb-over-capacity":              "under -race (make test-full), after the store-outage mutants had stopped and frozen the shared Redis, it passed strict/boundary-burst-first in real time three tries in a row, in two runs (with windows of 1s, 4s and 9s in one), though caught alone every time; the cause is not found yet; graded on the fake clock",
		"tb-reconfigure-window-ignored": "as tb-over-capacity: after the store-outage mutants, make test-full saw it pass core/reconfigure in real time; graded on the fake clock",
		"fw-reconfigure-window-ignored": "a fixed window kept at the old length is told from the new one only by requests between the new window's edge and the old one's, epoch-aligned; on a loaded machine under -race (make test-full) they missed that span in 2 of 3 runs, though caught alone; graded on the fake clock",
	}
}

// Uncatchable lists the specs that no mutant of this package is failed by,
// each with the reason.
func Uncatchable() map[string]string {
	const http = "mutants are limiters; HTTP services that lie in their fields are failed by cli's TestEndpointModeFailsLyingServices and TestEndpointModeFailsPhaseDependentLies, RLS servers by TestRLSFailsLyingServers and TestRLSResponseHeadersToAdd"
	return map[string]string{
		"http/retry-after":      http,
		"http/ratelimit-fields": http,
	}
}

//go:embed zset.lua
var zsetBody string

var zsetScript = luaprelude.Script(zsetBody)

//go:embed list.lua
var listBody string

var listScript = luaprelude.Script(listBody)

//go:embed fixed.lua
var fixedBody string

var fixedScript = luaprelude.Script(fixedBody)

// scripted is a Redis limiter whose decisions come from one of the mutant
// scripts, with Go-side faults on top.
type scripted struct {
	store  Store
	script *redis.Script
	mode   string // zset: the faults; fixed: the kind
	cfg    atomic.Pointer[[2]int64]

	serverTime    bool                // ignore the clock: the script reads TIME
	secondsAsMs   bool                // the window's seconds are taken as ms
	perUserCfg    bool                // remember each user's first configuration
	foldCase      bool                // keys use the lower-cased id
	truncate      int                 // keys use the id's first bytes (0: all)
	resetPattern  bool                // Reset deletes every key matching prefix{id*
	nonAtomic     bool                // check and add in separate round trips
	nonAtomicCost bool                // the same, for weighted requests only
	onError       string              // "hang": retry forever; "allow": swallow and allow; "retry-5s": retry for 5s; "fallback": count in fallback, allow
	capLimit      int64               // the limit is cut to this (0: no cap)
	capWindow     int64               // the window (ms) is cut to this (0: no cap)
	keepWindow    bool                // Configure validates the window, then ignores it
	plainErrors   bool                // invalid input gets errors that wrap no sentinel
	dropOversize  bool                // Configure answers nil above the bounds and changes nothing
	clampLimit    bool                // Configure takes a limit above the bounds as 2^31-1
	ignoreCtx     bool                // store calls run on a context of their own
	globalKey     bool                // one key for every user
	configInKey   bool                // keys name the limit and the window: Configure starts new logs
	lateReset     map[string]int      // users whose Reset runs again after so many more decisions (guarded by mu)
	mu            sync.Mutex          // guards seenCfg and fallback
	seenCfg       map[string][2]int64 // perUserCfg: what each user got first
	fallback      map[string]int64    // onError "fallback": each user's requests allowed while the store failed
}

func newScripted(s Store, script *redis.Script, mode string) (*scripted, error) {
	if s.Redis == nil {
		return nil, fmt.Errorf("mutant needs Redis")
	}
	if err := contract.ValidateConfig(s.MaxRequests, s.Window); err != nil {
		return nil, err
	}
	l := &scripted{store: s, script: script, mode: mode, seenCfg: map[string][2]int64{}}
	l.cfg.Store(&[2]int64{int64(s.MaxRequests), s.Window.Milliseconds()})
	return l, nil
}

func (l *scripted) key(user string) string {
	if l.foldCase {
		user = strings.ToLower(user)
	}
	if l.truncate > 0 && len(user) > l.truncate {
		user = user[:l.truncate]
	}
	if l.globalKey {
		user = "all"
	}
	if l.configInKey {
		cfg := l.cfg.Load()
		return fmt.Sprintf("%s{%s}:%d:%d", l.store.Prefix, user, cfg[0], cfg[1])
	}
	return l.store.Prefix + "{" + user + "}"
}

func (l *scripted) config(user string) [2]int64 {
	cfg := *l.cfg.Load()
	if l.capLimit > 0 {
		cfg[0] = min(cfg[0], l.capLimit)
	}
	if l.capWindow > 0 {
		cfg[1] = min(cfg[1], l.capWindow)
	}
	if l.keepWindow {
		cfg[1] = l.store.Window.Milliseconds()
	}
	if l.secondsAsMs {
		cfg[1] = max(1, cfg[1]/1000)
	}
	if l.perUserCfg {
		l.mu.Lock()
		defer l.mu.Unlock()
		if seen, ok := l.seenCfg[user]; ok {
			return seen
		}
		l.seenCfg[user] = cfg
	}
	if l.fallback != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		cfg[0] = max(0, cfg[0]-l.fallback[user]) // the outage's requests still count
	}
	return cfg
}

// call runs the script for one operation: a decision (record) or a query
// of what remains. cost is a weighted request's cost, as the script reads
// it ("": a unit request).
func (l *scripted) call(ctx context.Context, user string, record bool, cost string) (allowed bool, remaining int, err error) {
	if err := l.validateUser(user); err != nil {
		return false, 0, err
	}
	if l.ignoreCtx {
		ctx = context.WithoutCancel(ctx)
	}
	cfg := l.config(user)
	now := ""
	if !l.serverTime && l.store.Clock != nil { // no clock: the server's TIME
		now = strconv.FormatInt(l.store.Clock.Now().UnixMilli(), 10)
	}
	rec := "0"
	if record {
		rec = "1"
	}
	if l.nonAtomic || (cost != "" && l.nonAtomicCost) {
		n := 1
		if cost != "" {
			if n, err = strconv.Atoi(cost); err != nil {
				return false, 0, fmt.Errorf("mutant: cost %q: %w", cost, err)
			}
		}
		return l.checkThenAdd(ctx, user, cfg, record, n)
	}
	args := []any{now, cfg[1], cfg[0], rec, l.mode}
	if cost != "" {
		args = append(args, cost)
	}
	budget := time.Now().Add(5 * time.Second) // onError "retry-5s"
	for {
		res, err := l.script.Run(ctx, l.store.Redis, []string{l.key(user)}, args...).Int64Slice()
		switch {
		case err == nil:
			return res[0] == 1, int(res[1]), nil
		case l.onError == "allow":
			return true, 0, nil
		case l.onError == "fallback" && record:
			l.mu.Lock()
			l.fallback[user]++
			l.mu.Unlock()
			return true, 0, nil
		case l.onError == "hang":
			ctx = context.Background() // "the caller gave up too early": retry until Redis answers
			continue
		case l.onError == "retry-5s" && time.Now().Before(budget):
			ctx = context.Background() // a retry budget of its own, not the caller's
			time.Sleep(50 * time.Millisecond)
			continue
		}
		return false, 0, fmt.Errorf("%w: %w", contract.ErrStore, err)
	}
}

func (l *scripted) AllowRequest(ctx context.Context, user string) (bool, error) {
	ok, _, err := l.call(ctx, user, true, "")
	if err == nil && l.lateReset != nil {
		l.mu.Lock()
		left, pending := l.lateReset[user]
		if pending {
			l.lateReset[user] = left - 1
			if left <= 1 {
				delete(l.lateReset, user)
			}
		}
		l.mu.Unlock()
		if pending && left <= 1 {
			l.store.Redis.Del(ctx, l.key(user)) // the retried Reset lands late
		}
	}
	return ok, err
}

func (l *scripted) GetRemainingRequests(ctx context.Context, user string) (int, error) {
	_, n, err := l.call(ctx, user, false, "")
	return n, err
}

func (l *scripted) validateUser(user string) error {
	err := contract.ValidateUserID(user)
	if err != nil && l.plainErrors {
		return errors.New("bad user")
	}
	return err
}

func (l *scripted) Reset(ctx context.Context, user string) error {
	if err := l.validateUser(user); err != nil {
		return err
	}
	if l.lateReset != nil {
		l.mu.Lock()
		l.lateReset[user] = int(l.cfg.Load()[0])
		l.mu.Unlock()
	}
	if l.resetPattern {
		iter := l.store.Redis.Scan(ctx, 0, l.store.Prefix+"{"+user+"*", 100).Iterator()
		for iter.Next(ctx) {
			l.store.Redis.Del(ctx, iter.Val())
		}
		return iter.Err()
	}
	if l.script == fixedScript {
		// Fixed-window keys carry a window number after the user's key.
		iter := l.store.Redis.Scan(ctx, 0, l.key(user)+"*", 100).Iterator()
		for iter.Next(ctx) {
			if k := iter.Val(); k == l.key(user) || k[len(l.key(user))] == ':' {
				l.store.Redis.Del(ctx, k)
			}
		}
		return iter.Err()
	}
	return l.store.Redis.Del(ctx, l.key(user)).Err()
}

func (l *scripted) Configure(_ context.Context, n int, w time.Duration) error {
	if l.dropOversize && (n > contract.MaxLimit || w > contract.MaxWindow) {
		return nil
	}
	if l.clampLimit && n > contract.MaxLimit {
		n = math.MaxInt32
	}
	if err := contract.ValidateConfig(n, w); err != nil {
		if l.plainErrors {
			return errors.New("bad configuration")
		}
		return err
	}
	l.cfg.Store(&[2]int64{int64(n), w.Milliseconds()})
	return nil
}

func zset(s Store, faults string) (contract.RateLimiterContract, error) {
	return newScripted(s, zsetScript, faults)
}

// ListPopInclusive is the compact log (reference.NewCompact) whose prune
// pops only the entries older than now-W, so an entry at s still counts at
// exactly s+W. Caught by strict/rolling-expiry.
func ListPopInclusive(s Store) (contract.RateLimiterContract, error) {
	return newScripted(s, listScript, "list-pop-inclusive")
}

// ListPushUnordered is the compact log that pushes every allowed request
// at the LIST's tail, even one made earlier than the newest entry (an
// instance whose clock is behind another's, a clock that stepped back): the
// log loses its time order, and the prune, which stops at the first entry
// that still counts, leaves expired entries behind it counting. Caught by
// strict/clock-step-back.
func ListPushUnordered(s Store) (contract.RateLimiterContract, error) {
	return newScripted(s, listScript, "list-push-unordered")
}

// ListTrimNoTTL is the compact log whose trim rebuilds the LIST from the
// entries that still count (DEL, then RPUSH), which drops the key's TTL;
// only an allowed request sets it again, so a refused one leaves a key that
// never expires. Caught by robust/key-hygiene.
func ListTrimNoTTL(s Store) (contract.RateLimiterContract, error) {
	return newScripted(s, listScript, "list-trim-no-ttl")
}

// FixedWindowEpoch counts requests in fixed windows [kW, (k+1)W) aligned to
// the epoch: N at the end of one window and N at the start of the next get
// 2N through in a few milliseconds. Caught by strict/boundary-burst-epoch.
func FixedWindowEpoch(s Store) (contract.RateLimiterContract, error) {
	return newScripted(s, fixedScript, "epoch")
}

// FixedWindowFirstRequest opens a fixed window of W at a user's first
// request and starts a new one at the first request after it ends: a burst
// at the end of one and the start of the next gets 2N through. Caught by
// strict/boundary-burst-first.
func FixedWindowFirstRequest(s Store) (contract.RateLimiterContract, error) {
	return newScripted(s, fixedScript, "first")
}

// TwoWindowApprox estimates the log with two epoch-aligned counters,
// weighting the previous one by how much of it still overlaps the window:
// it admits more than N when the previous window's requests came late.
// Caught by strict/boundary-burst-epoch.
func TwoWindowApprox(s Store) (contract.RateLimiterContract, error) {
	return newScripted(s, fixedScript, "approx")
}

// SameMillisecondCollision uses the timestamp alone as the ZSET member, so
// requests in one millisecond collapse into one entry and all pass. Caught
// by strict/same-millisecond-burst.
func SameMillisecondCollision(s Store) (contract.RateLimiterContract, error) {
	return zset(s, "same-ms-collision")
}

// LogsDenied adds every request to the log, denied or not, so a user who
// keeps trying while denied stays locked out. Caught by
// strict/denied-not-logged.
func LogsDenied(s Store) (contract.RateLimiterContract, error) {
	return zset(s, "log-denied")
}

// OffByOne compares count <= N instead of count < N and admits N+1. Caught by
// core/block-over-limit.
func OffByOne(s Store) (contract.RateLimiterContract, error) {
	return zset(s, "off-by-one")
}

// InclusiveBoundary prunes with an exclusive bound, so an entry at s still
// counts at exactly s+W. Caught by strict/rolling-expiry.
func InclusiveBoundary(s Store) (contract.RateLimiterContract, error) {
	return zset(s, "inclusive-boundary")
}

// RemainingWithoutPruning answers GetRemainingRequests from the raw ZSET
// size, counting entries that have expired. Caught by core/remaining.
func RemainingWithoutPruning(s Store) (contract.RateLimiterContract, error) {
	return zset(s, "remaining-no-prune")
}

// RemainingTruncatedStart decides exactly, but answers GetRemainingRequests
// by counting the entries from the window's start truncated to whole
// seconds, as a moving window that computes int(now - W) does (the Python
// limits library's moving window, for one): up to a second of entries that
// no longer count lower it. Caught by core/remaining, and named.
func RemainingTruncatedStart(s Store) (contract.RateLimiterContract, error) {
	return zset(s, "remaining-truncated-start")
}

// RemainingNotClamped answers N - count without clamping, so after the limit
// is lowered below a user's active entries it reports a negative number.
// Caught by strict/lowered-limit.
func RemainingNotClamped(s Store) (contract.RateLimiterContract, error) {
	return zset(s, "remaining-no-clamp")
}

// ReconfigureIgnored remembers the configuration in force when it first saw
// a user and keeps applying it to that user. Caught by core/reconfigure.
func ReconfigureIgnored(s Store) (contract.RateLimiterContract, error) {
	l, err := newScripted(s, zsetScript, "")
	if err != nil {
		return nil, err
	}
	l.perUserCfg = true
	return l, nil
}

// ConfigInKey is an exact log whose keys name the limit and the window, as
// libraries that key a user's log by its policy do: after Configure every
// user starts a new, empty log, so a raised limit lets a full window's
// worth through again. In steady state it is the sliding log (identify
// says so, and reports Configure apart). Caught by strict/raised-limit.
func ConfigInKey(s Store) (contract.RateLimiterContract, error) {
	l, err := newScripted(s, zsetScript, "")
	if err != nil {
		return nil, err
	}
	l.configInKey = true
	return l, nil
}

// WindowUnitMixup takes the window's length in seconds as milliseconds: a
// one-minute window lasts 60ms. Caught by core/sliding-expiry.
func WindowUnitMixup(s Store) (contract.RateLimiterContract, error) {
	l, err := newScripted(s, zsetScript, "")
	if err != nil {
		return nil, err
	}
	l.secondsAsMs = true
	return l, nil
}

// ClockIgnored reads the Redis server's clock instead of the one it was
// given, so time it is told has passed never passes. Caught by
// core/sliding-expiry.
func ClockIgnored(s Store) (contract.RateLimiterContract, error) {
	l, err := newScripted(s, zsetScript, "")
	if err != nil {
		return nil, err
	}
	l.serverTime = true
	return l, nil
}

// PerInstanceState is a correct sliding-window log kept in each instance's
// memory: fine alone, but two instances behind a load balancer allow 2N.
// Caught by strict/shared-store.
func PerInstanceState(s Store) (contract.RateLimiterContract, error) {
	return model.NewLimiter(s.Clock, s.MaxRequests, s.Window)
}
