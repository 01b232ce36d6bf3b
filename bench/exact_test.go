package bench

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/model"
)

const ms = time.Millisecond

func call(user int32, o Outcome, sent, returned time.Duration) Decision {
	return Decision{User: user, Outcome: o, Sent: sent, Returned: returned}
}

func TestOvershootIsFoundWithItsWorstWindow(t *testing.T) {
	// Limit 3 per 100ms: four allowed within 10ms is an overshoot of one.
	ds := []Decision{
		call(1, Allowed, 0, 1*ms),
		call(1, Allowed, 2*ms, 3*ms),
		call(1, Allowed, 4*ms, 5*ms),
		call(1, Allowed, 6*ms, 7*ms),
		call(1, Denied, 8*ms, 9*ms),
		call(2, Allowed, 0, 1*ms), // another user: not counted with user 1
	}
	ex := Check(ds, 3, 100*ms, 10*ms)
	assert.Equal(t, 1, ex.Overshoot)
	require.NotNil(t, ex.Worst)
	assert.Equal(t, int32(1), ex.Worst.User)
	assert.Equal(t, 4, ex.Worst.Allowed)
	assert.Equal(t, time.Duration(0), ex.Worst.From)
	assert.Equal(t, 7*ms, ex.Worst.To)
	assert.Len(t, ex.Worst.Calls, 4)
	assert.Equal(t, 0, ex.UnderAdmitted)
	assert.Equal(t, 1, ex.UsersAtLimit)
	assert.False(t, ex.Exact())
}

func TestNoOvershootWhenSomeTimingExplainsIt(t *testing.T) {
	// Four allowed of limit 3 per 100ms, but the first call's answer came
	// late enough that it may have been decided 100ms before the last.
	ds := []Decision{
		call(1, Allowed, 0, 1*ms),
		call(1, Allowed, 2*ms, 3*ms),
		call(1, Allowed, 4*ms, 5*ms),
		call(1, Allowed, 60*ms, 99*ms), // 99+1 - (0-1) = 101 ≥ 100
	}
	ex := Check(ds, 3, 100*ms, 100*ms)
	assert.Equal(t, 0, ex.Overshoot)
	// Two slacks short of the window: proven.
	ds[3].Returned = 97*ms - 1
	ex = Check(ds, 3, 100*ms, 100*ms)
	assert.Equal(t, 1, ex.Overshoot)
}

func TestUnderAdmissionOnlyWhenNoTimingExplainsIt(t *testing.T) {
	ds := []Decision{
		call(1, Allowed, 0, 1*ms),
		call(1, Denied, 2*ms, 3*ms), // limit 2: only one could count
	}
	ex := Check(ds, 2, 100*ms, 10*ms)
	assert.Equal(t, 1, ex.UnderAdmitted)
	require.NotNil(t, ex.WorstUnder)
	assert.Equal(t, 1, ex.WorstUnder.Counted)
	assert.Len(t, ex.WorstUnder.Nearby, 1)

	// An errored call may have been allowed: it explains the denial.
	ds = append(ds, call(1, Errored, 1*ms, 50*ms))
	ex = Check(ds, 2, 100*ms, 60*ms)
	assert.Equal(t, 0, ex.UnderAdmitted)

	// An allowed call that left the window before the denied one was sent
	// does not count; one that may still be in it does.
	ds = []Decision{
		call(1, Allowed, 0, 1*ms),
		call(1, Allowed, 10*ms, 11*ms),
		// The first entry was made by 1ms, at 2ms at the latest by the
		// real-time rule (model.Admissible): it may count at an instant of
		// a call sent before 104ms (decided from 2ms before it was sent).
		call(1, Denied, 104*ms-1, 106*ms),
	}
	assert.Equal(t, 0, Check(ds, 2, 100*ms, 200*ms).UnderAdmitted)
	ds[2] = call(1, Denied, 104*ms, 106*ms)
	assert.Equal(t, 1, Check(ds, 2, 100*ms, 200*ms).UnderAdmitted)
}

// TestTheReferenceModelIsNeverFailed runs the exact model on random
// concurrent-looking schedules (each call decided at a random instant of its
// interval) and checks that the check never reports what the model did.
func TestTheReferenceModelIsNeverFailed(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		limit := 1 + r.IntN(5)
		window := time.Duration(5+r.IntN(50)) * ms
		m, err := model.Variant{}.New(limit, window)
		require.NoError(t, err)
		start := time.Unix(1_700_000_000, 0)
		var ds []Decision
		decided := time.Duration(0)
		for i := 0; i < 300; i++ {
			// Decisions in order, as a linearizable limiter makes them.
			decided += time.Duration(r.IntN(3000)) * time.Microsecond
			user := int32(r.IntN(3))
			ok, err := m.Allow(start.Add(decided), string(rune('a'+user)))
			require.NoError(t, err)
			o := Denied
			if ok {
				o = Allowed
			}
			// The call was sent up to 2ms before it was decided and
			// answered up to 2ms after.
			sent := decided - time.Duration(r.IntN(2000))*time.Microsecond
			ret := decided + time.Duration(r.IntN(2000))*time.Microsecond
			ds = append(ds, call(user, o, sent, ret))
		}
		ex := Check(ds, limit, window, decided+time.Second)
		require.True(t, ex.Exact(), "round %d: limit %d window %v: %+v", round, limit, window, ex)
	}
}

