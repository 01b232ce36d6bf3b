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
	summary := r.outOfTime(endpoint, evenly(1400*time.Microsecond, 30), &res)
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
	summary = r.outOfTime(endpoint, evenly(2*time.Second, 30), &res) // 60 s of calls
	assert.Equal(t, result.KindSlow, res.Failure.Kind)
	assert.Contains(t, summary, "too slow to grade")
	assert.Contains(t, summary, "pacing at 50 requests a second (--max-rps) included")

	// Under a spec timeout that covers the window, waiting still is the
	// window's doing: give it twice as long.
	r.cfg.SpecTimeout = 10 * time.Minute
	res = result.Result{}
	summary = r.outOfTime(endpoint, evenly(time.Millisecond, 60), &res)
	assert.Equal(t, result.KindOutOfTime, res.Failure.Kind, "waiting, not calling")
	assert.Contains(t, summary, "give the spec timeout 20m0s or more")

	// With clock control no window is waited out: a spec out of time is
	// its calls' doing.
	res = result.Result{}
	r.outOfTime(Target{Name: "clocked", Capabilities: contract.Capabilities{Clock: true}}, evenly(time.Millisecond, 3), &res)
	assert.Equal(t, result.KindSlow, res.Failure.Kind)
}

// record records a call that took d.
func (f *inFlight) record(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.total += d
	f.sample(d)
}

// evenly is the times of n calls that each took d.
func evenly(d time.Duration, n int) callTimes {
	var f inFlight
	for range n {
		f.record(d)
	}
	_, c := f.stats()
	return c
}

// A few calls that stalled about a second while the median call took
// milliseconds (a listen backlog of 5 that a burst overflows: the SYN is
// retransmitted after 1 s) are named as connection stalls with what to do,
// never the target's slowness; calls that are all slow, a median that is
// not quick, or stalls that took a small part of the time are not.
func TestConnectionStallsAreNamed(t *testing.T) {
	var f inFlight
	for i := range 2900 {
		f.record(2*time.Millisecond + time.Duration(i%3)*time.Millisecond)
	}
	for _, d := range []time.Duration{1010 * time.Millisecond, 1003 * time.Millisecond, 3002 * time.Millisecond} {
		for range 10 {
			f.record(d)
		}
	}
	_, c := f.stats()
	assert.Equal(t, 3*time.Millisecond, c.median)
	assert.Equal(t, stalls{n: 30, least: 1003 * time.Millisecond, most: 3002 * time.Millisecond, summed: 50150 * time.Millisecond}, c.stalls)
	got := connectionStalls(c)
	assert.Contains(t, got, "30 calls stalled 1s to 3s (50.15s of the ")
	assert.Contains(t, got, "while the median call took 3ms: connection stalls (a listen backlog too small, or a proxy opening a connection per request), not the limiter's speed")

	r := &runner{cfg: Config{Limit: 5, RealTimeWindow: time.Second, SpecTimeout: time.Minute}, profile: model.MustVariant("")}
	var res result.Result
	summary := r.outOfTime(Target{Name: "shim"}, c, &res)
	assert.Equal(t, result.KindSlow, res.Failure.Kind)
	assert.Contains(t, summary, "the target answered all 2930 calls, but 30 calls stalled")
	assert.Contains(t, summary, "listen(…, 128)")
	assert.NotContains(t, summary, "too slow")
	why := r.afterSpec(t.Context(), Target{Name: "shim"}, &res)
	assert.Contains(t, why, "shim stalled on its connections")
	assert.NotContains(t, why, "too slow")

	// Stalls of about one second alike are "about 1s".
	f = inFlight{}
	for range 100 {
		f.record(time.Millisecond)
	}
	for range 5 {
		f.record(time.Second)
	}
	_, c = f.stats()
	assert.Contains(t, connectionStalls(c), "5 calls stalled about 1s")

	for name, c := range map[string]callTimes{
		"all slow":          evenly(time.Second, 60),
		"all quick":         evenly(time.Millisecond, 60),
		"a slow median":     withStalls(evenly(60*time.Millisecond, 1000), 30, time.Second),
		"a stall of little": withStalls(evenly(20*time.Millisecond, 3000), 1, time.Second),
	} {
		assert.Empty(t, connectionStalls(c), name)
	}
}

// withStalls is c with n more calls that each took d.
func withStalls(c callTimes, n int, d time.Duration) callTimes {
	c.returned += n
	c.total += time.Duration(n) * d
	c.stalls = stalls{n: n, least: d, most: d, summed: time.Duration(n) * d}
	return c
}

// The call times kept are bounded: the last sampleSize calls' for the
// median, whatever the number of calls; the stalls counted exactly.
func TestCallTimesAreBounded(t *testing.T) {
	var f inFlight
	for range 10 * sampleSize {
		f.record(time.Second)
	}
	for range sampleSize {
		f.record(time.Millisecond)
	}
	_, c := f.stats()
	assert.Equal(t, time.Millisecond, c.median, "the last calls'")
	assert.Equal(t, 10*sampleSize, c.stalls.n)
	assert.Equal(t, 11*sampleSize, c.returned)
}
