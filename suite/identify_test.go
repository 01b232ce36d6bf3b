package suite_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// fitsOnly asserts that want is identified, alone (with the profiles that
// always decide as it does).
func fitsOnly(t *testing.T, id *result.Identification, want string) {
	t.Helper()
	require.NotEmpty(t, id.Fits, "%s: nothing fits; ruled out: %+v", want, id.RuledOut)
	got := id.Fits[0]
	names := append([]string{got.Profile}, got.SameDecisions...)
	assert.Contains(t, names, model.MustVariant(want).String(), "%s is identified: %+v", want, id.Fits)
	assert.Len(t, id.Fits, 1, "%s alone fits: %+v", want, id.Fits)
	assert.Empty(t, got.RemainingDiffers)
	for _, r := range id.RuledOut {
		assert.NotEmpty(t, r.Timeline, "%s is ruled out with its evidence", r.Profile)
	}
}

// Every profile's own model, probed on the fake clock, is identified with
// its parameters.
func TestIdentifyNamesEveryProfileModel(t *testing.T) {
	t.Parallel() // in memory
	for _, p := range append(slices.Clone(profileSpecs), "sliding-log", "gcra:burst=9", "token-bucket:capacity=2,expire=full,query=read,refill=interval",
		"token-bucket:refill=interval", "token-bucket:refill=interval,expire=idle,query=write", "token-bucket:refill=interval,query=write",
		"fixed-window:align=first-hit,query=write", "fixed-window:align=first-grid,query=write", "fixed-window:align=first-hit,count-denied=true,query=read", "fixed-window:align=epoch", "sliding-counter:admit=at-most",
		"fixed-window:align=first-second", "fixed-window:align=first-second,count-denied=true", "gcra:cost=debt",
		// identify/renew tells these from renew=counted (HAProxy's).
		"sliding-counter:align=first-grid,renew=any", "sliding-counter:align=first-grid,count-denied=true,admit=at-most,renew=any", "sliding-counter:align=first-grid",
		// and a fixed window's grid kept for good (sethvargo's memory store)
		// from one a whole idle window forgets.
		"fixed-window:align=first-grid,renew=kept", "fixed-window:align=first-grid,count-denied=true,renew=kept", "fixed-window:align=first-grid") {
		t.Run(p, func(t *testing.T) {
			id, err := suite.Identify(context.Background(), suite.Config{}, targets.ProfileModel(model.MustVariant(p)))
			require.NoError(t, err)
			fitsOnly(t, id, p)
		})
	}
}

// Profiles that decide alike on every history with one configuration are
// one group: without Configure the probes cannot change the limit, and a
// fixed window opened by the first request, counting denied requests or
// not, and a token bucket of N refilled every W are identified together;
// with it, a raised limit tells them apart, and each is identified alone.
func TestIdentifyGroupsProfilesThatDecideAlike(t *testing.T) {
	group := []string{"fixed-window:align=first-hit,count-denied=false,query=read", "fixed-window:align=first-hit,count-denied=true,query=read", "token-bucket:capacity=limit,expire=full,query=read,refill=interval"}
	for _, p := range group {
		t.Run(p+" without Configure", func(t *testing.T) {
			tg := targets.ProfileModel(model.MustVariant(p))
			tg.Capabilities.Configure = false
			id, err := suite.Identify(context.Background(), suite.Config{}, tg)
			require.NoError(t, err)
			require.Len(t, id.Fits, 1, "one group: %+v", id.Fits)
			assert.ElementsMatch(t, group, append([]string{id.Fits[0].Profile}, id.Fits[0].SameDecisions...))
		})
		t.Run(p+" with Configure", func(t *testing.T) {
			id, err := suite.Identify(context.Background(), suite.Config{}, targets.ProfileModel(model.MustVariant(p)))
			require.NoError(t, err)
			require.Len(t, id.Fits, 1, "%+v", id.Fits)
			assert.Equal(t, p, id.Fits[0].Profile)
			assert.Empty(t, id.Fits[0].SameDecisions, "the raised limit told them apart")
			assert.NotEmpty(t, id.Fits[0].Readings, "the readings of a change that explain it are named")
		})
	}
}

// A window whose expiry every request renews (align=elastic), or every
// allowed one (elastic-allowed), decides as first-hit's while requests
// are W apart or more: the probes tell the three apart without a change
// of the limit, each one group with its count-denied twin (and first-hit
// with the interval bucket).
func TestIdentifyTellsElasticWindowsFromFirstHit(t *testing.T) {
	t.Parallel() // in memory
	twins := func(align string) []string {
		return []string{"fixed-window:align=" + align + ",count-denied=false,query=read", "fixed-window:align=" + align + ",count-denied=true,query=read"}
	}
	for p, group := range map[string][]string{
		"fixed-window:align=elastic,count-denied=true": twins("elastic"),
		"fixed-window:align=elastic-allowed":           twins("elastic-allowed"),
		"fixed-window:align=first-hit":                 append(twins("first-hit"), "token-bucket:capacity=limit,expire=full,query=read,refill=interval"),
	} {
		t.Run(p, func(t *testing.T) {
			tg := targets.ProfileModel(model.MustVariant(p))
			tg.Capabilities.Configure = false
			id, err := suite.Identify(context.Background(), suite.Config{}, tg)
			require.NoError(t, err)
			require.Len(t, id.Fits, 1, "one group: %+v", id.Fits)
			assert.ElementsMatch(t, group, append([]string{id.Fits[0].Profile}, id.Fits[0].SameDecisions...))
		})
	}
}