// TestAnOffByOneIsCaught: the same schedules on a log that admits N+1 are
// reported, so the property test above can fail.
func TestAnOffByOneIsCaught(t *testing.T) {
	m, err := model.Variant{}.New(4, 100*ms) // the limiter admits 4; the contract says 3
	require.NoError(t, err)
	start := time.Unix(1_700_000_000, 0)
	var ds []Decision
	for i := 0; i < 20; i++ {
		at := time.Duration(i) * ms
		o := Denied
		if ok, _ := m.Allow(start.Add(at), "u"); ok {
			o = Allowed
		}
		ds = append(ds, call(0, o, at, at+500*time.Microsecond))
	}
	ex := Check(ds, 3, 100*ms, 30*ms)
	assert.Equal(t, 1, ex.Overshoot)
	assert.Equal(t, 4, ex.Worst.Allowed)
}

// BenchmarkCheck measures the check per decision, for each kind of
// profile's rules: 1,000,000 decisions of
// 1,000 users at 100 per second, as a minute of load at about 16,000
// decisions a second would give.
func BenchmarkCheck(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	const n = 1_000_000
	ds := make([]Decision, n)
	for i := range ds {
		sent := time.Duration(i) * 60 * time.Microsecond
		o := Denied
		if r.IntN(4) == 0 {
			o = Allowed
		}
		ds[i] = call(int32(r.IntN(1000)), o, sent, sent+time.Duration(200+r.IntN(800))*time.Microsecond)
	}
	for _, spec := range []string{"sliding-log", "fixed-window", "fixed-window:align=first-hit", "sliding-counter", "gcra", "token-bucket:refill=interval"} {
		b.Run(spec, func(b *testing.B) {
			judge := Judge{Profile: model.MustVariant(spec), Limit: 100, Window: time.Second, Start: time.Unix(1_700_000_000, 0)}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := judge.Check(ds, time.Minute); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/decision")
		})
	}
}

// TestNeverStricterThanTheTruth: on one caller's histories (each call
// answered before the next is sent), made by logs with limits N-1, N and
// N+1 deciding at an instant of each call, the check never fails a history
// of the log of N (it is sound), and finds most histories of the others
// that the suite's real-time oracle (model.NewOracle, on the same rule in
// whole milliseconds) finds.
func TestNeverStricterThanTheTruth(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	start := time.Unix(1_700_000_000, 0)
	found, oracleFound, both := 0, 0, 0
	for round := 0; round < 400; round++ {
		limit := 2 + r.IntN(4)
		window := time.Duration(10+r.IntN(40)) * ms
		made := limit - 1 + r.IntN(3)
		m, err := model.Variant{}.New(made, window)
		require.NoError(t, err)
		oracle, err := model.NewOracle(model.MustVariant(model.ProfileSlidingLog), limit, window)
		require.NoError(t, err)
		var ds []Decision
		impossible := false
		at := time.Duration(0)
		for i := 0; i < 60; i++ {
			at += time.Duration(r.IntN(4000)) * time.Microsecond
			sent := at
			decided := sent + time.Duration(r.IntN(1500))*time.Microsecond
			at = decided + time.Duration(r.IntN(1500))*time.Microsecond
			ok, err := m.Allow(start.Add(decided), "u")
			require.NoError(t, err)
			o := Denied
			if ok {
				o = Allowed
			}
			ds = append(ds, call(0, o, sent, at))
			j, _, err := oracle.Judge(model.TimedOp{Kind: model.OpAllow, User: "u", Lo: start.Add(sent), Hi: start.Add(at), Allowed: ok})
			require.NoError(t, err)
			impossible = impossible || j == model.Impossible
		}
		ex := Check(ds, limit, window, at)
		if impossible {
			oracleFound++
		}
		if !ex.Exact() {
			found++
			require.NotEqual(t, limit, made, "round %d: the check reports %+v on a history of a correct log", round, ex)
			if impossible {
				both++
			}
		}
	}
	require.Positive(t, found, "no history had anything to find: the test proves nothing")
	require.Greater(t, both*10, oracleFound*8, "the check finds under 80%% of what the oracle finds")
	t.Logf("the check fails %d of 400 histories, none of a correct log; the oracle fails %d, %d of them found by both", found, oracleFound, both)
}

// TestExactOnAMicrosecondClock: a correct sliding log deciding in
// microseconds on a clock up to ±0.95 ms from the grader's, driven in real
// time with calls packed around its window edges, is exact by the check
// (which takes its spans from model.Admissible, as every oracle does).
func TestExactOnAMicrosecondClock(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	const window = 20 * ms
	for round := range 20 {
		offset := time.Duration(r.IntN(1900)-950) * time.Microsecond
		limit := 1 + r.IntN(3)
		var log []time.Time
		began := time.Now()
		var ds []Decision
		for time.Since(began) < 3*window {
			sent := time.Since(began)
			now := time.Now().Add(offset).Truncate(time.Microsecond)
			for len(log) > 0 && now.Sub(log[0]) >= window {
				log = log[1:]
			}
			o := Denied
			if len(log) < limit {
				log, o = append(log, now), Allowed
			}
			ds = append(ds, call(0, o, sent, time.Since(began)))
			time.Sleep(time.Duration(100+r.IntN(300)) * time.Microsecond)
		}
		ex := Check(ds, limit, window, time.Since(began))
		require.True(t, ex.Exact(), "round %d (offset %v, limit %d): %+v", round, offset, limit, ex)
	}
}
