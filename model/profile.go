package model

import (
	"fmt"
	"slices"
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
	// Spec is the profile and its parameters.
	Spec() Spec
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
	Configure(maxRequests int, window time.Duration) error
	// Lifetime is how long from now user's state still matters: from then
	// on the user answers as a fresh one would, so a store may forget it.
	Lifetime(now time.Time, user string) time.Duration
}

// Replayable is what rlconform's oracles, linearizability models and
// diagnosis need of a profile beyond Profile, to fork it over the instants
// an answer may have had and to explain a failure; every profile that
// Spec.New returns has it (a type assertion gets it). Its methods serve the
// grader, not a limiter built on a profile.
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

// Spec names a profile and its parameters, as written on the command
// line: NAME or NAME:key=value,key=value. The zero Spec is the sliding log.
type Spec struct {
	Name   string
	Params map[string]string
}

// The profile names.
const (
	ProfileSlidingLog     = "sliding-log"
	ProfileFixedWindow    = "fixed-window"
	ProfileSlidingCounter = "sliding-counter"
	ProfileGCRA           = "gcra"
	ProfileTokenBucket    = "token-bucket"
)

// ParamInfo describes one parameter of a profile.
type ParamInfo struct {
	Name    string
	Default string
	// Values are the allowed values; nil means a whole number >= 1, or
	// "limit" (follow N).
	Values []string
	Doc    string
}

// ProfileInfo describes a profile for listings and errors.
type ProfileInfo struct {
	Name    string
	Summary string
	Params  []ParamInfo
}

// Profiles lists every profile, the default first.
func Profiles() []ProfileInfo {
	bools := []string{"false", "true"}
	return []ProfileInfo{
		{ProfileSlidingLog, "the exact sliding-window log: at t the allowed requests in (t-W, t] count; allowed while fewer than N count", nil},
		{ProfileFixedWindow, "a counter per fixed window of W: allowed while the window's count is below N", []ParamInfo{
			{"align", "epoch", []string{"epoch", "go-zero", "first-grid", "first-hit"}, "epoch: windows [kW, (k+1)W) on the epoch; go-zero: windows [kW, (k+1)W) counted from Go's zero time, 0001-01-01 UTC, as time.Time.Truncate makes them; first-grid: a grid anchored at the user's first request; first-hit: a window opened by the first request after the previous one ended (INCR + EXPIRE)"},
			{"count-denied", "false", bools, "denied requests are counted too (INCR before the check)"},
			{"query", "read", []string{"read", "write"}, "read: a query of what remains changes nothing; write: it saves the state as a request does, without counting (a user with none gets a window or grid at the query's instant: Symfony's consume(0))"},
		}},
		{ProfileSlidingCounter, "the two-window weighted counter: previous window's count × the part of it still inside (t-W, t], plus the current count, below N", []ParamInfo{
			{"align", "epoch", []string{"epoch", "go-zero", "first-grid"}, "epoch: windows [kW, (k+1)W) on the epoch; go-zero: windows [kW, (k+1)W) counted from Go's zero time, 0001-01-01 UTC, as time.Time.Truncate makes them; first-grid: a grid anchored at the user's first request, forgotten after a whole window with none (HAProxy's http_req_rate)"},
			{"count-denied", "false", bools, "denied requests are counted too"},
			{"admit", "below", []string{"below", "at-most"}, "below: allowed while the estimate is below N; at-most: allowed while the estimate including this request is at most N (estimate + 1 <= N)"},
		}},
		{ProfileGCRA, "the generic cell rate algorithm (leaky bucket as a meter): one request every W/N, a burst of B", []ParamInfo{
			{"burst", "limit", nil, "the burst B: requests allowed at once from idle (limit: follow N)"},
		}},
		{ProfileTokenBucket, "a token bucket of capacity C refilled with N tokens per W", []ParamInfo{
			{"capacity", "limit", nil, "the capacity C (limit: follow N)"},
			{"refill", "continuous", []string{"continuous", "interval"}, "continuous: N/W tokens per ms, exactly; interval: N tokens at once every whole W since the bucket was made"},
			{"expire", "full", []string{"full", "idle"}, "full: a bucket is forgotten when refills make it full (a key whose TTL is the time until full); idle: W*ceil(C/N) after its last write, and an interval bucket keeps its grid until then (Symfony's TokenBucket)"},
			{"query", "read", []string{"read", "write"}, "read: a query of what remains changes nothing; write: it saves the bucket as an allowed request does, without a token (a user with none gets one at the query's instant)"},
		}},
	}
}

func profileInfo(name string) (ProfileInfo, bool) {
	for _, p := range Profiles() {
		if p.Name == name {
			return p, true
		}
	}
	return ProfileInfo{}, false
}

