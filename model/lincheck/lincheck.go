// Package lincheck holds rlconform's linearizability models for
// porcupine (github.com/anishathalye/porcupine): a history of a limiter's
// operations, each with its answer, is linearizable when some serial order
// of them gives every answer. On the fake clock an operation takes effect
// at its instant; in real time at some instant of its interval, as the
// real-time rule of package model says (model.MayCount, model.MustCount),
// so that a correct limiter is never failed.
package lincheck

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/rlconform/rlconform/model"
)

// Input is one operation of a linearizability history.
type Input struct {
	Op   byte // 'a' allow, 'r' remaining, 'x' reset
	User string
	At   int64 // the fake clock's reading, ms: it stands still during a phase
	// In real time the instant lies in [Lo, Hi], unix ms: from the call to
	// its answer (for an unknown outcome, any time later).
	Lo, Hi int64
	// Cost is the cost of an allow (contract.CostLimiter); 0 means 1.
	Cost int
}

// cost is the cost of an allow: Cost, 0 meaning 1.
func (i Input) cost() int {
	if i.Cost == 0 {
		return 1
	}
	return i.Cost
}

// Output is what the target answered; unknown when the call failed or
// timed out, in which case it may or may not have taken effect.
type Output struct {
	Allowed   bool
	Remaining int
	Unknown   bool
}

// SlidingLog is the contract's sliding log of n requests per w ms as
// porcupine wants it: per user (the partition), a pure step over an
// immutable log of instants; short shortens a user id in descriptions. An unknown outcome may have
// happened or not, so the model is nondeterministic. An allow of cost c
// (Input.Cost) is allowed when active + c <= n, and then logs c entries.
func SlidingLog(n int, w int64, short func(string) string) porcupine.Model {
	type state = []int64 // one user's log, oldest first
	prune := func(s state, t int64) state {
		i := 0
		for i < len(s) && s[i] <= t-w {
			i++
		}
		return s[i:]
	}
	count := func(s state, t int64) int {
		c := 0
		for _, e := range s {
			if e <= t {
				c++
			}
		}
		return c
	}
	nm := porcupine.NondeterministicModel{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			byUser := map[string][]porcupine.Operation{}
			var users []string
			for _, o := range history {
				u := o.Input.(Input).User
				if _, ok := byUser[u]; !ok {
					users = append(users, u)
				}
				byUser[u] = append(byUser[u], o)
			}
			out := make([][]porcupine.Operation, 0, len(users))
			for _, u := range users {
				out = append(out, byUser[u])
			}
			return out
		},
		Init: func() []any { return []any{state(nil)} },
		Step: func(st, in, out any) []any {
			s, i, o := prune(st.(state), in.(Input).At), in.(Input), out.(Output)
			active := count(s, i.At)
			switch i.Op {
			case 'a':
				room := active+i.cost() <= n
				grown := append(slices.Clip(s), slices.Repeat([]int64{i.At}, i.cost())...)
				switch {
				case o.Unknown && room:
					return []any{s, grown}
				case o.Unknown:
					return []any{s}
				case o.Allowed && room:
					return []any{grown}
				case !o.Allowed && !room:
					return []any{s}
				}
				return nil
			case 'r':
				if o.Unknown || o.Remaining == max(0, n-active) {
					return []any{s}
				}
				return nil
			default: // reset
				if o.Unknown {
					return []any{s, state(nil)}
				}
				return []any{state(nil)}
			}
		},
		Equal: func(a, b any) bool { return slices.Equal(a.(state), b.(state)) },
		DescribeOperation: func(in, out any) string {
			i, o := in.(Input), out.(Output)
			var got string
			switch {
			case o.Unknown:
				got = "unknown (failed)"
			case i.Op == 'a':
				got = allowedWord(o.Allowed)
			case i.Op == 'r':
				got = fmt.Sprint(o.Remaining)
			default:
				got = "ok"
			}
			name := map[byte]string{'a': "AllowRequest", 'r': "GetRemainingRequests", 'x': "Reset"}[i.Op]
			if i.Op == 'a' && i.cost() != 1 {
				return fmt.Sprintf("@%dms AllowRequestN(%s, %d) = %s", i.At, short(i.User), i.cost(), got)
			}
			return fmt.Sprintf("@%dms %s(%s) = %s", i.At, name, short(i.User), got)
		},
		DescribeState: func(st any) string { return fmt.Sprintf("%d entries %v", len(st.(state)), st) },
	}
	return nm.ToModel()
}

