package model

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With point intervals the oracle is exact: it agrees with State answer for
// answer, over random schedules of allows, remaining queries, resets,
// reconfigurations (windows lowered) and clock steps onto entry edges.
func TestIntervalAgreesWithStateOnPoints(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		n, w := 1+rng.IntN(5), time.Duration(50+rng.IntN(1000))*time.Millisecond
		s, err := newSlidingLog(n, w)
		require.NoError(t, err)
		o, err := newInterval(n, w)
		require.NoError(t, err)
		now := time.UnixMilli(1_767_225_600_000)
		for step := range 300 {
			u := fmt.Sprint("u", rng.IntN(3))
			var op TimedOp
			switch r := rng.IntN(100); {
			case r < 50:
				ok, _ := s.Allow(now, u)
				op = TimedOp{Kind: OpAllow, User: u, Allowed: ok}
			case r < 65:
				left, _ := s.Remaining(now, u)
				op = TimedOp{Kind: OpRemaining, User: u, Remaining: left}
			case r < 70:
				s.Reset(u)
				op = TimedOp{Kind: OpReset, User: u}
			case r < 75:
				nn, ww := 1+rng.IntN(5), min(s.Window(), time.Duration(10+rng.IntN(1000))*time.Millisecond)
				s.Configure(now, nn, ww)
				op = TimedOp{Kind: OpConfigure, Limit: nn, Window: ww}
			default:
				if log := s.Log(now, u); len(log) > 0 && rng.IntN(2) == 0 {
					now = log[rng.IntN(len(log))].Add(s.Window() - time.Duration(rng.IntN(2))*time.Millisecond)
				} else {
					now = now.Add(time.Duration(rng.IntN(300)) * time.Millisecond)
				}
				continue
			}
			op.Lo, op.Hi = now, now
			before := clone(o)
			j, why, _ := o.Judge(op)
			require.Equal(t, Certain, j, "seed %d step %d: %+v: %s", seed, step, op, why)
			// The opposite answer must be impossible.
			switch op.Kind {
			case OpAllow:
				bad := op
				bad.Allowed = !op.Allowed
				j, _, _ = before.Judge(bad)
				require.Equal(t, Impossible, j, "seed %d step %d: the opposite of %+v", seed, step, op)
			case OpRemaining:
				bad := op
				bad.Remaining = op.Remaining + 1
				j, _, _ = before.Judge(bad)
				require.Equal(t, Impossible, j, "seed %d step %d: remaining %d", seed, step, bad.Remaining)
			}
		}
	}
}

func clone(o *intervalOracle) *intervalOracle {
	c := &intervalOracle{max: o.max, window: o.window, logs: map[string][]span{}, joints: map[string]*joint{}}
	for u, l := range o.logs {
		c.logs[u] = append([]span(nil), l...)
	}
	for u, j := range o.joints {
		cj := *j
		cj.lo, cj.hi = slices.Clone(j.lo), slices.Clone(j.hi)
		cj.edges, cj.allowed = slices.Clone(j.edges), slices.Clone(j.allowed)
		c.joints[u] = &cj
	}
	return c
}

// TestIntervalJudgesTheWholeHistory: answers each possible alone but not
// together are impossible.
func TestIntervalJudgesTheWholeHistory(t *testing.T) {
	o, err := newInterval(1, time.Second)
	require.NoError(t, err)
	at := func(ms int64) time.Time { return time.UnixMilli(1_000_000 + ms) }
	j, _, _ := o.Judge(TimedOp{Kind: OpAllow, User: "u", Allowed: true, Lo: at(0), Hi: at(10)})
	assert.Equal(t, Certain, j)
	// Denied in [1004, 1006]: the entry must be at 5 or later.
	j, _, _ = o.Judge(TimedOp{Kind: OpAllow, User: "u", Allowed: false, Lo: at(1004), Hi: at(1006)})
	assert.Equal(t, Undecided, j)
	// Allowed at 1004: the entry must be at 4 or earlier. Alone, possible;
	// with the denial, no instants fit.
	alone := clone(o)
	alone.joints["u"].off = true
	j, _, _ = alone.Judge(TimedOp{Kind: OpAllow, User: "u", Allowed: true, Lo: at(1004), Hi: at(1004)})
	assert.Equal(t, Undecided, j, "judged alone it is possible")
	j, why, _ := o.Judge(TimedOp{Kind: OpAllow, User: "u", Allowed: true, Lo: at(1004), Hi: at(1004)})
	assert.Equal(t, Impossible, j, why)
}

