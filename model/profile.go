package model

import (
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rlconform/rlconform/contract"
)

// Profile is the executable model of one rate-limiting algorithm, with the
// four operations of [contract.RateLimiterContract] as pure functions of
// time: the exact sliding log of the contract ([slidingLog]) or one of the other
// honest designs (fixed windows, the two-window weighted counter, GCRA,
// token buckets). rlconform grades a limiter against the profile it claims,
// and replays failing histories on the others to name what it sees.
//
// Every profile shares these rules: time is integer milliseconds; users are
// isolated; GetRemainingRequests is how many AllowRequest calls at this
// instant would be allowed, one after the other; Reset forgets the user;
// Configure applies to every later decision (invalid values are an error
// and change nothing). The rules of each are in docs/profiles.md.
//
// A Profile is not safe for concurrent use.
type Profile interface {
	// Describe says what the profile is with its configuration, e.g. "a
	// fixed window of 1s aligned to the epoch, not counting denied requests".
	Describe() string
	// Limit is the limit N in force; Window the window W.
	Limit() int
	Window() time.Duration
	// Allow decides a request of user at now.
	Allow(now time.Time, user string) (bool, error)
	// Remaining is how many requests of user at now would be allowed.
	Remaining(now time.Time, user string) (int, error)
	// RetryAfter is how long from now until a request of user may be
	// allowed: 0 when one would be now.
	RetryAfter(now time.Time, user string) time.Duration
	// Reset forgets user.
	Reset(user string) error
	// Configure sets N and W for every later decision.
	Configure(now time.Time, maxRequests int, window time.Duration) error
	// Lifetime is how long from now user's state still matters: from then
	// on the user answers as a fresh one would, so a store may forget it.
	Lifetime(now time.Time, user string) time.Duration
}

// Weighted is a profile that decides requests of a cost n
// ([contract.CostLimiter]): every built-in algorithm's model is one, and
// its [Algorithm.Cost] states the rule.
type Weighted interface {
	// AllowN decides a request of cost n >= 0 of user at now, all or
	// nothing: allowed, it counts n times; refused, it counts what the
	// profile says (nothing, unless it counts denied requests). Cost 0
	// consumes nothing; a cost that can never fit is refused. AllowN(now,
	// user, 1) is Allow(now, user). A negative n returns an error wrapping
	// [contract.ErrInvalidCost].
	AllowN(now time.Time, user string, n int) (bool, error)
}

// Replayable is what rlconform's oracles, linearizability models and
// diagnosis need of a profile beyond Profile, to fork it over the instants
// an answer may have had and to explain a failure: Variant.New returns
// one, and an [Algorithm]'s New makes one. Its methods serve the grader,
// not a limiter built on a profile.
type Replayable interface {
	Profile
	// Explain says what the profile holds of user at now, instants shown as
	// offsets from base, for a failure message.
	Explain(now, base time.Time, user string) string
	// Clone returns an independent copy.
	Clone() Profile
	// StateKey identifies user's state: profiles whose keys are equal
	// answer user alike from here on (equal keys need not be equal states
	// in memory, but a key never hides a difference).
	StateKey(user string) string
}

// Variant is an algorithm with a value for each of its parameters: what a
// profile names on the command line, NAME or NAME:key=value,key=value.
// Make one with [ParseVariant] or [Algorithms.Parse]; the zero Variant is
// the sliding log.
type Variant struct {
	Name   string
	Params map[string]string
	alg    *Algorithm
}

// The names of the built-in algorithms ([Builtin]).
const (
	ProfileSlidingLog     = "sliding-log"
	ProfileFixedWindow    = "fixed-window"
	ProfileSlidingCounter = "sliding-counter"
	ProfileGCRA           = "gcra"
	ProfileTokenBucket    = "token-bucket"
)

// ParamInfo describes one parameter of an algorithm.
type ParamInfo struct {
	Name    string
	Default string
	// Values are the allowed values; nil means a whole number >= 1, or
	// "limit" (follow N).
	Values []string
	Doc    string
}