// SlidingLogRealTime is SlidingLog without clock control: an operation took
// effect at some instant of [lo, hi], no earlier than the operation before
// it in the serial order (one clock). The state is the user's entries, each
// an interval of instants, and the earliest instant the next operation may
// take; answers are judged as the interval oracle does (model.NewOracle of the sliding log), so
// the check is sound: a correct limiter is never failed.
func SlidingLogRealTime(n int, w int64, short func(string) string) porcupine.Model {
	type span struct{ lo, hi int64 }
	type state struct {
		entries []span
		low     int64
	}
	base := SlidingLog(n, w, short)
	nm := porcupine.NondeterministicModel{
		Partition: base.Partition,
		Init:      func() []any { return []any{state{}} },
		Step: func(st, in, out any) []any {
			s, i, o := st.(state), in.(Input), out.(Output)
			lo := max(i.Lo, s.low)
			if lo > i.Hi {
				return nil // it answered before the operation it follows
			}
			var kept []span
			cMin, cMax := 0, 0
			for _, e := range s.entries {
				if !model.MayCount(lo-min(e.hi, i.Hi), w, true) {
					continue // gone at every instant from lo on
				}
				kept = append(kept, e)
				cMax++
				if model.MustCount(i.Hi-e.lo, w) {
					cMin++
				}
			}
			same := state{entries: kept, low: lo}
			switch i.Op {
			case 'a':
				c := i.cost()
				grown := state{entries: append(slices.Clip(kept), slices.Repeat([]span{{lo, i.Hi}}, c)...), low: lo}
				mayAllow, mayDeny := cMin+c <= n, cMax+c > n
				switch {
				case o.Unknown && mayAllow && mayDeny:
					return []any{same, grown}
				case o.Unknown && mayAllow:
					return []any{grown}
				case o.Unknown:
					return []any{same}
				case o.Allowed && mayAllow:
					return []any{grown}
				case !o.Allowed && mayDeny:
					return []any{same}
				}
				return nil
			case 'r':
				if o.Unknown || (o.Remaining >= max(0, n-cMax) && o.Remaining <= max(0, n-cMin)) {
					return []any{same}
				}
				return nil
			default: // reset
				if o.Unknown {
					return []any{same, state{low: lo}}
				}
				return []any{state{low: lo}}
			}
		},
		Equal: func(a, b any) bool {
			x, y := a.(state), b.(state)
			return x.low == y.low && slices.Equal(x.entries, y.entries)
		},
		DescribeOperation: func(in, out any) string {
			i := in.(Input)
			d := base.DescribeOperation(in, out)
			return fmt.Sprintf("[%d..%d] %s", i.Lo%100000, i.Hi%100000, d[strings.IndexByte(d, ' ')+1:])
		},
		DescribeState: func(st any) string { return fmt.Sprintf("%d entries %v", len(st.(state).entries), st.(state).entries) },
	}
	return nm.ToModel()
}

// MaxWidth bounds, in ms, the interval of an operation that the
// real-time check of a profile other than the sliding log enumerates: it
// tries every instant of it.
const MaxWidth = 200

// MaxStates bounds the states one user may be in after an operation;
// past it the check accepts the rest of that history and says it could
// not decide (never a failure, never a pass).
const MaxStates = 512

// profState is one state a user may be in: the profile's model holding
// that user alone, after instants no earlier than low.
type profState struct {
	p   model.Replayable
	low int64
	key string // the model's state and low: states with one key are one
}

// profStates is every state a user may be in (porcupine's state), or
// overflowed: too many to follow, so anything is accepted from then on.
type profStates struct {
	states     []profState
	sig        string // the sorted keys
	overflowed bool
}

