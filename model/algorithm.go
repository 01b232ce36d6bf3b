package model

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlconform/rlconform/contract"
)

// Algorithm is everything rlconform knows of one rate-limiting algorithm,
// in one value: its name and parameters, its model, and what each part of
// the grader needs of it (identify's candidates, the diagnosis's
// suspects, the bench's bounds). An [Algorithms] set holds the algorithms
// a run may grade against; [Builtin] returns the five rlconform ships,
// and a caller may register its own.
//
// Only Name, Summary and New are required; every other field has a
// neutral zero value (the algorithm is then graded, but never suggested
// by a diagnosis or by identify, and the bench has no bounds for it).
type Algorithm struct {
	// Name is the profile's name on the command line: lower-case letters,
	// digits and '-'.
	Name string
	// Summary says what the algorithm decides, in one line.
	Summary string
	// Params are its parameters, each with a default: a Variant holds a
	// value for every one.
	Params []ParamInfo
	// New returns the model of a variant, empty: params holds a valid
	// value for every parameter, and the configuration is valid
	// ([contract.ValidateConfig]).
	New func(params map[string]string, maxRequests int, window time.Duration) Replayable
	// GradesLimitChange says that the algorithm states how a user's state
	// reads after the limit changes; when false, specs grade only users
	// whose history began under the limit in force.
	GradesLimitChange bool
	// Readings are the honest readings of a change of configuration for a
	// user with history (what Configure(N', W') makes of a stored count,
	// window, arrival time or bucket), the model's default first. With
	// two or more, Register adds the parameter "reconfigure": "any" (the
	// default) grades against every reading, a reading's name pins it;
	// New is given the reading to model ("any" means the first).
	Readings []Reading
	// Candidates are the parameter sets identify tries, each as
	// "key=value,...", given the bursts worth trying ("limit", and the
	// burst a probe saw when it differs).
	Candidates func(bursts []string) []string
	// Alike keys a variant's decisions: two variants with equal keys
	// decide alike, and answer what remains alike, on every history whose
	// configuration does not change, under limit n; with queries false
	// the histories have no queries, with oneGrid every window divides
	// the offset between the grids of the epoch and of Go's zero time.
	// Keys compare across algorithms. Nil keys a variant by its String.
	Alike func(params map[string]string, n int, queries, oneGrid bool) string
	// Suspects are the parameter sets a diagnosis replays a failing
	// history on, "" for the defaults; Remedy is what to change in a
	// limiter graded as the sliding log whose history one of them
	// explains; RemainingVaries says that honest implementations report
	// what remains differently (an estimate rounded either way), so a
	// diagnosis does not compare those answers.
	Suspects        []string
	Remedy          string
	RemainingVaries bool
	// Cost states the algorithm's rule for a request of cost n
	// ([contract.CostLimiter]), with formulas: when it is admitted, what
	// it consumes, and what a refused one counts under each variant that
	// counts denied requests. Empty: the algorithm states none, and its
	// model need not be [Weighted]; the cost specs are then skipped.
	Cost string
	// Grid is the fixed grid of windows a variant's decisions follow, if
	// any: its windows then lie at the same instants for every user.
	Grid func(params map[string]string) (Grid, bool)
	// Anchored says that a fresh user's decisions under a variant depend
	// only on how far its instants lie from its first request: no grid
	// fixed to the clock, no phase of a clock that ticks by itself. The
	// real-time oracle may then decide a fresh user's burst by its count
	// (a burst within one window of its first request, under every
	// anchor). Nil means no variant is.
	Anchored func(params map[string]string) bool
	// QueryWrites says that a variant's query of what remains saves the
	// user's state as a request does: it is a decision, though it counts
	// nothing.
	QueryWrites func(params map[string]string) bool
	// Envelope is what a variant with limit n per window w may decide
	// under load, whatever the timing of its calls: the bench's bounds.
	Envelope func(params map[string]string, n int64, w time.Duration) Envelope
	// Unseen, when set, are the models a fresh limiter of a variant may
	// be in real time, for what the grader cannot see of it (the phase of
	// a clock of whole seconds that ticks from the process's start): the
	// oracles follow each. On the fake clock, and when nil or it returns
	// none, it is New's.
	Unseen func(params map[string]string, n int, w time.Duration) []Replayable
}

