package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/result"
)

// idle is a limiter that allows everything.
type idle struct{}

func (idle) AllowRequest(context.Context, string) (bool, error)        { return true, nil }
func (idle) Configure(context.Context, int, time.Duration) error       { return nil }
func (idle) GetRemainingRequests(context.Context, string) (int, error) { return 1, nil }
func (idle) Reset(context.Context, string) error                       { return nil }
func idleTarget(ctx context.Context, _ Env) (contract.RateLimiterContract, func() error, error) {
	return idle{}, nil, nil
}

// A spec whose own goroutine never returns, with no call into the target
// in flight, is the grader's fault: errored (exit 2), never blamed on the
// target, with where it was; a spec stuck in the target's code (an
// endpoint's Request that ignores its context) blames the target.
func TestAStuckSpecSaysWhoseCodeItIsIn(t *testing.T) {
	t.Parallel() // in memory; it waits on the spec timeout
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	stuckInOurs := func(*Harness) { <-release }
	cfg := Config{SpecTimeout: time.Second}

	rep, err := Catalogue{{ID: "core/stuck", Level: result.Core, Run: stuckInOurs}}.Check(context.Background(), cfg, Target{Name: "x", New: idleTarget})
	require.NoError(t, err)
	require.Len(t, rep.Results, 1)
	res := rep.Results[0]
	assert.Equal(t, result.Errored, res.Status, res.Message)
	require.NotNil(t, res.Failure)
	assert.Equal(t, result.KindFault, res.Failure.Kind)
	assert.Contains(t, rep.Aborted, "with no call into x in flight: rlconform's own work on it did not end")
	assert.NotContains(t, rep.Aborted, "ignores its cancelled context")
	assert.Contains(t, res.Message, "where it was:")
	assert.Contains(t, res.Message, "TestAStuckSpecSaysWhoseCodeItIsIn", "the stack names the stuck function")

	request := func(context.Context, int, string) (HTTPAnswer, error) { <-release; return HTTPAnswer{}, nil }
	callsIt := func(h *Harness) { h.Target().Request(h.Context(), 0, h.User("u")) } //nolint:errcheck // it never returns
	rep, err = Catalogue{{ID: "core/stuck", Level: result.Core, Run: callsIt}}.Check(context.Background(), cfg, Target{Name: "x", New: idleTarget, Request: request})
	require.NoError(t, err)
	assert.Contains(t, rep.Aborted, "a call into x ignores its cancelled context")
}
