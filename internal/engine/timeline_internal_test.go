package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/result"
)

// The user and the kind of a call are read from how the timeline shows
// it, when its recorder did not say them; anything else is a note.
func TestParseOp(t *testing.T) {
	for op, want := range map[string]struct {
		user string
		kind result.OpKind
	}{
		`AllowRequest("u")`:                  {`"u"`, result.OpAllow},
		`AllowRequestN("a, b", 3)`:           {`"a, b"`, result.OpAllow},
		`GetRemainingRequests(u2)`:           {"u2", result.OpRemaining},
		`Reset("x)y")`:                       {`"x)y"`, result.OpReset},
		`Configure(5, 1m0s)`:                 {"", result.OpConfigure},
		`phase 1: 8 goroutines × 12`:         {"", result.OpNote},
		`  Retry-After of the refusal at +0`: {"", result.OpNote},
		`AllowRequest("u") extra`:            {"", result.OpNote},
	} {
		user, kind := parseOp(op)
		assert.Equal(t, want.user, user, op)
		assert.Equal(t, want.kind, kind, op)
	}
}

// The text timeline is what it was: lines of identical calls collapse on
// what they show, whatever the model answered to each.
func TestTimelineTextIgnoresTheData(t *testing.T) {
	var tl Timeline
	for _, want := range []string{"allowed", "allowed", "denied"} {
		tl.Add(Event{At: time.Second, Op: `AllowRequest("u")`, Got: "allowed", Want: want, User: `"u"`})
	}
	assert.Equal(t, "      +1000ms  AllowRequest(\"u\") = allowed  ×3\n", tl.String(1))
	ops, total := tl.data(3)
	require.Len(t, ops, 3)
	assert.Equal(t, 3, total)
	assert.Equal(t, result.Op{Step: 3, At: time.Second, User: `"u"`, Op: `AllowRequest("u")`, Got: "allowed", Want: "denied",
		Kind: result.OpAllow, Count: 1}, ops[2])
}

// A long timeline keeps MaxTimelineOps operations: the last ones, or,
// when the failing step is earlier, most of what led to it and what
// followed.
func TestTimelineDataIsBounded(t *testing.T) {
	var tl Timeline
	n := result.MaxTimelineOps * 3
	for i := range n {
		tl.Add(Event{At: time.Duration(i) * time.Millisecond, Op: "AllowRequest(u)", Got: "allowed"})
	}
	ops, total := tl.data(0)
	assert.Equal(t, n, total)
	require.Len(t, ops, result.MaxTimelineOps)
	assert.Equal(t, n, ops[len(ops)-1].Step, "the last ones")

	ops, _ = tl.data(1500)
	require.Len(t, ops, result.MaxTimelineOps)
	assert.Equal(t, 1500-result.MaxTimelineOps*4/5, ops[0].Step)
	assert.LessOrEqual(t, ops[0].Step, 1500)
	assert.GreaterOrEqual(t, ops[len(ops)-1].Step, 1500)
}
