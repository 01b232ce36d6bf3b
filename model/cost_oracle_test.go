package model

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/stretchr/testify/require"
)

// oracleMode is how a test gives an oracle the instants of a history.
type oracleMode struct {
	name string
	// widen is how far, at most, an interval reaches either side of the
	// true instant (0: a point).
	widen    int
	realTime bool
}

var oracleModes = []oracleMode{{"points", 0, false}, {"widened", 4, false}, {"real time", 4, true}}

// newTestOracle is spec's oracle for mode: the interval oracle for the
// sliding log, the search for the others; in real time, NewOracle's.
func newTestOracle(t *testing.T, spec string, mode oracleMode, n int, w time.Duration) Oracle {
	t.Helper()
	v := MustVariant(spec)
	if mode.realTime {
		o, err := NewOracle(v, n, w)
		require.NoError(t, err)
		return o
	}
	if v.IsSlidingLog() {
		o, err := newInterval(n, w)
		require.NoError(t, err)
		return o
	}
	o, err := newSearch(v, n, w)
	require.NoError(t, err)
	return o
}

// cloneOracle is an independent copy of o, to judge an answer on without
// taking it.
func cloneOracle(o Oracle) Oracle {
	switch o := o.(type) {
	case *intervalOracle:
		c := clone(o)
		c.realTime = o.realTime
		return c
	case *searchOracle:
		c := *o
		c.users = make(map[string]*searchUser, len(o.users))
		for u, su := range o.users {
			cu := *su
			cu.states = make([]cand, len(su.states))
			for i, st := range su.states {
				st.p = st.p.Clone().(Replayable)
				cu.states[i] = st
			}
			c.users[u] = &cu
		}
		return &c
	}
	panic(fmt.Sprintf("no clone of %T", o))
}

// TestWeightedOraclesAreSound: the interval oracle (the sliding log) and
// the search oracle (the others) never call impossible the answers of
// the model itself to requests of random costs, with point intervals,
// widened ones, and in real time; on point intervals they call the
// opposite answer of a weighted request impossible (the search until a
// change of configuration: its readings may then disagree).
func TestWeightedOraclesAreSound(t *testing.T) {
	seeds := testtier.Seeds(t, 6, 3)
	// A bucket's or a GCRA's fractions make a state per instant of a wide
	// interval: the widened histories take a sample of the variants.
	widened := testtier.Sample(t, "weighted specs", weightedSpecs, 12, func(s string) string { return s })
	for _, spec := range weightedSpecs {
		for _, mode := range oracleModes {
			if mode.widen > 0 && spec != ProfileSlidingLog && !slices.Contains(widened, spec) {
				continue
			}
			t.Run(spec+"/"+mode.name, func(t *testing.T) {
				for _, seed := range seeds {
					weightedHistory(t, spec, mode, seed)
				}
			})
		}
	}
}

// weightedHistory judges one random weighted history of spec's model.
func weightedHistory(t *testing.T, spec string, mode oracleMode, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 47))
	n, w := 1+rng.IntN(5), time.Duration(50+rng.IntN(400))*time.Millisecond
	p := profile(t, spec, n, w)
	o := newTestOracle(t, spec, mode, n, w)
	log := MustVariant(spec).IsSlidingLog()
	exact := mode.widen == 0
	now := time.UnixMilli(epochMs + rng.Int64N(1000))
	for step := range 80 {
		now = now.Add(time.Duration(rng.IntN(3)*rng.IntN(90)) * time.Millisecond)
		u := fmt.Sprint("u", rng.IntN(2))
		op := TimedOp{User: u,
			Lo: now.Add(-time.Duration(rng.IntN(mode.widen+1)) * time.Millisecond),
			Hi: now.Add(time.Duration(rng.IntN(mode.widen+1)) * time.Millisecond)}
		switch r := rng.IntN(100); {
		case r < 60:
			op.Kind, op.Cost = OpAllow, rng.IntN(capacity(t, spec, p.Limit())+2) // 0 is 1
			op.Allowed, _ = weighted(t, p).AllowN(now, u, op.cost())
		case r < 80:
			op.Kind = OpRemaining
			op.Remaining, _ = p.Remaining(now, u)
		case r < 88:
			op.Kind = OpReset
			p.Reset(u)
		default:
			nn, ww := 1+rng.IntN(5), time.Duration(50+rng.IntN(400))*time.Millisecond
			if log {
				ww = min(ww, p.Window()) // the log's oracle does not judge a raised window
			}
			p.Configure(now, nn, ww)
			op.Kind, op.Limit, op.Window = OpConfigure, nn, ww
			exact = exact && log // the search's readings may now disagree
		}
		where := fmt.Sprintf("%s, %s, seed %d step %d: %+v", spec, mode.name, seed, step, op)
		if exact && op.Kind == OpAllow && op.cost() > 1 {
			wrong := op
			wrong.Allowed = !op.Allowed
			j, _, err := cloneOracle(o).Judge(wrong)
			require.NoError(t, err)
			require.Equal(t, Impossible, j, "%s: the opposite answer", where)
		}
		j, why, err := o.Judge(op)
		require.NoError(t, err)
		require.NotEqual(t, Impossible, j, "%s: %s", where, why)
	}
}

// TestIntervalJudgesWeightedAnswersTogether: the joint takes a request of
// cost n as n entries at one instant, so answers to weighted requests each
// possible alone but not together are impossible.
func TestIntervalJudgesWeightedAnswersTogether(t *testing.T) {
	o, err := newInterval(3, time.Second)
	require.NoError(t, err)
	at := func(ms int64) time.Time { return time.UnixMilli(1_000_000 + ms) }
	j, _, _ := o.Judge(TimedOp{Kind: OpAllow, User: "u", Cost: 2, Allowed: true, Lo: at(0), Hi: at(10)})
	require.Equal(t, Certain, j)
	// Cost 2 denied in [1004, 1006]: with 2 entries, the pair counts, so
	// its instant is 5 or later.
	j, _, _ = o.Judge(TimedOp{Kind: OpAllow, User: "u", Cost: 2, Allowed: false, Lo: at(1004), Hi: at(1006)})
	require.Equal(t, Undecided, j)
	// A cost of 2 allowed at 1004 needs the pair gone: at 4 or earlier.
	alone := clone(o)
	alone.joints["u"].off = true
	j, _, _ = alone.Judge(TimedOp{Kind: OpAllow, User: "u", Cost: 2, Allowed: true, Lo: at(1004), Hi: at(1004)})
	require.Equal(t, Undecided, j, "judged alone it is possible")
	j, why, _ := clone(o).Judge(TimedOp{Kind: OpAllow, User: "u", Cost: 2, Allowed: true, Lo: at(1004), Hi: at(1004)})
	require.Equal(t, Impossible, j, why)
	// A unit request fits beside the pair whatever its instant; cost 4
	// never fits, and cost 1 denied is impossible.
	j, _, _ = clone(o).Judge(TimedOp{Kind: OpAllow, User: "u", Cost: 4, Allowed: true, Lo: at(1004), Hi: at(1004)})
	require.Equal(t, Impossible, j)
	j, _, _ = clone(o).Judge(TimedOp{Kind: OpAllow, User: "u", Allowed: false, Lo: at(1004), Hi: at(1004)})
	require.Equal(t, Impossible, j)
	j, _, _ = o.Judge(TimedOp{Kind: OpAllow, User: "u", Cost: 1, Allowed: true, Lo: at(1004), Hi: at(1004)})
	require.Equal(t, Certain, j)
}
