package model

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheIssuesEdgeCase is the case that showed the interval rule written
// three ways: a correct limiter on a clock 0.5 ms ahead of the grader's
// logs an entry at its ms 1 for a call the grader saw in [0.55, 0.65], and
// correctly denies at its ms 1000 a call seen in [1000.35, 1000.45].
func TestTheIssuesEdgeCase(t *testing.T) {
	at := func(us int64) time.Time { return time.UnixMicro(1_700_000_000_000_000 + us) }
	for _, spec := range []Variant{MustVariant(ProfileSlidingLog), MustVariant("fixed-window:align=first-hit")} {
		o, err := NewOracle(spec, 1, time.Second)
		require.NoError(t, err)
		j, why, err := o.Judge(TimedOp{Kind: OpAllow, User: "u", Allowed: true, Lo: at(550), Hi: at(650)})
		require.NoError(t, err)
		require.NotEqual(t, Impossible, j, why)
		j, why, err = o.Judge(TimedOp{Kind: OpAllow, User: "u", Allowed: false, Lo: at(1_000_350), Hi: at(1_000_450)})
		require.NoError(t, err)
		assert.NotEqual(t, Impossible, j, "%s: %s", spec, why)
	}
}

// microLimiter is a correct sliding log deciding in microseconds on a
// clock offset from the real one.
type microLimiter struct {
	mu     sync.Mutex
	offset time.Duration
	n      int
	w      time.Duration
	log    []time.Time
}

func (m *microLimiter) allow() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now().Add(m.offset).Truncate(time.Microsecond)
	for len(m.log) > 0 && now.Sub(m.log[0]) >= m.w {
		m.log = m.log[1:]
	}
	if len(m.log) >= m.n {
		return false
	}
	m.log = append(m.log, now)
	return true
}

// TestRealTimeRuleOnAMicrosecondClock drives, in real time, a correct
// limiter deciding in microseconds on a clock offset from the grader's by
// up to ±0.95 ms, with calls packed around each window edge, and judges
// every answer with the real-time oracles (the sliding log's and the
// search over the same profile): none may be impossible. Without the
// shared rule (model.Admissible), the sliding log's oracle failed such
// limiters at window edges.
func TestRealTimeRuleOnAMicrosecondClock(t *testing.T) {
	rounds := 40
	if testing.Short() {
		rounds = 8
	}
	r := rand.New(rand.NewPCG(11, 12))
	const w = 20 * time.Millisecond
	judged := 0
	for round := range rounds {
		lim := &microLimiter{offset: time.Duration(r.IntN(1900)-950) * time.Microsecond, n: 1 + r.IntN(3), w: w}
		interval, err := NewOracle(MustVariant(ProfileSlidingLog), lim.n, w)
		require.NoError(t, err)
		search, err := newSearch(MustVariant(ProfileSlidingLog), lim.n, w)
		require.NoError(t, err)
		search.realTime = true
		began := time.Now()
		var steps []string
		for time.Since(began) < 3*w {
			sent := time.Now()
			ok := lim.allow()
			returned := time.Now()
			op := TimedOp{Kind: OpAllow, User: "u", Allowed: ok, Lo: sent, Hi: returned}
			steps = append(steps, sent.Sub(began).String()+" "+allowedWordTest(ok))
			for _, o := range []Oracle{interval, search} {
				j, why, err := o.Judge(op)
				require.NoError(t, err)
				require.NotEqual(t, Impossible, j, "round %d (offset %v, limit %d): %s\n%v", round, lim.offset, lim.n, why, steps)
			}
			judged++
			// Calls every 100-400 µs: many land within a millisecond of
			// an entry's edge.
			time.Sleep(time.Duration(100+r.IntN(300)) * time.Microsecond)
		}
	}
	t.Logf("%d answers judged over %d rounds, none impossible", judged, rounds)
}

func allowedWordTest(ok bool) string {
	if ok {
		return "allowed"
	}
	return "denied"
}