// ParseVariant parses NAME or NAME:key=value,... ("" is the sliding log)
// against the built-in algorithms ([Builtin]), checking every parameter,
// and fills in the defaults.
func ParseVariant(s string) (Variant, error) { return Builtin().Parse(s) }

// MustVariant is ParseVariant for variants written in code; it panics on
// an error.
func MustVariant(s string) Variant {
	v, err := ParseVariant(s)
	if err != nil {
		panic(err)
	}
	return v
}

// Algorithm is the variant's algorithm: the one it was parsed against, or
// for a Variant written as a literal the built-in one of its name (nil
// when there is none).
func (v Variant) Algorithm() *Algorithm {
	if v.alg != nil {
		return v.alg
	}
	name := v.Name
	if name == "" {
		name = ProfileSlidingLog
	}
	return Builtin().Lookup(name)
}

// String is the variant with every parameter, in a stable order:
// "fixed-window:align=epoch,count-denied=false,query=read". The three
// parameters it leaves out at their defaults are reconfigure=any (every
// reading of a change: see [Algorithm.Readings]), cost=whole (weighted
// requests all or nothing: see [CostParam]) and renew=counted (see
// [RenewParam]), so that a variant is named as it was before they were
// added; a pinned reading, cost=debt and renew=any are shown.
func (v Variant) String() string {
	name := v.Name
	if name == "" {
		name = ProfileSlidingLog
	}
	keys := make([]string, 0, len(v.Params))
	for k, val := range v.Params {
		if (k != ReconfigureParam || val != ReadingAny) && (k != CostParam || val != CostWhole) && (k != RenewParam || val != RenewCounted) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return name
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + v.Params[k]
	}
	return name + ":" + strings.Join(keys, ",")
}

// Complete is v with a checked value for every parameter, the defaults
// filled in, parsed against its algorithm.
func (v Variant) Complete() (Variant, error) {
	alg := v.Algorithm()
	if alg == nil {
		return Variant{}, fmt.Errorf("unknown profile %q", v.Name)
	}
	set := &Algorithms{list: []*Algorithm{alg}}
	if v.Name == "" {
		return set.Parse(alg.Name)
	}
	return set.Parse(v.String())
}

// LimitChangeGraded reports whether the algorithm says how a user's state
// reads after the limit changes: it states one reading
// ([Algorithm.GradesLimitChange]: the sliding log keeps its entries and
// compares them with the new N), or names every honest reading
// ([Algorithm.Readings]), and a limiter must follow one of them. When
// neither, specs grade users whose history began under the limit in
// force.
func (v Variant) LimitChangeGraded() bool {
	alg := v.Algorithm()
	return alg != nil && (alg.GradesLimitChange || len(alg.Readings) > 1)
}

// Readings are the variants v is graded as after a change of
// configuration: one per reading of its algorithm when v's parameter
// "reconfigure" is "any" (the model's default reading first), else v.
func (v Variant) Readings() []Variant {
	full, err := v.Complete()
	if err != nil || full.Params[ReconfigureParam] != ReadingAny {
		return []Variant{v}
	}
	var out []Variant
	for _, r := range full.alg.Readings {
		p := maps.Clone(full.Params)
		p[ReconfigureParam] = r.Name
		out = append(out, Variant{Name: full.Name, Params: p, alg: full.alg})
	}
	return out
}

// Reading is the reading of a change of configuration v pins, "" for
// every reading (or an algorithm with one).
func (v Variant) Reading() string {
	if r := v.Params[ReconfigureParam]; r != ReadingAny {
		return r
	}
	return ""
}

// IsSlidingLog reports whether v is the contract's own sliding log.
func (v Variant) IsSlidingLog() bool { return v.Name == "" || v.Name == ProfileSlidingLog }

// Grid is the fixed grid of windows the variant's decisions follow, if
// any ([Algorithm.Grid]).
func (v Variant) Grid() (Grid, bool) {
	if alg := v.Algorithm(); alg != nil && alg.Grid != nil {
		return alg.Grid(v.Params)
	}
	return Grid{}, false
}