func TestIntervalUnderUncertainty(t *testing.T) {
	base := time.UnixMilli(1_000_000)
	at := func(lo, hi int) (time.Time, time.Time) {
		return base.Add(time.Duration(lo) * time.Millisecond), base.Add(time.Duration(hi) * time.Millisecond)
	}
	o, err := newInterval(2, time.Second)
	require.NoError(t, err)
	judge := func(kind OpKind, lo, hi int, allowed bool, remaining int) Judgement {
		op := TimedOp{Kind: kind, User: "u", Allowed: allowed, Remaining: remaining}
		op.Lo, op.Hi = at(lo, hi)
		j, _, _ := o.Judge(op)
		return j
	}
	// Two entries in [0, 10] and [5, 15].
	assert.Equal(t, Certain, judge(OpAllow, 0, 10, true, 0))
	assert.Equal(t, Certain, judge(OpAllow, 5, 15, true, 0))
	// Within the window of both for sure: a third is denied, certainly.
	assert.Equal(t, Impossible, clone(o).mustJudge(TimedOp{Kind: OpAllow, User: "u", Allowed: true, Lo: base.Add(500 * time.Millisecond), Hi: base.Add(510 * time.Millisecond)}))
	// At [1005, 1012] the first entry may or may not have left: undecided either way.
	assert.Equal(t, Undecided, clone(o).mustJudge(TimedOp{Kind: OpAllow, User: "u", Allowed: true, Lo: base.Add(1005 * time.Millisecond), Hi: base.Add(1012 * time.Millisecond)}))
	assert.Equal(t, Undecided, clone(o).mustJudge(TimedOp{Kind: OpAllow, User: "u", Allowed: false, Lo: base.Add(1005 * time.Millisecond), Hi: base.Add(1012 * time.Millisecond)}))
	// Remaining in [1005, 1012]: anything from none to both may count, so 0 to 2 remain.
	assert.Equal(t, Undecided, clone(o).mustJudge(TimedOp{Kind: OpRemaining, User: "u", Remaining: 1, Lo: base.Add(1005 * time.Millisecond), Hi: base.Add(1012 * time.Millisecond)}))
	assert.Equal(t, Impossible, clone(o).mustJudge(TimedOp{Kind: OpRemaining, User: "u", Remaining: 3, Lo: base.Add(1005 * time.Millisecond), Hi: base.Add(1012 * time.Millisecond)}))
	// At [990, 995] both count for sure: 0 remain, certainly.
	assert.Equal(t, Certain, clone(o).mustJudge(TimedOp{Kind: OpRemaining, User: "u", Remaining: 0, Lo: base.Add(990 * time.Millisecond), Hi: base.Add(995 * time.Millisecond)}))
	// After both have left for sure: denied is impossible.
	assert.Equal(t, Impossible, clone(o).mustJudge(TimedOp{Kind: OpAllow, User: "u", Allowed: false, Lo: base.Add(1016 * time.Millisecond), Hi: base.Add(1020 * time.Millisecond)}))
}

func (o *intervalOracle) mustJudge(op TimedOp) Judgement {
	j, _, _ := o.Judge(op)
	return j
}

// TestIntervalIsSound: answers of the exact model at true instants are
// never impossible, whatever intervals around those instants the oracle is
// given.
func TestIntervalIsSound(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 11))
		n, w := 1+rng.IntN(4), time.Duration(100+rng.IntN(400))*time.Millisecond
		s, _ := newSlidingLog(n, w)
		o, _ := newInterval(n, w)
		now := time.UnixMilli(1_767_225_600_000)
		for step := range 120 {
			now = now.Add(time.Duration(rng.IntN(3)*rng.IntN(90)) * time.Millisecond)
			u := fmt.Sprint("u", rng.IntN(2))
			op := TimedOp{User: u, Lo: now.Add(-time.Duration(rng.IntN(25)) * time.Millisecond), Hi: now.Add(time.Duration(rng.IntN(25)) * time.Millisecond)}
			switch r := rng.IntN(10); {
			case r < 6:
				op.Kind = OpAllow
				op.Allowed, _ = s.Allow(now, u)
			case r < 9:
				op.Kind = OpRemaining
				op.Remaining, _ = s.Remaining(now, u)
			default:
				op.Kind = OpReset
				s.Reset(u)
			}
			j, why, _ := o.Judge(op)
			require.NotEqual(t, Impossible, j, "seed %d step %d: %+v: %s", seed, step, op, why)
		}
	}
}
