package bench

import (
	"cmp"
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

// streamed judges h's calls with a Stream, added in the order they ended
// (as a log holds them), shuffled within jitter, each call's Ref its
// index in h.calls.
func streamed(t *testing.T, h history, j Judge, opts StreamOptions, r *rand.Rand, jitter time.Duration) *StreamResult {
	t.Helper()
	s, err := NewStream(j, opts)
	require.NoError(t, err)
	order := make([]int, len(h.calls))
	keys := make([]time.Duration, len(h.calls))
	for i, c := range h.calls {
		order[i] = i
		keys[i] = c.Returned
		if jitter > 0 {
			keys[i] += time.Duration(r.Int64N(int64(jitter)))
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(keys[a], keys[b]) })
	base := time.Duration(h.start.UnixNano())
	for _, i := range order {
		c := h.calls[i]
		require.NoError(t, s.Add(StreamCall{User: fmt.Append(nil, "u", c.User), Outcome: c.Outcome, Sent: base + c.Sent, Returned: base + c.Returned, Ref: uint64(i)}))
	}
	return s.Finish()
}

// TestAStreamNeverFailsAProfileByItsOwnRules: histories of every profile's
// own model, judged in parts by a Stream whose context is a fraction of
// the run (parts, calls let go, a bucket's carry), read a little out of
// order, are never failed: the streaming judge is as sound as the whole
// one. The same histories of limiters that admit more are caught.
func TestAStreamNeverFailsAProfileByItsOwnRules(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	rounds := testtier.Runs(600, 150)
	parts := 0
	for round := range rounds {
		spec := specs[round%len(specs)]
		n := 1 + r.IntN(6)
		w := time.Duration(2+r.IntN(30)) * ms
		gap := time.Duration(100+r.IntN(3000)) * time.Microsecond
		h := makeHistory(t, r, profileOf(t, spec, n, w), 600, gap)
		j := Judge{Profile: model.MustVariant(spec), Limit: n, Window: w}
		opts := StreamOptions{Settle: time.Duration(1+r.IntN(5)) * ms, ErrorGrace: time.Hour}
		res := streamed(t, h, j, opts, r, opts.Settle)
		ex := res.Exactness
		require.True(t, ex.Exact(), "round %d: %s, %d per %v: a correct history failed when streamed: overshoot %d %+v, under %d %+v",
			round, spec, n, w, ex.Overshoot, ex.Worst, ex.UnderAdmitted, ex.WorstUnder)
		require.Equal(t, int64(len(h.calls)), res.Calls)
		if res.Kept < len(h.calls) {
			parts++
		}
	}
	assert.Greater(t, parts, rounds*9/10, "most runs were judged in parts, with calls let go")
}

// TestAStreamCatchesWhatTheWholeJudgeCatches: limiters that admit more or
// less than the profile judged, as in TestOverAdmissionIsCaught: judged
// in parts, the stream catches most of the histories the whole judge
// catches, and nothing it does not.
func TestAStreamCatchesWhatTheWholeJudgeCatches(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, tc := range []struct{ claimed, made string }{
		{"sliding-log", "sliding-log+1"},
		{"gcra:burst=3", "gcra:burst=4"},
		{"gcra:burst=3", "gcra:burst=2"},
		{"fixed-window:align=epoch", "fixed-window:align=epoch+1"},
		{"sliding-log", "fixed-window:align=epoch"},
	} {
		whole, stream, both := 0, 0, 0
		for range testtier.Runs(60, 20) {
			n := 2 + r.IntN(4)
			w := time.Duration(5+r.IntN(20)) * ms
			made, limit := tc.made, n
			if base, ok := cutSuffix(made, "+1"); ok {
				made, limit = base, n+1
			}
			h := makeHistory(t, r, profileOf(t, made, limit, w), 400, 2*ms)
			j := Judge{Profile: model.MustVariant(tc.claimed), Limit: n, Window: w, Start: h.start}
			ex, err := j.Check(h.calls, h.end+time.Hour)
			require.NoError(t, err)
			res := streamed(t, h, j, StreamOptions{Settle: 2 * ms, ErrorGrace: time.Hour}, r, ms)
			whole += b2i(!ex.Exact())
			stream += b2i(!res.Exactness.Exact())
			both += b2i(!ex.Exact() && !res.Exactness.Exact())
		}
		t.Logf("%s judged as %s: the whole judge failed %d, the stream %d, both %d", tc.made, tc.claimed, whole, stream, both)
		assert.Positive(t, whole, tc.made)
		assert.GreaterOrEqual(t, both*10, whole*8, "%s as %s: the stream misses what the whole judge finds", tc.made, tc.claimed)
	}
}

func cutSuffix(s, suffix string) (string, bool) {
	if len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix {
		return s[:len(s)-len(suffix)], true
	}
	return s, false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestAStreamKeepsAWindowNotTheLog: a long log of a busy user and of many
// passing ones is held a context at a time: the calls kept at once do not
// grow with the calls read, and users idle past the context are
// forgotten.
func TestAStreamKeepsAWindowNotTheLog(t *testing.T) {
	const perSecond = 1000
	kept := map[int]int{}
	for _, seconds := range []int{20, 80} {
		s, err := NewStream(Judge{Limit: 10, Window: time.Second}, StreamOptions{Settle: time.Second})
		require.NoError(t, err)
		base := time.Duration(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
		for i := range seconds * perSecond {
			at := base + time.Duration(i)*time.Second/perSecond
			// A busy user allowed its 10 at the start of each second,
			// denied the rest; passing users of 5 calls each, then never
			// again.
			user, o := fmt.Appendf(nil, "passing-%d", i/10), Allowed
			if i%2 == 0 {
				user, o = []byte("busy"), Denied
				if i%perSecond < 20 {
					o = Allowed
				}
			}
			require.NoError(t, s.Add(StreamCall{User: user, Outcome: o, Sent: at, Returned: at + time.Millisecond}))
		}
		// 100 passing users a second, forgotten a few seconds later.
		assert.Less(t, len(s.users), 1000, "users idle past the context are forgotten")
		res := s.Finish()
		require.True(t, res.Exactness.Exact(), "%+v\n%+v\n%+v", res.Exactness, res.Exactness.Worst, res.Exactness.WorstUnder)
		kept[seconds] = res.Kept
		assert.Equal(t, int64(seconds*perSecond/10+1), res.Users)
		assert.Equal(t, int64(seconds*perSecond), res.Calls)
	}
	t.Logf("the most calls kept at once: %v", kept)
	assert.Less(t, kept[80], kept[20]*3/2, "the calls kept grow with the log")
}

// A denial that a call read later could explain (a request longer than
// the settling time, logged at its end) is not proven: the finding says
// so. A denial whose span reaches back past the calls let go is not
// judged.
func TestLateCallsUnproveWhatTheyMightExplain(t *testing.T) {
	base := time.Duration(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	s, err := NewStream(Judge{Limit: 2, Window: time.Second}, StreamOptions{Settle: time.Second})
	require.NoError(t, err)
	add := func(user string, o Outcome, sent, returned time.Duration) {
		require.NoError(t, s.Add(StreamCall{User: []byte(user), Outcome: o, Sent: base + sent, Returned: base + returned}))
	}
	add("u", Allowed, 0, time.Millisecond)
	add("u", Denied, 10*time.Millisecond, 11*time.Millisecond) // one allowed of two: unexplained so far
	for i := range 60 {                                        // the log goes on: u's denial is judged
		at := time.Duration(i+1) * time.Second
		add("other", Allowed, at, at+time.Millisecond)
	}
	require.Equal(t, 1, s.res.Exactness.UnderAdmitted)
	require.False(t, s.res.UnderUnproven)
	// A minute-long request of u, begun before its denial, ends now.
	add("u", Allowed, 5*time.Millisecond, 61*time.Second)
	res := s.Finish()
	assert.True(t, res.UnderUnproven)
	assert.Equal(t, int64(1), res.Late)
}

// The evidence of a finding gives back the Refs of its calls, and its
// instants as they were added, the skew assumed taken off.
func TestAFindingGivesItsCallsRefs(t *testing.T) {
	base := time.Duration(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	s, err := NewStream(Judge{Limit: 2, Window: time.Second}, StreamOptions{ClockSkew: 5 * time.Millisecond})
	require.NoError(t, err)
	for i := range 3 {
		at := base + time.Duration(i)*100*time.Millisecond
		require.NoError(t, s.Add(StreamCall{User: []byte("u"), Outcome: Allowed, Sent: at, Returned: at + time.Millisecond, Ref: uint64(100 + i)}))
	}
	res := s.Finish()
	require.Equal(t, 1, res.Exactness.Overshoot)
	w := res.Exactness.Worst
	assert.Equal(t, "u", w.UserID)
	assert.Equal(t, []uint64{100, 101, 102}, res.WorstRefs)
	assert.Equal(t, base, w.Calls[0].Sent)
	assert.Equal(t, base+201*time.Millisecond, w.Calls[2].Returned)
	assert.True(t, res.Skew.Explained)
	// Widened by D each way, the span of the three is 204ms + 2D: a window
	// from D = 398ms.
	assert.Equal(t, 398*time.Millisecond, res.Skew.Smallest, "three calls 200ms apart in a 1s window need clocks about 400ms apart")
}

func TestAStreamRefusesWhatItCannotJudge(t *testing.T) {
	_, err := NewStream(Judge{Limit: 0, Window: time.Second}, StreamOptions{})
	assert.Error(t, err)
	_, err = NewStream(Judge{Limit: 1, Window: time.Second}, StreamOptions{ClockSkew: -1})
	assert.Error(t, err)
	s, err := NewStream(Judge{Limit: 1, Window: time.Second}, StreamOptions{})
	require.NoError(t, err)
	at := time.Duration(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	for name, c := range map[string]StreamCall{
		"no user":        {Sent: at, Returned: at},
		"a huge user":    {User: make([]byte, MaxStreamUser+1), Sent: at, Returned: at},
		"backwards":      {User: []byte("u"), Sent: at + 1, Returned: at},
		"before 1970":    {User: []byte("u"), Sent: -1, Returned: at},
		"a day and more": {User: []byte("u"), Sent: at - 25*time.Hour, Returned: at},
		"no outcome":     {User: []byte("u"), Sent: at, Returned: at, Outcome: Other + 1},
	} {
		assert.Error(t, s.Add(c), name)
	}
	assert.Zero(t, s.Finish().Calls)
}

// A denial whose span reaches back to calls let go (a request of
// seconds, logged at its end) is not judged, even when its user was
// forgotten in between: judged without the admission it overlaps, it
// would look unexplained.
func TestADenialReachingPastTheCallsKeptIsNotJudged(t *testing.T) {
	base := time.Duration(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	s, err := NewStream(Judge{Limit: 1, Window: 100 * time.Millisecond}, StreamOptions{Settle: 10 * time.Millisecond})
	require.NoError(t, err)
	add := func(user string, o Outcome, sent, returned time.Duration) {
		require.NoError(t, s.Add(StreamCall{User: []byte(user), Outcome: o, Sent: base + sent, Returned: base + returned}))
	}
	add("u", Allowed, 0, time.Millisecond)
	for i := range 1000 { // 10s of other users: u's admission is let go, u forgotten
		at := time.Duration(i+1) * 10 * time.Millisecond
		add(fmt.Sprint("o", i), Allowed, at, at+time.Millisecond)
	}
	require.NotContains(t, s.users, "u")
	add("u", Denied, 50*time.Millisecond, 10*time.Second)
	res := s.Finish()
	assert.True(t, res.Exactness.Exact(), "%+v", res.Exactness.WorstUnder)
	assert.Equal(t, int64(1), res.Unjudged)
}

// A bucket's user met anew, after its calls were let go and it was
// forgotten, may still hold a bucket not full: its first denials are not
// judged until the bucket could have refilled (it would look as if it had
// a full bucket to spend).
func TestABucketMetAnewIsNotJudgedBeforeItCouldRefill(t *testing.T) {
	const w = 100 * time.Millisecond
	p := profileOf(t, "token-bucket:capacity=10", 1, w)
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := NewStream(Judge{Profile: model.MustVariant("token-bucket:capacity=10"), Limit: 1, Window: w}, StreamOptions{Settle: time.Millisecond})
	require.NoError(t, err)
	add := func(user string, at time.Duration) {
		ok, err := p.Allow(base.Add(at), user)
		require.NoError(t, err)
		o := Denied
		if ok {
			o = Allowed
		}
		require.NoError(t, s.Add(StreamCall{User: []byte(user), Outcome: o, Sent: time.Duration(base.UnixNano()) + at, Returned: time.Duration(base.UnixNano()) + at + 100*time.Microsecond}))
	}
	for i := range 12 { // the bucket spent, then denied
		add("u", time.Duration(i)*time.Millisecond)
	}
	for i := range 60 { // 600ms of another user: u let go and forgotten, its bucket 6 tokens back
		add(fmt.Sprint("o", i), 20*time.Millisecond+time.Duration(i)*10*time.Millisecond)
	}
	require.NotContains(t, s.users, "u")
	for i := range 10 { // 6 allowed, then denied: a full bucket would allow 10
		add("u", 700*time.Millisecond+time.Duration(i)*time.Millisecond)
	}
	res := s.Finish()
	assert.True(t, res.Exactness.Exact(), "%+v", res.Exactness.WorstUnder)
	assert.Positive(t, res.Unjudged)
}

// TestAStreamRefusesMoreCallsThanItHolds: a log denser than MaxHeld
// within a part's context (a flood of one user in one millisecond) is
// refused with ErrTooDense rather than held whole; the same calls spread
// past the context are taken, as they are let go.
func TestAStreamRefusesMoreCallsThanItHolds(t *testing.T) {
	base := time.Duration(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	add := func(spacing time.Duration) error {
		s, err := NewStream(Judge{Limit: 5, Window: time.Second}, StreamOptions{Settle: time.Second, MaxHeld: 100})
		require.NoError(t, err)
		for i := range 1000 {
			at := base + time.Duration(i)*spacing
			if err := s.Add(StreamCall{User: []byte("flood"), Outcome: Denied, Sent: at, Returned: at + time.Millisecond}); err != nil {
				return err
			}
		}
		s.Finish()
		return nil
	}
	err := add(0)
	require.ErrorIs(t, err, ErrTooDense)
	assert.Contains(t, err.Error(), "100 calls within")
	assert.NoError(t, add(time.Second), "one call a second: a few held at once")
}