// costShared is the rule of costs 0 and below every built-in algorithm's
// [Algorithm.Cost] ends with.
const costShared = "n = 0 consumes nothing and changes no state (the model answers allowed; the answer is not graded); n < 0 is an error (ErrInvalidCost)"

// costQueryWrites is the rule of cost 0 where a query writes: a request of
// no cost is the query (Symfony RateLimiter's only query is consume(0)).
const costQueryWrites = "n = 0 consumes nothing; with query=write it is the query, and saves the state as the query does (Symfony's consume(0)), else the model changes no state, and a limiter may have saved the state as a query that writes does, opening a window (rate-limiter-flexible's consume(0)): both are honest (the model answers allowed; the answer is not graded); n < 0 is an error (ErrInvalidCost)"

// Reading is one honest reading of a change of configuration.
type Reading struct {
	// Name is its value of the parameter "reconfigure": "settle".
	Name string
	// Doc states it, with formulas.
	Doc string
	// Seen names libraries that read a change this way.
	Seen string
}

// ReconfigureParam is the parameter that pins a reading of a change of
// configuration ([Algorithm.Readings]); ReadingAny, its default, grades
// against every reading.
const (
	ReconfigureParam = "reconfigure"
	ReadingAny       = "any"
)

// CostParam is the parameter of GCRA and token buckets that says how a
// request of cost n is decided ([Weighted]): CostWhole, the default, all
// or nothing (allowed when n fit, so a cost above the burst or capacity
// never is); CostDebt, allowed whenever a unit request would be (the user
// owes nothing: a GCRA's max(TAT, t) − t ≤ (B−1)×T, a bucket's tokens ≥
// 1), and then all n are taken, possibly leaving the user in debt that
// later requests wait out (Guava's RateLimiter.tryAcquire(n)). A unit
// request is decided alike under both.
const (
	CostParam = "cost"
	CostWhole = "whole"
	CostDebt  = "debt"
)

// RenewParam is the parameter of the sliding counter and of fixed windows
// that says what keeps a first-grid user's grid: RenewCounted, the
// default, a counted request (HAProxy's freq_ctr); RenewAny (the sliding
// counter), any call that finds the user's counts, a query included
// (python limits' sliding window counter); RenewKept (fixed windows),
// nothing needs to: the grid lasts as long as the limiter keeps the user
// (sethvargo/go-limiter's memory store, swept after 12 hours).
const (
	RenewParam   = "renew"
	RenewCounted = "counted"
	RenewAny     = "any"
	RenewKept    = "kept"
)

// costParam is [CostParam]'s declaration, for the algorithms that take it.
func costParam() ParamInfo {
	return ParamInfo{Name: CostParam, Default: CostWhole, Values: []string{CostWhole, CostDebt},
		Doc: "how a request of cost n is decided: whole, all or nothing (allowed when n fit; n above the burst or capacity never is); debt, allowed whenever one unit would be (nothing is owed), then all n are taken, possibly into debt that later requests wait out (Guava's RateLimiter.tryAcquire(n))"}
}

// Grid is a fixed grid of windows [o+kW, o+(k+1)W) for every whole k.
type Grid struct {
	// Origin is o, an edge of every grid whatever W.
	Origin time.Time
	// Name names the origin: "the epoch".
	Name string
}

// Floor is the edge of the grid's window of w at or before t.
func (g Grid) Floor(t time.Time, w time.Duration) time.Time {
	// Truncate counts from Go's zero time: shift by the origin's phase.
	phase := g.Origin.Sub(g.Origin.Truncate(w))
	return t.Add(-phase).Truncate(w).Add(phase)
}

