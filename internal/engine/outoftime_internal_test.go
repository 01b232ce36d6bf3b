package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/result"
)

// A real-time spec that ran out of its time while its calls answered
// quickly was waiting out windows: the message names the window and the
// flag to raise, never the target's speed (a minute's window under the
// default spec timeout of a minute, at 1.4 ms a call, was "too slow to
// grade"). One whose calls took the time is the target's slowness.
func TestOutOfTimeBlamesTheWindowNotAQuickTarget(t *testing.T) {
	r := &runner{cfg: Config{Limit: 20, RealTimeWindow: time.Minute, SpecTimeout: time.Minute}, profile: model.MustVariant("")}
	endpoint := Target{Name: "envoy", MaxRPS: 50}

	var res result.Result
	summary := r.outOfTime(endpoint, 1400*time.Microsecond, 30, &res)
	assert.Equal(t, result.KindOutOfTime, res.Failure.Kind)
	assert.Equal(t, result.Inconclusive, res.Status)
	assert.Contains(t, summary, "--spec-timeout")
	assert.Contains(t, summary, "windows of 1m0s")
	assert.Contains(t, summary, "the window, not the target")
	assert.Contains(t, summary, "give the spec timeout 4m42s or more")
	assert.NotContains(t, summary, "too slow")
	why := r.afterSpec(t.Context(), endpoint, &res)
	assert.Contains(t, why, "--spec-timeout")
	assert.False(t, strings.Contains(why, "too slow"), why)

	// Calls that took the time are the target's slowness (the grader's
	// pacing named, which each call's time includes).
	res = result.Result{}
	summary = r.outOfTime(endpoint, 2*time.Second, 30, &res) // 60 s of calls
	assert.Equal(t, result.KindSlow, res.Failure.Kind)
	assert.Contains(t, summary, "too slow to grade")
	assert.Contains(t, summary, "pacing at 50 requests a second (--max-rps) included")

	// Under a spec timeout that covers the window, waiting still is the
	// window's doing: give it twice as long.
	r.cfg.SpecTimeout = 10 * time.Minute
	res = result.Result{}
	summary = r.outOfTime(endpoint, time.Millisecond, 60, &res)
	assert.Equal(t, result.KindOutOfTime, res.Failure.Kind, "waiting, not calling")
	assert.Contains(t, summary, "give the spec timeout 20m0s or more")

	// With clock control no window is waited out: a spec out of time is
	// its calls' doing.
	res = result.Result{}
	r.outOfTime(Target{Name: "clocked", Capabilities: contract.Capabilities{Clock: true}}, time.Millisecond, 3, &res)
	assert.Equal(t, result.KindSlow, res.Failure.Kind)
}