// Profile is SlidingLog for a profile other than the sliding log:
// per user (the partition), the state is the set of profile models the
// history so far admits. On the fake clock an operation takes effect at
// its phase's instant; in real time (realTime) at any whole millisecond of
// [lo, hi] no earlier than the operation before it, every one of them
// tried (exact, so sound). An unknown outcome may have happened or not.
// An allow of a cost (Input.Cost) steps each state with model.AllowN.
// overflow is set when a user's states passed MaxStates, or an allow of a
// cost other than 1 met a profile that is not model.Weighted: a pass is
// then not proven.
func Profile(spec model.Variant, n int, w int64, short func(string) string, realTime bool, overflow *atomic.Bool) porcupine.Model {
	base := SlidingLog(n, w, short)
	fresh := func() []model.Replayable { return freshModels(spec, n, w, realTime) }
	return porcupine.Model{
		Partition: base.Partition,
		Init: func() any {
			init := map[string]profState{}
			for i, p := range fresh() {
				k := strconv.Itoa(i)
				init[k] = profState{p: p, low: math.MinInt64 / 2, key: k}
			}
			return stateSet(init)
		},
		Step: func(st, in, out any) (bool, any) {
			s, i, o := st.(profStates), in.(Input), out.(Output)
			if s.overflowed {
				return true, s
			}
			next := map[string]profState{}
			keep := func(p model.Replayable, t int64) {
				k := p.StateKey(i.User)
				if realTime {
					k += fmt.Sprintf("@%d", t)
				}
				if old, ok := next[k]; !ok || t < old.low {
					next[k] = profState{p: p, low: t, key: k}
				}
			}
			for _, c := range s.states {
				lo, hi := i.At, i.At
				if realTime {
					lo, hi = max(i.Lo, c.low), i.Hi
				}
				for t := lo; t <= hi; t++ {
					now := time.UnixMilli(t)
					if o.Unknown {
						keep(c.p, t) // it did not happen
					}
					switch i.Op {
					case 'a':
						q := c.p.Clone().(model.Replayable)
						ok, err := model.AllowN(q, now, i.User, i.cost())
						if err != nil { // a profile that takes no cost
							overflow.Store(true)
							return true, profStates{sig: "overflowed", overflowed: true}
						}
						if o.Unknown || ok == o.Allowed {
							keep(q, t)
						}
					case 'r':
						// A profile whose query writes (query=write) saves
						// the user's state as it answers: the state after
						// it is the query's, not the one before.
						q := c.p.Clone().(model.Replayable)
						if left, _ := q.Remaining(now, i.User); o.Unknown || left == o.Remaining {
							keep(q, t)
						}
					default: // reset
						for _, p := range fresh() {
							keep(p, t)
						}
					}
				}
			}
			if len(next) == 0 {
				return false, s
			}
			if len(next) > MaxStates {
				overflow.Store(true)
				return true, profStates{sig: "overflowed", overflowed: true}
			}
			return true, stateSet(next)
		},
		Equal: func(a, b any) bool { return a.(profStates).sig == b.(profStates).sig },
		DescribeOperation: func(in, out any) string {
			if !realTime {
				return base.DescribeOperation(in, out)
			}
			i := in.(Input)
			d := base.DescribeOperation(in, out)
			return fmt.Sprintf("[%d..%d] %s", i.Lo%100000, i.Hi%100000, d[len(fmt.Sprintf("@%dms ", i.At)):])
		},
		DescribeState: func(st any) string {
			s := st.(profStates)
			if s.overflowed {
				return "too many states to follow"
			}
			return fmt.Sprintf("%d possible states", len(s.states))
		},
	}
}

// freshModels is every model a fresh user may be: in real time, one per
// state of the limiter the grader cannot see (model.Variant.Unseen).
func freshModels(spec model.Variant, n int, w int64, realTime bool) []model.Replayable {
	window := time.Duration(w) * time.Millisecond
	if !realTime {
		p, _ := spec.New(n, window) // the caller's configuration is valid
		return []model.Replayable{p}
	}
	ps, _ := spec.Unseen(n, window)
	return ps
}

// stateSet is the states of m as porcupine's state, keyed by their sorted
// keys.
func stateSet(m map[string]profState) profStates {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := profStates{sig: strings.Join(keys, "|")}
	for _, k := range keys {
		out.states = append(out.states, m[k])
	}
	return out
}

// TooWide says why the real-time history cannot be checked against a
// profile other than the sliding log ("" when it can): an operation whose
// interval is too wide to try every instant of it.
func TooWide(history []porcupine.Operation) string {
	for _, o := range history {
		if in := o.Input.(Input); in.Hi-in.Lo > MaxWidth {
			if o.Output.(Output).Unknown {
				return "an operation failed, so its outcome is unknown at any later instant, too many instants to try against this profile"
			}
			return fmt.Sprintf("an operation took %dms, more than the %dms whose every instant the check tries against this profile", in.Hi-in.Lo, MaxWidth)
		}
	}
	return ""
}

// allowedWord is how a decision reads in a history.
func allowedWord(ok bool) string {
	if ok {
		return "allowed"
	}
	return "denied"
}
