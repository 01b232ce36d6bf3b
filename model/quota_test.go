package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// at is the instant n ms after the epoch.
func at(n int64) time.Time { return time.UnixMilli(n) }

// The whole quota of a log is back when its latest entry has left: W
// after the latest instant it may have been made.
func TestIntervalQuotaBack(t *testing.T) {
	o, err := newInterval(3, time.Second)
	require.NoError(t, err)
	d, by, ok := o.QuotaBack("u", at(0), at(0))
	assert.True(t, ok)
	assert.Equal(t, at(0), by)
	assert.Zero(t, d, "a user without entries has its whole quota")
	o.Log("u", at(100), at(110))
	o.Log("u", at(200), at(230))
	d, by, ok = o.QuotaBack("u", at(300), at(310))
	assert.True(t, ok)
	assert.Equal(t, 930*time.Millisecond, d, "the entry made by +230 leaves by +1230")
	assert.Equal(t, at(1230), by)
	o.Log("u", at(300), at(310))
	d, by, _ = o.QuotaBack("u", at(300), at(310))
	assert.Equal(t, time.Second, d, "an entry made by the operation itself leaves W after it, no later")
	assert.Equal(t, at(1310), by, "made as late as +310, it leaves by +1310, more than W after the operation was sent")

	// In real time the instants are the real-time rule's: the entry may be
	// 1 ms later than seen returned, the operation 2 ms earlier than sent,
	// and an entry exactly W old may still count.
	rt, err := NewOracle(Variant{}, 3, time.Second)
	require.NoError(t, err)
	rt.(*intervalOracle).Log("u", at(100), at(110))
	d, _, _ = rt.(*intervalOracle).QuotaBack("u", at(300), at(310))
	assert.Equal(t, (111+1000+1-298)*time.Millisecond, d)
}

// The whole quota of a GCRA is back at TAT: its lifetime.
func TestSearchQuotaBack(t *testing.T) {
	s, err := newSearch(MustVariant("gcra"), 4, 4*time.Second)
	require.NoError(t, err)
	j, want := s.JudgeBurst("u", at(1000), at(1000), 4, 4)
	require.NotEqual(t, Impossible, j, want)
	d, by, ok := s.QuotaBack("u", at(1000), at(1000))
	assert.True(t, ok)
	assert.Equal(t, 4*time.Second, d, "TAT is 5000 after four requests at 1000")
	assert.Equal(t, at(5000), by)
	least, most := s.RetryBounds("u", at(1000), at(1000))
	assert.Less(t, most, d, "the next request may go long before the whole quota is back (%v..%v)", least, most)
}

// A window opened by a request that took 100 ms ends W after the latest
// instant it may have opened at: the instant a limiter states may be
// later than W after the request was sent (#45's CI: an honest fixed
// window's epoch reset was failed by the bound measured from sent).
func TestSearchQuotaBackOfAWideRequest(t *testing.T) {
	s, err := newSearch(MustVariant("fixed-window:align=first-hit"), 5, time.Second)
	require.NoError(t, err)
	j, why, _ := s.Judge(TimedOp{Kind: OpAllow, User: "u", Lo: at(1507), Hi: at(1606), Allowed: true})
	require.NotEqual(t, Impossible, j, why)
	d, by, ok := s.QuotaBack("u", at(1507), at(1606))
	require.True(t, ok)
	assert.Equal(t, time.Second, d, "from its own instant, a window of W")
	assert.Equal(t, at(2606), by, "opened as late as 1606")
}
