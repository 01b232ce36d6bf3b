package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rlconform/rlconform/model"
)

// A spec that decided nothing names the cause most of its undecided
// answers had, with what was measured and what would decide them: the
// search's bounds are never blamed on the round trips, nor answered with
// "raise the real-time window", which would not help.
func TestUndecidedNamesItsCause(t *testing.T) {
	h := &Harness{run: &runner{profile: model.MustVariant("fixed-window:align=first-hit")}, margin: 20 * time.Millisecond}
	for range 8 {
		h.countUndecided(model.CauseSearch, 97*time.Millisecond)
	}
	why := h.undecidedWhy(time.Second)
	assert.Contains(t, why, "the search over every admissible instant outgrew its bounds")
	assert.Contains(t, why, "97ms")
	assert.Contains(t, why, "clock control")
	assert.NotContains(t, why, "raise the real-time window")

	h = &Harness{run: &runner{profile: model.MustVariant("")}, margin: 20 * time.Millisecond}
	h.countUndecided(model.CauseTiming, 30*time.Millisecond)
	h.countUndecided(model.CauseReading, 0)
	h.countUndecided(model.CauseTiming, 30*time.Millisecond)
	why = h.undecidedWhy(time.Second)
	assert.Contains(t, why, "the round trips (margin 20ms, the widest call or burst of calls judged took 30ms)")
	assert.Contains(t, why, "(2 of them)")
	assert.Contains(t, why, "raise the real-time window")
}
