package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// freeHistory is rate-limiter-flexible's schedule that a real-time card
// run failed: a request of cost 0 opens the window (SET NX EX), a request
// 600ms later counts in it, and 1050ms after the first the window has
// ended, so 5 remain, where a model that took cost 0 for nothing said 4.
func freeHistory(remaining int) []TimedOp {
	base := time.UnixMilli(1_000_000)
	at := func(ms int64) (time.Time, time.Time) {
		return base.Add(time.Duration(ms) * time.Millisecond), base.Add(time.Duration(ms+2) * time.Millisecond)
	}
	free, allow, query := TimedOp{Kind: OpAllow, User: "u", Free: true, Allowed: true}, TimedOp{Kind: OpAllow, User: "u", Allowed: true}, TimedOp{Kind: OpRemaining, User: "u", Remaining: remaining}
	free.Lo, free.Hi = at(0)
	allow.Lo, allow.Hi = at(600)
	query.Lo, query.Hi = at(1050)
	return []TimedOp{free, allow, query}
}

// judgeLast feeds ops to spec's real-time oracle and returns the last
// judgement.
func judgeLast(t *testing.T, spec string, ops []TimedOp) (Judgement, string) {
	t.Helper()
	o, err := NewOracle(MustVariant(spec), 5, time.Second)
	require.NoError(t, err)
	var j Judgement
	var why string
	for _, op := range ops {
		j, why, err = o.Judge(op)
		require.NoError(t, err)
	}
	return j, why
}

func TestFreeRequestMayOpenAWindow(t *testing.T) {
	const spec = "fixed-window:align=first-hit,count-denied=true,query=read"
	for _, remaining := range []int{5, 4} { // opened by the free request, or by the next
		j, why := judgeLast(t, spec, freeHistory(remaining))
		assert.NotEqual(t, Impossible, j, "remaining %d: %s", remaining, why)
	}
	j, why := judgeLast(t, spec, freeHistory(3))
	assert.Equal(t, Impossible, j, "a free request counts nothing under either reading")
	assert.Contains(t, why, "answers 4 or 5")
}

func TestFreeRequestOnAFixedGridMovesNothing(t *testing.T) {
	assert.False(t, MustVariant("fixed-window:align=epoch,count-denied=false,query=read").FreeMayWrite())
	assert.False(t, MustVariant("sliding-log").FreeMayWrite())
	assert.False(t, MustVariant("sliding-counter:align=epoch").FreeMayWrite())
	assert.True(t, MustVariant("fixed-window:align=first-hit,count-denied=true,query=read").FreeMayWrite())
	assert.True(t, MustVariant("sliding-counter:align=first-grid").FreeMayWrite())
	assert.True(t, MustVariant("token-bucket:refill=interval").FreeMayWrite())
	assert.True(t, MustVariant("token-bucket:expire=idle").FreeMayWrite())
	assert.False(t, MustVariant("token-bucket:refill=continuous,expire=full").FreeMayWrite())
	// The sliding log judges around it: nothing to open.
	j, why := judgeLast(t, "sliding-log", freeHistory(4))
	assert.Equal(t, Certain, j, why)
}

func TestOnlyACostOfZeroIsFree(t *testing.T) {
	o, err := NewOracle(MustVariant("fixed-window:align=first-hit,count-denied=true,query=read"), 5, time.Second)
	require.NoError(t, err)
	op := freeHistory(4)[0]
	op.Cost = 2
	_, _, err = o.Judge(op)
	assert.ErrorContains(t, err, "only an AllowRequest of cost 0 is free")
}
