package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// At 5 per second (T = 200ms), Guava's RateLimiter.create(5.0): a fresh
// user gets one request at once (nothing stored, one lent), then one
// every T; idle for a second it has stored 5 permits, and gets 6 at once.
func TestSmoothBurstyStoresASecondOfPermits(t *testing.T) {
	p := profile(t, "smooth-bursty", 5, time.Second)
	assert.Equal(t, []bool{true, false, false, true}, answers(p, "u", 0, 0, 199, 200), "fresh: one lent, then one every 200ms")
	left, err := p.Remaining(atMs(200), "u")
	require.NoError(t, err)
	assert.Equal(t, 0, left, "owed until 400ms")
	// Idle from 400ms (its next) to 1400ms: 5 permits stored.
	left, _ = p.Remaining(atMs(1400), "u")
	assert.Equal(t, 6, left, "5 stored and one lent")
	assert.Equal(t, []bool{true, true, true, true, true, true, false}, answers(p, "u", 1400, 1400, 1400, 1400, 1400, 1400, 1400))
	assert.Equal(t, 200*time.Millisecond, p.RetryAfter(atMs(1400), "u"))
	// Idle far longer stores no more than a second's worth.
	left, _ = p.Remaining(atMs(100_000), "u")
	assert.Equal(t, 6, left)
}

// At 5 per minute (T = 12s) a second of permits is 1/12 of one: a fresh
// user gets one request, then one 12s later; after an idle spell, the
// next request but one comes 11s after it, not 12s, which a GCRA of
// burst 1 (gcra:burst=1,cost=debt, the profile Guava was graded as)
// denies.
func TestSmoothBurstyAtAMinuteIsNotABurstOfOne(t *testing.T) {
	guava := profile(t, "smooth-bursty", 5, time.Minute)
	gcra := profile(t, "gcra:burst=1,cost=debt", 5, time.Minute)
	for _, p := range []Replayable{guava, gcra} {
		assert.Equal(t, []bool{true, false, true}, answers(p, "u", 0, 11_999, 12_000), p.Describe())
	}
	// Idle from 24s (its next) to 36s: 1s of permits stored.
	assert.Equal(t, []bool{true, true}, answers(guava, "u", 36_000, 47_000))
	assert.Equal(t, []bool{true, false}, answers(gcra, "u", 36_000, 47_000))
}

// A request of any cost is allowed while nothing is owed, paid from the
// stored permits first (cost=debt, as Guava's tryAcquire(n)); a change
// of the rate keeps the stored permits as a time, and next.
func TestSmoothBurstyCostAndChange(t *testing.T) {
	p := profile(t, "smooth-bursty", 5, time.Second)
	w := weighted(t, p)
	ok, err := w.AllowN(atMs(0), "u", 7)
	require.NoError(t, err)
	assert.True(t, ok, "cost 7, above the limit, with nothing owed")
	assert.Equal(t, 1400*time.Millisecond, p.RetryAfter(atMs(0), "u"), "7 × 200ms owed")
	// Idle from 1400ms to 3400ms: a second stored (5 permits), so a cost
	// of 3 is paid in full and leaves 2 stored.
	ok, _ = w.AllowN(atMs(3400), "u", 3)
	assert.True(t, ok)
	left, _ := p.Remaining(atMs(3400), "u")
	assert.Equal(t, 3, left, "2 stored and one lent")
	// Halve the rate at 3400ms: the 400ms stored stay 400ms, one permit
	// of the new 400ms interval.
	require.NoError(t, p.Configure(atMs(3400), 5, 2*time.Second))
	left, _ = p.Remaining(atMs(3400), "u")
	assert.Equal(t, 2, left, "400ms stored is one permit of 400ms, and one lent")
	ok, _ = w.AllowN(atMs(3400), "u", 0)
	assert.True(t, ok, "cost 0 changes nothing")
	_, err = w.AllowN(atMs(3400), "u", -1)
	assert.Error(t, err)
	require.NoError(t, p.Reset("u"))
	assert.Equal(t, []bool{true, false}, answers(p, "u", 3400, 3400), "fresh again: nothing stored")
}
