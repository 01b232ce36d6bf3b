package engine

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/rlconform/rlconform/model"
)

// linMaxWidth bounds, in ms, the interval of an operation that the
// real-time check of a profile other than the sliding log enumerates: it
// tries every instant of it.
const linMaxWidth = 200

// linMaxStates bounds the states one user may be in after an operation;
// past it the check accepts the rest of that history and says it could
// not decide (never a failure, never a pass).
const linMaxStates = 512

// profState is one state a user may be in: the profile's model holding
// that user alone, after instants no earlier than low.
type profState struct {
	p   replayable
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

// linProfileModel is linModel for a profile other than the sliding log:
// per user (the partition), the state is the set of profile models the
// history so far admits. On the fake clock an operation takes effect at
// its phase's instant; in real time (realTime) at any whole millisecond of
// [lo, hi] no earlier than the operation before it, every one of them
// tried (exact, so sound). An unknown outcome may have happened or not.
// overflow is set when a user's states passed linMaxStates: a pass is then
// not proven.
func linProfileModel(spec model.Spec, n int, w int64, short func(string) string, realTime bool, overflow *atomic.Bool) porcupine.Model {
	base := linModel(n, w, short)
	fresh := func() replayable {
		p, _ := newModel(spec, n, ms(w))
		return p
	}
	set := func(m map[string]profState) profStates {
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
	return porcupine.Model{
		Partition: base.Partition,
		Init: func() any {
			return set(map[string]profState{"": {p: fresh(), low: math.MinInt64 / 2}})
		},
		Step: func(st, in, out any) (bool, any) {
			s, i, o := st.(profStates), in.(linInput), out.(linOutput)
			if s.overflowed {
				return true, s
			}
			next := map[string]profState{}
			keep := func(p replayable, t int64) {
				k := p.StateKey(i.user)
				if realTime {
					k += fmt.Sprintf("@%d", t)
				}
				if old, ok := next[k]; !ok || t < old.low {
					next[k] = profState{p: p, low: t, key: k}
				}
			}
			for _, c := range s.states {
				lo, hi := i.at, i.at
				if realTime {
					lo, hi = max(i.lo, c.low), i.hi
				}
				for t := lo; t <= hi; t++ {
					now := timeMs(t)
					if o.unknown {
						keep(c.p, t) // it did not happen
					}
					switch i.op {
					case 'a':
						q := c.p.Clone().(replayable)
						ok, _ := q.Allow(now, i.user)
						if o.unknown || ok == o.allowed {
							keep(q, t)
						}
					case 'r':
						if left, _ := c.p.Clone().Remaining(now, i.user); o.unknown || left == o.remaining {
							keep(c.p, t)
						}
					default: // reset
						keep(fresh(), t)
					}
				}
			}
			if len(next) == 0 {
				return false, s
			}
			if len(next) > linMaxStates {
				overflow.Store(true)
				return true, profStates{sig: "overflowed", overflowed: true}
			}
			return true, set(next)
		},
		Equal: func(a, b any) bool { return a.(profStates).sig == b.(profStates).sig },
		DescribeOperation: func(in, out any) string {
			if !realTime {
				return base.DescribeOperation(in, out)
			}
			i := in.(linInput)
			d := base.DescribeOperation(in, out)
			return fmt.Sprintf("[%d..%d] %s", i.lo%100000, i.hi%100000, d[len(fmt.Sprintf("@%dms ", i.at)):])
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

// tooWide says why the real-time history cannot be checked against a
// profile other than the sliding log ("" when it can): an operation whose
// interval is too wide to try every instant of it.
func tooWide(history []porcupine.Operation) string {
	for _, o := range history {
		if in := o.Input.(linInput); in.hi-in.lo > linMaxWidth {
			if o.Output.(linOutput).unknown {
				return "an operation failed, so its outcome is unknown at any later instant, too many instants to try against this profile"
			}
			return fmt.Sprintf("an operation took %dms, more than the %dms whose every instant the check tries against this profile", in.hi-in.lo, linMaxWidth)
		}
	}
	return ""
}

func ms(d int64) time.Duration { return time.Duration(d) * time.Millisecond }

func timeMs(t int64) time.Time { return time.UnixMilli(t) }