// Anchored reports whether a fresh user's decisions under v depend only
// on how far its instants lie from its first request ([Algorithm.Anchored]).
func (v Variant) Anchored() bool {
	if v.IsSlidingLog() {
		return true
	}
	alg := v.Algorithm()
	return alg != nil && alg.Anchored != nil && alg.Anchored(v.Params)
}

// QueryWrites reports whether the variant's query of what remains saves
// the user's state as a request does ([Algorithm.QueryWrites]).
func (v Variant) QueryWrites() bool {
	alg := v.Algorithm()
	return alg != nil && alg.QueryWrites != nil && alg.QueryWrites(v.Params)
}

// Envelope is what a limiter following v with limit n per window w may
// decide under load ([Algorithm.Envelope]).
func (v Variant) Envelope(n int64, w time.Duration) (Envelope, error) {
	full, err := v.Complete()
	if err != nil {
		return Envelope{}, err
	}
	if full.alg.Envelope == nil {
		return Envelope{}, fmt.Errorf("profile %s: its algorithm states no bounds under load", full)
	}
	return full.alg.Envelope(full.Params, n, w), nil
}

// Unseen is every model a fresh limiter of v may be in real time
// ([Algorithm.Unseen]): New's alone for most.
func (v Variant) Unseen(maxRequests int, window time.Duration) ([]Replayable, error) {
	if alg := v.Algorithm(); alg != nil && alg.Unseen != nil {
		full := v
		if v.alg == nil { // not parsed: its defaults filled in first
			var err error
			if full, err = v.Complete(); err != nil {
				return nil, err
			}
		}
		if err := contract.ValidateConfig(maxRequests, window); err != nil {
			return nil, err
		}
		if ps := alg.Unseen(full.Params, maxRequests, window); len(ps) > 0 {
			return ps, nil
		}
	}
	p, err := v.New(maxRequests, window)
	if err != nil {
		return nil, err
	}
	return []Replayable{p}, nil
}

// New returns the variant's model, empty, with a configuration.
func (v Variant) New(maxRequests int, window time.Duration) (Replayable, error) {
	if err := contract.ValidateConfig(maxRequests, window); err != nil {
		return nil, err
	}
	if v.alg != nil { // parsed: every parameter is there, checked
		return v.alg.New(v.Params, maxRequests, window), nil
	}
	if v.IsSlidingLog() {
		return newSlidingLog(maxRequests, window)
	}
	full, err := v.Complete()
	if err != nil {
		return nil, err
	}
	return full.alg.New(full.Params, maxRequests, window), nil
}

// goZeroMs is Go's zero time, 0001-01-01 UTC (time.Time{}), in Unix ms:
// the origin of the windows of align=go-zero, which time.Time.Truncate
// makes (it rounds down to a multiple of the window since the zero time).
// The grid is the epoch's exactly when W divides 62,135,596,800,000 ms
// (2^11 × 3^3 × 5^5 × 359,581): every window that divides two days does,
// a week, 30 days and 365 days do not.
const goZeroMs = -62_135_596_800_000

// gridOrigin is the origin of the fixed grid of windows that align names:
// Go's zero time for go-zero, the epoch for any other.
func gridOrigin(align string) int64 {
	if align == "go-zero" {
		return goZeroMs
	}
	return 0
}

// fixedParam is a whole-number parameter, 0 for "limit".
func fixedParam(v string) int {
	n, _ := strconv.Atoi(v)
	return n
}

// offset formats t as an offset from base, as failure messages do.
func offset(t, base time.Time) string {
	d := t.Sub(base).Milliseconds()
	if d < 0 {
		return fmt.Sprintf("%dms", d)
	}
	return fmt.Sprintf("+%dms", d)
}

func ms(d int64) time.Duration { return time.Duration(d) * time.Millisecond }

// floorDiv is a/b rounded toward minus infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