// ParseSpec parses NAME or NAME:key=value,... ("" is the sliding log),
// checking every parameter, and fills in the defaults.
func ParseSpec(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		s = ProfileSlidingLog
	}
	name, rest, _ := strings.Cut(s, ":")
	info, ok := profileInfo(name)
	if !ok {
		var names []string
		for _, p := range Profiles() {
			names = append(names, p.Name)
		}
		return Spec{}, fmt.Errorf("unknown profile %q: want one of %s", name, strings.Join(names, ", "))
	}
	sp := Spec{Name: name, Params: map[string]string{}}
	for _, p := range info.Params {
		sp.Params[p.Name] = p.Default
	}
	if rest == "" {
		return sp, nil
	}
	for _, kv := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		i := slices.IndexFunc(info.Params, func(p ParamInfo) bool { return p.Name == k })
		switch {
		case !ok:
			return Spec{}, fmt.Errorf("profile %s: parameter %q: want key=value", name, kv)
		case i < 0:
			return Spec{}, fmt.Errorf("profile %s has no parameter %q (%s)", name, k, paramNames(info))
		}
		p := info.Params[i]
		switch {
		case p.Values != nil && !slices.Contains(p.Values, v):
			return Spec{}, fmt.Errorf("profile %s: %s=%q: want one of %s", name, k, v, strings.Join(p.Values, ", "))
		case p.Values == nil && v != "limit":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > contract.MaxLimit {
				return Spec{}, fmt.Errorf("profile %s: %s=%q: want a whole number from 1 to %d, or limit", name, k, v, contract.MaxLimit)
			}
			v = strconv.Itoa(n)
		}
		sp.Params[k] = v
	}
	return sp, nil
}

func paramNames(info ProfileInfo) string {
	if len(info.Params) == 0 {
		return "it takes none"
	}
	var out []string
	for _, p := range info.Params {
		out = append(out, p.Name)
	}
	return "it takes " + strings.Join(out, ", ")
}

// MustSpec is ParseSpec for specs written in code; it panics on an error.
func MustSpec(s string) Spec {
	sp, err := ParseSpec(s)
	if err != nil {
		panic(err)
	}
	return sp
}

// String is the spec with every parameter, in a stable order:
// "fixed-window:align=epoch,count-denied=false,query=read".
func (s Spec) String() string {
	name := s.Name
	if name == "" {
		name = ProfileSlidingLog
	}
	if len(s.Params) == 0 {
		return name
	}
	keys := make([]string, 0, len(s.Params))
	for k := range s.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + s.Params[k]
	}
	return name + ":" + strings.Join(keys, ",")
}

// LimitChangeGraded reports whether the profile says how a user's state
// reads after the limit changes: the sliding log, fixed windows and the
// weighted counter keep their entries or counts and compare them with the
// new N. A bucket's tokens or a GCRA's arrival time may be settled at the
// old rate up to the change, or refilled at the new rate from the last
// decision: both are honest, so GCRA and token buckets are graded on users
// whose history began under the limit in force.
func (s Spec) LimitChangeGraded() bool {
	return s.Name != ProfileGCRA && s.Name != ProfileTokenBucket
}

// IsSlidingLog reports whether s is the contract's own sliding log.
func (s Spec) IsSlidingLog() bool { return s.Name == "" || s.Name == ProfileSlidingLog }

// New returns the profile's model, empty, with a configuration.
func (s Spec) New(maxRequests int, window time.Duration) (Profile, error) {
	if err := contract.ValidateConfig(maxRequests, window); err != nil {
		return nil, err
	}
	full, err := ParseSpec(s.String())
	if err != nil {
		return nil, err
	}
	p := full.Params
	n, w := maxRequests, window.Milliseconds()
	switch full.Name {
	case ProfileFixedWindow:
		return &fixedWindow{align: p["align"], countDenied: p["count-denied"] == "true", writes: p["query"] == "write", n: n, w: w}, nil
	case ProfileSlidingCounter:
		return &slidingCounter{countDenied: p["count-denied"] == "true", align: p["align"], atMost: p["admit"] == "at-most", n: n, w: w}, nil
	case ProfileGCRA:
		return &gcraModel{burst: fixedParam(p["burst"]), n: n, w: w}, nil
	case ProfileTokenBucket:
		return &tokenBucket{capacity: fixedParam(p["capacity"]), interval: p["refill"] == "interval", idle: p["expire"] == "idle", writes: p["query"] == "write", n: n, w: w}, nil
	}
	return newSlidingLog(maxRequests, window)
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

// ceilDiv is a/b rounded up, for a >= 0 and b > 0.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// floorDiv is a/b rounded toward minus infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