// EpochGrid is the grid on the Unix epoch.
func EpochGrid() Grid { return Grid{Origin: time.Unix(0, 0), Name: "the epoch"} }

// GoZeroGrid is the grid on Go's zero time, 0001-01-01 UTC: the windows
// time.Time.Truncate makes.
func GoZeroGrid() Grid {
	return Grid{Origin: time.Time{}, Name: "Go's zero time (time.Time.Truncate's)"}
}

// Envelope is what a limiter following a variant may decide under load,
// whatever the timing of its calls (the bench's exactness check).
type Envelope struct {
	// Grid: at most N allowed in each window of the variant's Grid.
	Grid bool
	// Linear bounds the allowed calls of one user within any span.
	Linear []LinearBound
	// Under is what a denial needs.
	Under UnderRule
}

// LinearBound bounds the allowed calls of one user whose instants all lie
// within a span of E: count × W − Rate × E ≤ Windows × W − Less (W and E
// in ns), over spans E shorter than Within × W + WithinPlus ns, or over
// any span when both are 0.
type LinearBound struct {
	Rate, Windows, Less int64
	Within, WithinPlus  int64
	// Rule states the bound in words.
	Rule string
}

// UnderRule is what a denial needs: for a log, at least Limit allowed
// calls (or, CountDenied, calls of any outcome) within less than
// LookbackWindows × W before it; for a bucket, a bucket of Capacity
// holding less than one token whatever the timing.
type UnderRule struct {
	Bucket          bool
	Capacity        int64
	Limit           int64
	LookbackWindows int64
	CountDenied     bool
	// Rule states it in words.
	Rule string
}

// Algorithms is a set of algorithms, in the order they were registered:
// the profiles a run may grade against. The zero value is empty; it is
// not safe for concurrent Register.
type Algorithms struct {
	list []*Algorithm
}

// Builtin returns a new set of the algorithms rlconform ships: the
// sliding log (the contract's), fixed windows, the weighted counter, GCRA
// and token buckets.
func Builtin() *Algorithms {
	a := &Algorithms{}
	for _, alg := range []Algorithm{slidingLogAlgorithm(), fixedWindowAlgorithm(), slidingCounterAlgorithm(), gcraAlgorithm(), tokenBucketAlgorithm(), smoothBurstyAlgorithm()} {
		if err := a.Register(alg); err != nil {
			panic(err) // the built-in descriptors are written in this package
		}
	}
	return a
}

// Register adds alg to the set. It is an error for the name to be taken,
// malformed, for a required field or a parameter's default to be
// missing, or for a Cost rule to be stated by an algorithm whose model is
// not [Weighted].
func (a *Algorithms) Register(alg Algorithm) error {
	switch {
	case !validName(alg.Name):
		return fmt.Errorf("model: algorithm name %q: want lower-case letters, digits and '-'", alg.Name)
	case a.Lookup(alg.Name) != nil:
		return fmt.Errorf("model: algorithm %q is registered already", alg.Name)
	case alg.New == nil || alg.Summary == "":
		return fmt.Errorf("model: algorithm %q: New and Summary are required", alg.Name)
	}
	for _, p := range alg.Params {
		if !validName(p.Name) || p.Default == "" {
			return fmt.Errorf("model: algorithm %q: parameter %q: want a name of lower-case letters, digits and '-', and a default", alg.Name, p.Name)
		}
	}
	if alg.Cost != "" {
		defaults := map[string]string{}
		for _, p := range alg.Params {
			defaults[p.Name] = p.Default
		}
		if _, ok := alg.New(defaults, 1, time.Second).(Weighted); !ok {
			return fmt.Errorf("model: algorithm %q states a Cost rule, but its model is not Weighted (AllowN)", alg.Name)
		}
	}
	alg.Params = slices.Clone(alg.Params)
	alg.Suspects = slices.Clone(alg.Suspects)
	alg.Readings = slices.Clone(alg.Readings)
	if len(alg.Readings) > 1 {
		if slices.ContainsFunc(alg.Params, func(p ParamInfo) bool { return p.Name == ReconfigureParam }) {
			return fmt.Errorf("model: algorithm %q: the parameter %q is made from its Readings", alg.Name, ReconfigureParam)
		}
		values, docs := []string{ReadingAny}, []string{ReadingAny + ": every reading (a user's answers after a change must all be one reading's)"}
		for _, r := range alg.Readings {
			if !validName(r.Name) || r.Name == ReadingAny {
				return fmt.Errorf("model: algorithm %q: reading %q: want a name of lower-case letters, digits and '-', not %q", alg.Name, r.Name, ReadingAny)
			}
			values, docs = append(values, r.Name), append(docs, r.Name+": "+r.Doc)
		}
		alg.Params = append(alg.Params, ParamInfo{Name: ReconfigureParam, Default: ReadingAny, Values: values,
			Doc: "how a change of the limit or the window reads a user's state; " + strings.Join(docs, "; ")})
	}
	a.list = append(a.list, &alg)
	return nil
}