// TestNoIntervalIsAnError: an answer without its interval is refused with
// ErrNoInterval by both oracles, and leaves them as they were.
func TestNoIntervalIsAnError(t *testing.T) {
	for _, spec := range []Variant{MustVariant(ProfileSlidingLog), MustVariant("gcra")} {
		o, err := NewOracle(spec, 2, time.Second)
		require.NoError(t, err)
		now := time.Now()
		_, _, err = o.Judge(TimedOp{Kind: OpAllow, User: "u", Allowed: true, Lo: now, Hi: now})
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() {
			_, _, err := o.Judge(TimedOp{Kind: OpAllow, User: "u", Allowed: true})
			done <- err
		}()
		select {
		case err := <-done:
			require.ErrorIs(t, err, ErrNoInterval, spec.String())
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Judge of an operation without an interval did not return", spec)
		}
		_, _, err = o.Judge(TimedOp{Kind: OpRemaining, User: "u", Lo: now})
		require.ErrorIs(t, err, ErrNoInterval)
		j, why, err := o.Judge(TimedOp{Kind: OpAllow, User: "u", Allowed: true, Lo: now, Hi: now.Add(time.Millisecond)})
		require.NoError(t, err)
		require.NotEqual(t, Impossible, j, why)
	}
}

// longHistory judges k answers of one user of a correct log of 5 per 100
// ms, one call every millisecond, each seen over 300 µs, in real time.
func longHistory(tb testing.TB, k int) {
	o, err := NewOracle(MustVariant(ProfileSlidingLog), 5, 100*time.Millisecond)
	require.NoError(tb, err)
	m, err := newSlidingLog(5, 100*time.Millisecond)
	require.NoError(tb, err)
	base := time.UnixMilli(1_700_000_000_000)
	for i := range k {
		sent := base.Add(time.Duration(i) * time.Millisecond)
		ok, _ := m.Allow(sent, "u")
		j, why, err := o.Judge(TimedOp{Kind: OpAllow, User: "u", Allowed: ok, Lo: sent, Hi: sent.Add(300 * time.Microsecond)})
		require.NoError(tb, err)
		require.NotEqual(tb, Impossible, j, why)
	}
}

// BenchmarkIntervalLongHistory: the cost of one user's history of k
// answers. The joint system holds what can still change an answer (about
// one window's operations), so the cost grows linearly in k; it grew as
// k³ when the system kept every answer.
func BenchmarkIntervalLongHistory(b *testing.B) {
	for _, k := range []int{500, 2000, 8000} {
		b.Run(fmt.Sprintf("answers=%d", k), func(b *testing.B) {
			for b.Loop() {
				longHistory(b, k)
			}
		})
	}
}

// TestIntervalSettles: a long history still catches a wrong answer at its
// end (settling keeps what can still change an answer).
func TestIntervalSettles(t *testing.T) {
	longHistory(t, 3000)
	o, err := NewOracle(MustVariant(ProfileSlidingLog), 2, 100*time.Millisecond)
	require.NoError(t, err)
	base := time.UnixMilli(1_700_000_000_000)
	for i := range 3000 { // allowed every 60 ms: a correct log of 2 per 100 ms
		at := base.Add(time.Duration(i*60) * time.Millisecond)
		j, why, err := o.Judge(TimedOp{Kind: OpAllow, User: "u", Allowed: true, Lo: at, Hi: at.Add(time.Millisecond)})
		require.NoError(t, err)
		require.NotEqual(t, Impossible, j, why)
	}
	at := base.Add(3000*60*time.Millisecond - 50*time.Millisecond)
	j, _, err := o.Judge(TimedOp{Kind: OpAllow, User: "u", Allowed: true, Lo: at, Hi: at.Add(time.Millisecond)})
	require.NoError(t, err)
	assert.Equal(t, Impossible, j, "a third allowed within 100 ms after 3,000 answers")
	assert.Less(t, len(o.(*intervalOracle).joints["u"].lo), settleAt(2)+8, "the joint system holds what can still change an answer")
}
