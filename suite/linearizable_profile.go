package suite

import (
	"fmt"
	"math"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/rlconform/rlconform/model"
)

// linMaxWidth bounds, in ms, the interval of an operation that the
// real-time check of a profile other than the sliding log enumerates: it
// tries every instant of it.
const linMaxWidth = 200

// linProfileModel is linModel for a profile other than the sliding log:
// per user (the partition), the state is the profile's model holding that
// user alone. On the fake clock an operation takes effect at its phase's
// instant; in real time (realTime) at any whole millisecond of [lo, hi] no
// earlier than the operation before it, every one of them tried (exact,
// so sound). An unknown outcome may have happened or not.
func linProfileModel(spec model.Spec, n int, w int64, short func(string) string, realTime bool) porcupine.Model {
	type state struct {
		p    model.Profile
		user string
		low  int64
	}
	base := linModel(n, w, short)
	fresh := func() model.Profile {
		p, _ := spec.New(n, ms(w))
		return p
	}
	nm := porcupine.NondeterministicModel{
		Partition: base.Partition,
		Init:      func() []any { return []any{state{p: fresh(), low: math.MinInt64 / 2}} },
		Step: func(st, in, out any) []any {
			s, i, o := st.(state), in.(linInput), out.(linOutput)
			lo, hi := i.at, i.at
			if realTime {
				lo, hi = max(i.lo, s.low), i.hi
			}
			seen := map[string]bool{}
			var next []any
			keep := func(p model.Profile, t int64) {
				k := fmt.Sprintf("%s@%d", p.StateKey(i.user), t)
				if !realTime {
					k = p.StateKey(i.user)
				}
				if !seen[k] {
					seen[k] = true
					next = append(next, state{p: p, user: i.user, low: t})
				}
			}
			for t := lo; t <= hi; t++ {
				now := timeMs(t)
				if o.unknown {
					keep(s.p, t) // it did not happen
				}
				switch i.op {
				case 'a':
					q := s.p.Clone()
					ok, _ := q.Allow(now, i.user)
					if o.unknown || ok == o.allowed {
						keep(q, t)
					}
				case 'r':
					if left, _ := s.p.Clone().Remaining(now, i.user); o.unknown || left == o.remaining {
						keep(s.p, t)
					}
				default: // reset
					keep(fresh(), t)
				}
			}
			return next
		},
		Equal: func(a, b any) bool {
			x, y := a.(state), b.(state)
			return x.user == y.user && x.p.StateKey(x.user) == y.p.StateKey(y.user) && (!realTime || x.low == y.low)
		},
		DescribeOperation: func(in, out any) string {
			if !realTime {
				return base.DescribeOperation(in, out)
			}
			i := in.(linInput)
			d := base.DescribeOperation(in, out)
			return fmt.Sprintf("[%d..%d] %s", i.lo%100000, i.hi%100000, d[len(fmt.Sprintf("@%dms ", i.at)):])
		},
		DescribeState: func(st any) string {
			s := st.(state)
			return s.p.StateKey(s.user)
		},
	}
	return nm.ToModel()
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