// Windows on the epoch's grid and on Go's (align=go-zero, as
// time.Time.Truncate lays them) are one where the window divides the
// 62,135,596,800,000 ms between 0001-01-01 and 1970: identify reports
// them as one group there (a minute), and tells them apart where it does
// not. With 7 s Go's edges are 3 s after the epoch's, and the probes'
// requests cross one; with 40,657 ms (109 × 373, which divides that
// offset plus 1) they are 1 ms after, and with 1,835,039 ms (19 × 96,581,
// which divides it less 1) 1 ms before: only the grid probe's requests
// around an edge tell fixed windows on the two apart (without them,
// identify said AMBIGUOUS).
func TestIdentifyTellsGoZeroFromTheEpochWhereTheyDiffer(t *testing.T) {
	t.Parallel() // in memory
	for _, c := range [][2]string{
		{"fixed-window:align=go-zero", "fixed-window:align=epoch"},
		{"fixed-window:align=epoch", "fixed-window:align=go-zero"},
		{"sliding-counter:align=go-zero", "sliding-counter:align=epoch"},
		{"sliding-counter:align=epoch,admit=at-most,count-denied=true", "sliding-counter:align=go-zero,admit=at-most,count-denied=true"},
	} {
		p, twin := model.MustVariant(c[0]).String(), model.MustVariant(c[1]).String()
		t.Run(p, func(t *testing.T) {
			id, err := suite.Identify(context.Background(), suite.Config{}, targets.ProfileModel(model.MustVariant(p)))
			require.NoError(t, err)
			fitsOnly(t, id, p)
			assert.Contains(t, append([]string{id.Fits[0].Profile}, id.Fits[0].SameDecisions...), twin, "one grid under a window of a minute")
			for _, w := range []time.Duration{7 * time.Second, 40657 * time.Millisecond, 1835039 * time.Millisecond} {
				id, err = suite.Identify(context.Background(), suite.Config{Window: w}, targets.ProfileModel(model.MustVariant(p)))
				require.NoError(t, err)
				fitsOnly(t, id, p)
				i := slices.IndexFunc(id.RuledOut, func(r result.RuledOut) bool { return r.Profile == twin })
				require.GreaterOrEqual(t, i, 0, "%v: %s is ruled out", w, twin)
				if w != 7*time.Second && strings.HasPrefix(p, "fixed-window") {
					assert.Equal(t, "identify/grid", id.RuledOut[i].Probe, "%v: the grid probe tells them apart: %+v", w, id.RuledOut[i])
				}
			}
		})
	}
}

// wholeSeconds is a limiter whose Configure takes only windows of whole
// seconds (or, with only, that one window), as some libraries do.
type wholeSeconds struct {
	contract.RateLimiterContract
	only time.Duration
}

func (l wholeSeconds) Configure(ctx context.Context, n int, w time.Duration) error {
	if w%time.Second != 0 || l.only != 0 && w != l.only {
		return fmt.Errorf("%w: window %v: only whole seconds", contract.ErrInvalidConfig, w)
	}
	return l.RateLimiterContract.Configure(ctx, n, w)
}

// onlyWholeSeconds wraps a target's instances in wholeSeconds, which take
// no cost.
func onlyWholeSeconds(t suite.Target, only time.Duration) suite.Target {
	t.Capabilities.Cost = false
	inner := t.New
	t.New = func(ctx context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
		lim, closer, err := inner(ctx, env)
		if err != nil {
			return nil, nil, err
		}
		return wholeSeconds{lim, only}, closer, nil
	}
	return t
}

// A target that takes only whole-second windows, asked for 1.5s, is
// found to (the run's granularity probe), probed with 2s and identified,
// and the identification says why; one
// that refuses the whole-second windows too fails with the configuration
// it refused and its own error, not with the probe's title alone.
func TestIdentifyChoosesWindowsTheTargetAccepts(t *testing.T) {
	tg := onlyWholeSeconds(targets.ProfileModel(model.MustVariant("gcra")), 0)
	id, err := suite.Identify(context.Background(), suite.Config{Window: 1500 * time.Millisecond}, tg)
	require.NoError(t, err)
	fitsOnly(t, id, "gcra")
	assert.Equal(t, 2*time.Second, id.Window)
	require.NotEmpty(t, id.Notes)
	assert.Contains(t, id.Notes[0], "the target takes only windows in whole multiples of 1s (it refused Configure(5, 1.5s)")
	assert.Contains(t, id.Notes[0], "only whole seconds")
	assert.Contains(t, id.Notes[0], "rounded up from 1.5s to 2s")

	tg = onlyWholeSeconds(targets.ProfileModel(model.MustVariant("gcra")), time.Hour)
	_, err = suite.Identify(context.Background(), suite.Config{Window: 1500 * time.Millisecond}, tg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the target refused Configure(5, 2s)")
	assert.Contains(t, err.Error(), "only whole seconds")
	assert.ErrorIs(t, err, contract.ErrInvalidConfig)

	_, err = suite.Identify(context.Background(), suite.Config{}, tg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the target refused Configure(5, 1m0s)")
}

// Without GetRemainingRequests (an endpoint) no history has a query, so
// profiles that differ only in whether a query writes decide alike: one
// group, not an ambiguity (ulule's stdlib middleware was reported
// ambiguous between them).
func TestIdentifyGroupsQueryReadingsWithoutQueries(t *testing.T) {
	tg := targets.ProfileModel(model.MustVariant("fixed-window:align=first-hit"))
	tg.Capabilities.Remaining = false
	id, err := suite.Identify(context.Background(), suite.Config{}, tg)
	require.NoError(t, err)
	require.Len(t, id.Fits, 1, "one group: %+v", id.Fits)
	assert.Subset(t, append([]string{id.Fits[0].Profile}, id.Fits[0].SameDecisions...),
		[]string{"fixed-window:align=first-hit,count-denied=false,query=read", "fixed-window:align=first-hit,count-denied=false,query=write"})
}
