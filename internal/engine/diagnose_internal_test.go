package engine

import (
	"testing"
	"time"

	"github.com/rlconform/rlconform/model"
	"github.com/stretchr/testify/assert"
)

// A real-time history whose calls straddle a first-hit window's edges one
// each way (CI saw such a run of the Node INCR + EXPIRE example go
// unnamed): the window opened by a slow first call must start late for a
// denial just past its first second, and early for the next window to
// have ended by the last call. No one timing of every call (all at the
// sending, all at the answer, all half-way) gives its answers, a timing
// of each does, and a failed spec's diagnosis names the fixed window.
func TestDiagnosisOfAFailedSpecAdmitsAnyTimingOfEachCall(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	ms := func(m int) time.Time { return base.Add(time.Duration(m) * time.Millisecond) }
	call := func(lo, hi int, got string) TraceOp {
		return TraceOp{At: ms(lo), until: ms(hi), Kind: model.OpAllow, User: "u", Got: got}
	}
	h := &Harness{
		env: Env{MaxRequests: 2, Window: time.Second},
		run: &runner{profile: model.MustVariant("")},
		trace: []TraceOp{
			call(0, 100, "allowed"),     // opens the window at t ∈ [0, 100]
			call(900, 901, "allowed"),   // its second
			call(1080, 1085, "denied"),  // still in it: t > 80
			call(1090, 1190, "allowed"), // opens the next, at t' ≥ t + 1000
			call(1191, 1192, "allowed"), // its second: no sliding log allows it (900's entry counts)
			call(2100, 2110, "allowed"), // the next again: t' ≤ 1100
		},
	}
	const firstHit = "fixed-window:align=first-hit,count-denied=false,query=read"
	named := func(failed bool) bool {
		clues, graded := h.evidence(failed)
		assert.False(t, graded, "no sliding log gives these answers")
		for _, c := range clues {
			if c.key == firstHit {
				return c.explains
			}
		}
		t.Fatalf("no clue for %s", firstHit)
		return false
	}
	assert.False(t, named(false), "one timing of every call gives these answers: the test shows nothing")
	assert.True(t, named(true), "a failed spec's diagnosis misses the window a timing of each call gives")
}

// A failed spec's diagnosis admits a fixed window on the limiter's own
// clock of seconds only at one phase of that clock for every user: two
// users whose windows turned 500ms apart are not one limiter's.
func TestDiagnosisWantsOneClockForEveryUser(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	call := func(user string, lo int) TraceOp {
		at := base.Add(time.Duration(lo) * time.Millisecond)
		return TraceOp{At: at, until: at.Add(time.Millisecond), Kind: model.OpAllow, User: user, Got: "allowed"}
	}
	firstSecond := model.MustVariant("fixed-window:align=first-second,count-denied=false,query=read")
	h := &Harness{env: Env{MaxRequests: 1, Window: time.Second}}
	// Limit 1: each user's second request is allowed 100ms after its
	// first, so its window turned between them.
	h.trace = []TraceOp{call("a", 0), call("a", 100), call("b", 1050), call("b", 1150)}
	assert.True(t, h.admits(firstSecond, false, model.NewBudget(diagnosisSteps)), "windows that turned 50-100ms past a whole second explain both")
	h.trace = []TraceOp{call("a", 0), call("a", 100), call("b", 500), call("b", 600)}
	assert.False(t, h.admits(firstSecond, false, model.NewBudget(diagnosisSteps)), "a's window turned 500ms apart from b's: no one clock")
}
