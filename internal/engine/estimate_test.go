package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/grade"
	"github.com/rlconform/rlconform/internal/engine"
	"github.com/rlconform/rlconform/internal/specs"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/result"
)

// modelTarget is the model limiter in process, on the spec's clock,
// declaring caps.
func modelTarget(caps contract.Capabilities) engine.Target {
	return engine.Target{Name: "model", Capabilities: caps,
		New: func(_ context.Context, env engine.Env) (contract.RateLimiterContract, func() error, error) {
			lim, err := model.NewLimiter(env.Clock, env.MaxRequests, env.Window)
			return lim, nil, err
		}}
}

// endpointLike declares what an endpoint does: nothing, no clock, answers
// with HTTP fields, at most rps requests a second.
func endpointLike(rps int, shared bool) engine.Target {
	return engine.Target{Name: "endpoint", Addresses: []string{"http://example.invalid"}, MaxRPS: rps, SharedLimit: shared,
		Request: func(context.Context, int, string) (engine.HTTPAnswer, error) { return engine.HTTPAnswer{}, nil }}
}

// The specs the estimate counts are those the run runs: the others are
// skipped, by the same rules.
func TestEstimateCountsTheSpecsTheRunRuns(t *testing.T) {
	cat := specs.All()
	cfg := engine.Config{IDs: []string{"core/"}}
	target := modelTarget(contract.Capabilities{Clock: true, Configure: true})
	est, err := cat.Estimate(cfg, target)
	require.NoError(t, err)
	rep, err := cat.Check(context.Background(), cfg, target)
	require.NoError(t, err)
	ran := len(rep.Results) - rep.Count(result.Skipped)
	assert.Equal(t, ran, est.Run, "%+v", rep.Results)
	assert.Equal(t, rep.Count(result.Skipped), est.Skipped)
	assert.Positive(t, est.Skipped, "remaining and reset are skipped")
	assert.False(t, est.RealTime)
	assert.Zero(t, est.SpecTimeout, "with clock control no window is waited out")
}

// In real time the bounds follow the window: a spec of a limit of 20 per
// minute, sent at 50 a second, needs four windows, 4N+500 requests at the
// pace and 30 s; the run, that for each spec that runs. With one limit
// shared by every request, the specs that need several users are not
// counted, and each that runs first waits a window and a second.
func TestEstimateFollowsTheWindow(t *testing.T) {
	cat := specs.All()
	cfg := engine.Config{Limit: 20, RealTimeWindow: time.Minute}
	own, err := cat.Estimate(cfg, endpointLike(50, false))
	require.NoError(t, err)
	shared, err := cat.Estimate(cfg, endpointLike(50, true))
	require.NoError(t, err)
	all := cat.Count(cfg)

	bound := 4*time.Minute + 11600*time.Millisecond + 30*time.Second // 580 requests at 50/s
	typical := 66*time.Second + 1600*time.Millisecond                // 1.1 windows, 80 requests
	// Identities per user: the first spec alone, the other 11 at once
	// (their pacing leaves room for 15); one shared limit: one at a time.
	for _, c := range []struct {
		est   grade.Estimate
		wait  time.Duration
		turns int
	}{{own, 0, 2}, {shared, time.Minute + time.Second, shared.Run}} {
		assert.True(t, c.est.RealTime)
		assert.Equal(t, time.Minute, c.est.Window)
		assert.Equal(t, all, c.est.Run+c.est.Skipped)
		assert.Equal(t, bound+c.wait, c.est.SpecTimeout)
		assert.Equal(t, time.Duration(c.est.Run)*(bound+c.wait), c.est.MaxDuration)
		assert.Equal(t, time.Duration(c.turns)*(typical+c.wait), c.est.Typical)
	}
	assert.Less(t, own.Run, all, "an endpoint has no Configure, Reset, ...")
	assert.Less(t, shared.Run, own.Run, "the specs that need several users are not counted")
	assert.Equal(t, 12, own.Run, "the turns above are for 12 specs")
	one, err := cat.Estimate(engine.Config{Limit: 20, RealTimeWindow: time.Minute, Parallel: 1}, endpointLike(50, false))
	require.NoError(t, err)
	assert.Equal(t, time.Duration(one.Run)*typical, one.Typical, "--parallel 1: one at a time")

	// A second's window keeps the defaults of a minute a spec.
	short, err := cat.Estimate(engine.Config{Limit: 5}, endpointLike(50, false))
	require.NoError(t, err)
	assert.Less(t, short.SpecTimeout, time.Minute)
}

// identify's probes in real time on a window of a minute need more than
// a minute each (the grid probe waits two windows and a half): the
// estimate says so, and counts the probes that run.
func TestEstimateIdentify(t *testing.T) {
	est, err := specs.All().EstimateIdentify(engine.Config{Limit: 20, RealTimeWindow: time.Minute}, endpointLike(50, false))
	require.NoError(t, err)
	assert.Greater(t, est.SpecTimeout, 2*time.Minute+30*time.Second)
	assert.GreaterOrEqual(t, est.Run, 3, "the burst, grid and bucket probes always run")
	assert.Positive(t, est.Skipped, "core/remaining and strict/raised-limit need what an endpoint lacks")
}

// The estimate says when the run may shorten its windows: a window left
// to it, and a target with Configure that declares millisecond windows.
func TestEstimateSaysWhenWindowsMayBeShorter(t *testing.T) {
	cat := specs.All()
	caps := contract.All()
	caps.Clock, caps.WindowGranularity = false, time.Millisecond
	target := engine.Target{Name: "url", Addresses: []string{"http://example.invalid"}, Capabilities: caps}
	e, err := cat.Estimate(engine.Config{}, target)
	require.NoError(t, err)
	assert.True(t, e.Shortened)
	assert.Equal(t, time.Second, e.Window)
	e, err = cat.Estimate(engine.Config{RealTimeWindow: time.Second}, target)
	require.NoError(t, err)
	assert.False(t, e.Shortened, "a window given")
	target.Capabilities.WindowGranularity = 0
	e, err = cat.Estimate(engine.Config{}, target)
	require.NoError(t, err)
	assert.False(t, e.Shortened, "no granularity declared")
}
