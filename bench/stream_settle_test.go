package bench

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/model"
)

// TestAnAdaptiveSettleGrowsWithTheDisorderSeen: by default the settling
// time is twice the most a call was read late (its end before the latest
// end read), from MinSettle to DefaultSettle, and only grows; one given is
// kept as it is, the lateness still reported.
func TestAnAdaptiveSettleGrowsWithTheDisorderSeen(t *testing.T) {
	base := time.Duration(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	at := time.Duration(0)
	// add adds a call that ends 10ms after the last one, or, late, one
	// that ends late before it.
	add := func(s *Stream, late time.Duration) {
		if late == 0 {
			at += 10 * time.Millisecond
		}
		end := base + at - late
		require.NoError(t, s.Add(StreamCall{User: []byte("u"), Outcome: Allowed, Sent: end - time.Millisecond, Returned: end}))
	}
	s, err := NewStream(Judge{Limit: 100, Window: time.Second}, StreamOptions{})
	require.NoError(t, err)
	for _, step := range []struct{ late, lateness, settle time.Duration }{
		{0, 0, MinSettle},
		{300 * ms, 300 * ms, MinSettle}, // twice 300ms is below the floor
		{2 * time.Second, 2 * time.Second, 4 * time.Second},
		{time.Second, 2 * time.Second, 4 * time.Second}, // it never shrinks
		{12 * time.Second, 12 * time.Second, 24 * time.Second},
		{40 * time.Second, 40 * time.Second, DefaultSettle}, // at most DefaultSettle
	} {
		add(s, 0)
		add(s, step.late)
		assert.Equal(t, step.lateness, s.res.Lateness, "late %v", step.late)
		assert.Equal(t, step.settle, s.settle, "late %v", step.late)
		assert.Equal(t, s.base+step.settle, s.ctx, "the context follows the settling time")
	}
	res := s.Finish()
	assert.True(t, res.Adaptive)
	assert.Equal(t, DefaultSettle, res.Settle)
	assert.Equal(t, DefaultSettle, res.Hold)

	given, err := NewStream(Judge{Limit: 100, Window: time.Second}, StreamOptions{Settle: 5 * time.Second})
	require.NoError(t, err)
	add(given, 0)
	add(given, 20*time.Second)
	res = given.Finish()
	assert.False(t, res.Adaptive)
	assert.Equal(t, 5*time.Second, res.Settle, "a settling time given is kept")
	assert.Equal(t, 20*time.Second, res.Lateness)
	assert.Zero(t, res.Held)
}

// slidingCalls are the calls of users sending calls per second in all
// (for seconds), each user at random, to an exact sliding log of limit
// per second, each call 1ms long, in the order they ended.
func slidingCalls(t *testing.T, r *rand.Rand, users, perSecond, seconds, limit int) []StreamCall {
	t.Helper()
	p := profileOf(t, "sliding-log", limit, time.Second)
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var calls []StreamCall
	for i := range perSecond * seconds {
		at := time.Duration(i) * time.Second / time.Duration(perSecond)
		user := fmt.Sprint("u", r.IntN(users))
		ok, err := p.Allow(start.Add(at), user)
		require.NoError(t, err)
		o := Denied
		if ok {
			o = Allowed
		}
		sent := time.Duration(start.UnixNano()) + at
		calls = append(calls, StreamCall{User: []byte(user), Outcome: o, Sent: sent, Returned: sent + time.Millisecond})
	}
	return calls
}

// TestADenseLogIsJudgedWithTheDefaults: a log too dense for a fixed 30s
// settling time (1,000 calls a second held more than 30s at once, past a
// MaxHeld of 20,000) is judged with the default, adaptive one: in order,
// it settles in MinSettle, holding a few seconds of calls.
func TestADenseLogIsJudgedWithTheDefaults(t *testing.T) {
	calls := slidingCalls(t, rand.New(rand.NewPCG(1, 2)), 50, 1000, 60, 5)
	judge := Judge{Limit: 5, Window: time.Second}
	const maxHeld = 20_000
	fixed, err := NewStream(judge, StreamOptions{Settle: DefaultSettle, MaxHeld: maxHeld})
	require.NoError(t, err)
	var tooDense error
	for _, c := range calls {
		if tooDense = fixed.Add(c); tooDense != nil {
			break
		}
	}
	require.ErrorIs(t, tooDense, ErrTooDense, "a fixed 30s holds more than 20,000 calls of this log")

	s, err := NewStream(judge, StreamOptions{MaxHeld: maxHeld})
	require.NoError(t, err)
	for _, c := range calls {
		require.NoError(t, s.Add(c))
	}
	res := s.Finish()
	require.True(t, res.Exactness.Exact(), "%+v", res.Exactness)
	assert.Positive(t, res.Exactness.Decided)
	assert.Equal(t, MinSettle, res.Settle)
	assert.Less(t, res.Kept, maxHeld/2, "held within half of MaxHeld, never hurried")
	assert.Zero(t, res.Hurried)
	t.Logf("held at most %d calls, settle %v, lateness %v", res.Kept, res.Settle, res.Lateness)
}

// TestADenialThatLooksUnexplainedWaitsForLinesReadLate: with the adaptive
// settling time (1s here), a part whose denial looks unexplained waits
// DefaultSettle past it: the admission that explains it, read 10s late,
// explains it. Read 40s late it comes after the denial was judged: the
// denial is not proven, never failed. A settling time given waits no
// longer than itself.
func TestADenialThatLooksUnexplainedWaitsForLinesReadLate(t *testing.T) {
	base := time.Duration(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	run := func(opts StreamOptions, late time.Duration) *StreamResult {
		s, err := NewStream(Judge{Limit: 2, Window: time.Second}, opts)
		require.NoError(t, err)
		add := func(user string, o Outcome, sent, returned time.Duration) {
			require.NoError(t, s.Add(StreamCall{User: []byte(user), Outcome: o, Sent: base + sent, Returned: base + returned}))
		}
		add("u", Allowed, 0, time.Millisecond)
		add("u", Denied, 10*ms, 11*ms) // one allowed of two so far
		for i := range 600 {           // a minute of other users, every 100ms
			at := time.Duration(i+1) * 100 * ms
			add(fmt.Sprint("o", i), Allowed, at, at+time.Millisecond)
			if at == late {
				add("u", Allowed, 5*ms, 6*ms) // u's other admission, read late
			}
		}
		return s.Finish()
	}
	res := run(StreamOptions{}, 10*time.Second)
	assert.True(t, res.Exactness.Exact(), "%+v", res.Exactness.WorstUnder)
	assert.False(t, res.UnderUnproven)
	assert.Equal(t, int64(1), res.Held, "the part waited")
	assert.Equal(t, 2*res.Lateness, res.Settle, "the line 10s late made it 20s, after the part was held at 1s")
	assert.InDelta(t, 10*time.Second, res.Lateness, float64(10*ms))

	res = run(StreamOptions{}, 40*time.Second)
	assert.Equal(t, 1, res.Exactness.UnderAdmitted)
	assert.True(t, res.UnderUnproven, "read after the denial was judged: not proven")
	assert.Equal(t, int64(1), res.Late)

	res = run(StreamOptions{Settle: time.Second}, 10*time.Second)
	assert.True(t, res.UnderUnproven, "a settling time given is as it was: 1s")
	assert.Zero(t, res.Held)
}

// TestAnAdaptiveStreamNeverFailsAProfileByItsOwnRules: histories of every
// profile's own model, read out of order (most calls a little, some far
// later than any settling time), judged by a Stream whose settling time
// adapts (scaled down: from 1ms to 100ms), with parts held and, with a
// small MaxHeld, hurried, are never failed; a finding they might undo is
// at most not proven.
func TestAnAdaptiveStreamNeverFailsAProfileByItsOwnRules(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	rounds := testtier.Runs(600, 150)
	var held, hurried, late, dense int64
	for round := range rounds {
		spec := specs[round%len(specs)]
		n := 1 + r.IntN(6)
		w := time.Duration(2+r.IntN(30)) * ms
		gap := time.Duration(100+r.IntN(3000)) * time.Microsecond
		h := makeHistory(t, r, profileOf(t, spec, n, w), 600, gap)
		j := Judge{Profile: model.MustVariant(spec), Limit: n, Window: w}
		opts := StreamOptions{ErrorGrace: time.Hour}
		if r.IntN(3) == 0 {
			opts.MaxHeld = 60 + r.IntN(200)
		}
		s, err := newStream(j, opts, ms, 100*ms)
		require.NoError(t, err)
		if err := addDisordered(s, h, r); errors.Is(err, ErrTooDense) {
			dense++
			continue
		} else {
			require.NoError(t, err)
		}
		res := s.Finish()
		ex := res.Exactness
		require.True(t, ex.Overshoot == 0 && (ex.UnderAdmitted == 0 || res.UnderUnproven),
			"round %d: %s, %d per %v: a correct history failed when streamed: overshoot %d %+v, under %d %+v",
			round, spec, n, w, ex.Overshoot, ex.Worst, ex.UnderAdmitted, ex.WorstUnder)
		held, hurried, late = held+res.Held, hurried+res.Hurried, late+res.Late
	}
	t.Logf("%d rounds: %d parts held, %d sweeps hurried, %d calls read late, %d too dense", rounds, held, hurried, late, dense)
	assert.Positive(t, held, "parts were held")
	assert.Positive(t, hurried, "sweeps were hurried")
	assert.Less(t, dense, int64(rounds/6), "most rounds were judged")
}

// addDisordered adds h's calls to s as two buffered workers write them:
// the first as they end (up to 1ms late), the second in batches every
// 2ms to 40ms, and one call in 200 up to 300ms late (past the longest
// settling time).
func addDisordered(s *Stream, h history, r *rand.Rand) error {
	order := make([]int, len(h.calls))
	keys := make([]time.Duration, len(h.calls))
	flush := time.Duration(2+r.IntN(149)) * ms
	for i, c := range h.calls {
		order[i], keys[i] = i, c.Returned+time.Duration(r.Int64N(int64(ms)))
		if r.IntN(2) == 0 {
			keys[i] = (c.Returned/flush + 1) * flush
		}
		if r.IntN(200) == 0 {
			keys[i] += time.Duration(r.Int64N(int64(300 * ms)))
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(keys[a], keys[b]) })
	base := time.Duration(h.start.UnixNano())
	for _, i := range order {
		c := h.calls[i]
		if err := s.Add(StreamCall{User: fmt.Append(nil, "u", c.User), Outcome: c.Outcome, Sent: base + c.Sent, Returned: base + c.Returned, Ref: uint64(i)}); err != nil {
			return err
		}
	}
	return nil
}