func validName(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == ""
}

// Lookup returns the algorithm named name, or nil.
func (a *Algorithms) Lookup(name string) *Algorithm {
	if a == nil {
		return nil
	}
	for _, alg := range a.list {
		if alg.Name == name {
			return alg
		}
	}
	return nil
}

// All returns the algorithms in the order they were registered.
func (a *Algorithms) All() []*Algorithm {
	if a == nil {
		return nil
	}
	return slices.Clone(a.list)
}

// Names returns the algorithms' names, in order.
func (a *Algorithms) Names() []string {
	var out []string
	for _, alg := range a.All() {
		out = append(out, alg.Name)
	}
	return out
}

// Parse parses NAME or NAME:key=value,... ("" is the sliding log) against
// the set, checking every parameter, and fills in the defaults.
func (a *Algorithms) Parse(s string) (Variant, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		s = ProfileSlidingLog
	}
	name, rest, _ := strings.Cut(s, ":")
	alg := a.Lookup(name)
	if alg == nil {
		return Variant{}, fmt.Errorf("unknown profile %q: want one of %s", name, strings.Join(a.Names(), ", "))
	}
	v := Variant{Name: name, Params: map[string]string{}, alg: alg}
	for _, p := range alg.Params {
		v.Params[p.Name] = p.Default
	}
	if rest == "" {
		return v, nil
	}
	for _, kv := range strings.Split(rest, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		i := slices.IndexFunc(alg.Params, func(p ParamInfo) bool { return p.Name == k })
		switch {
		case !ok:
			return Variant{}, fmt.Errorf("profile %s: parameter %q: want key=value", name, kv)
		case i < 0:
			return Variant{}, fmt.Errorf("profile %s has no parameter %q (%s)", name, k, paramNames(alg))
		}
		val, err := alg.Params[i].check(val)
		if err != nil {
			return Variant{}, fmt.Errorf("profile %s: %s=%q: %w", name, k, val, err)
		}
		v.Params[k] = val
	}
	return v, nil
}

// check returns v as the parameter holds it, or why it is not a value.
func (p ParamInfo) check(v string) (string, error) {
	switch {
	case p.Values != nil && !slices.Contains(p.Values, v):
		return v, fmt.Errorf("want one of %s", strings.Join(p.Values, ", "))
	case p.Values == nil && v != "limit":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > contract.MaxLimit {
			return v, fmt.Errorf("want a whole number from 1 to %d, or limit", contract.MaxLimit)
		}
		return strconv.Itoa(n), nil
	}
	return v, nil
}

func paramNames(alg *Algorithm) string {
	if len(alg.Params) == 0 {
		return "it takes none"
	}
	var out []string
	for _, p := range alg.Params {
		out = append(out, p.Name)
	}
	return "it takes " + strings.Join(out, ", ")
}
