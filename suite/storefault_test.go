package suite_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// faults records the store faults a target was asked for, and puts them
// on srv.
type faults struct {
	mu   sync.Mutex
	srv  *redisenv.Server
	seen []suite.StoreFault
	fail suite.StoreFault // this one returns an error
}

func (f *faults) fault(ctx context.Context, fault suite.StoreFault) error {
	f.mu.Lock()
	f.seen = append(f.seen, fault)
	f.mu.Unlock()
	if fault == f.fail {
		return errors.New("the store's console is unreachable")
	}
	if f.srv == nil {
		return nil
	}
	switch fault {
	case suite.StoreStop:
		return f.srv.Stop()
	case suite.StoreFreeze:
		return f.srv.Pause()
	}
	if err := f.srv.Start(ctx); err != nil {
		return err
	}
	return f.srv.Resume()
}

// failOpen allows, with the error, every request its limiter could not
// decide: what the deprecated Capabilities.FailOpen always let a limiter
// answer.
type failOpen struct{ contract.RateLimiterContract }

func (l failOpen) AllowRequest(ctx context.Context, user string) (bool, error) {
	ok, err := l.RateLimiterContract.AllowRequest(ctx, user)
	if errors.Is(err, contract.ErrStore) {
		return true, err
	}
	return ok, err
}

// TestStoreFaultThroughTheTarget: a store the run reaches only through
// Target.StoreFault is stopped, resumed, frozen and resumed, in that
// order, and graded against the policy declared; the deprecated FailOpen
// still grades a limiter that allows with an error as it always did, and
// StoreFailureAllow, which wants no error, fails it.
func TestStoreFaultThroughTheTarget(t *testing.T) {
	testtier.SkipShort(t, "stops and freezes a Redis of its own")
	t.Parallel() // a Redis of its own
	ctx := context.Background()
	red, err := redisenv.Start(ctx)
	require.NoError(t, err)
	defer red.Close()
	cfg := suite.Config{Redis: red, IDs: []string{"robust/store-outage"}}

	f := &faults{srv: red.Server}
	target := targets.Reference()
	target.StoreFault = f.fault
	rep, err := suite.Check(ctx, cfg, target)
	require.NoError(t, err)
	assert.Equal(t, result.Conformant, rep.Verdict().Outcome, report.String(rep))
	assert.Equal(t, []suite.StoreFault{suite.StoreStop, suite.StoreResume, suite.StoreFreeze, suite.StoreResume}, f.seen)

	ref := targets.Reference()
	open := ref
	open.New = func(ctx context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
		lim, closer, err := ref.New(ctx, env)
		return failOpen{lim}, closer, err
	}
	open.StoreFault = (&faults{srv: red.Server}).fault
	//lint:ignore SA1019 the deprecated field must keep working
	open.Capabilities.FailOpen = true
	rep, err = suite.Check(ctx, cfg, open)
	require.NoError(t, err)
	assert.Equal(t, result.Conformant, rep.Verdict().Outcome, "FailOpen: allowed with an error, as always\n%s", report.String(rep))

	open.Capabilities.StoreFailure = contract.StoreFailureAllow
	rep, err = suite.Check(ctx, cfg, open)
	require.NoError(t, err)
	require.Equal(t, result.NotConformant, rep.Verdict().Outcome, report.String(rep))
	assert.Contains(t, rep.Results[0].Message, "the policy declared is allow (fail open)")
}

// TestAStoreFaultThatFailsIsAFault: a fault that cannot be put on the
// store is the grader's, never a verdict on the limiter (exit 2), and the
// store is resumed all the same.
func TestAStoreFaultThatFailsIsAFault(t *testing.T) {
	f := &faults{fail: suite.StoreStop}
	target := targets.Model()
	target.StoreFault = f.fault
	rep, err := suite.Check(context.Background(), suite.Config{IDs: []string{"robust/store-outage"}}, target)
	require.NoError(t, err)
	r := rep.Results[0]
	assert.Equal(t, result.Errored, r.Status, r.Message)
	require.NotNil(t, r.Failure)
	assert.Equal(t, result.KindFault, r.Failure.Kind)
	assert.Contains(t, r.Message, "the store's console is unreachable")
	assert.Equal(t, result.Undecided, rep.Verdict().Outcome)
	assert.True(t, slices.Equal([]suite.StoreFault{suite.StoreStop, suite.StoreResume}, f.seen), "a fault tried is ended: %v", f.seen)
}

// TestStoreOutageNeedsAWayToTheStore: without a Redis the run started or
// a Target.StoreFault, the spec is skipped, saying how to grade it; a
// StoreFault is enough.
func TestStoreOutageNeedsAWayToTheStore(t *testing.T) {
	rep, err := suite.Check(context.Background(), suite.Config{IDs: []string{"robust/store-outage"}}, targets.Model())
	require.NoError(t, err)
	r := rep.Results[0]
	assert.Equal(t, result.Skipped, r.Status)
	assert.Contains(t, r.Message, "--store-fault")
	assert.False(t, r.Structural, "a flag not given: --fail-on-skip counts it")
}

// The store timeout is taken from 10ms to 10s.
func TestStoreTimeoutIsValidated(t *testing.T) {
	for _, d := range []time.Duration{time.Millisecond, 11 * time.Second, -time.Second} {
		assert.ErrorContains(t, suite.Validate(suite.Config{StoreTimeout: d}), "StoreTimeout", d)
	}
	assert.NoError(t, suite.Validate(suite.Config{StoreTimeout: 250 * time.Millisecond}))
}
