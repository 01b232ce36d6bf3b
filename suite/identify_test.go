package suite_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// fitsOnly asserts that want is identified, alone (with the profiles that
// always decide as it does).
func fitsOnly(t *testing.T, id *suite.Identification, want string) {
	t.Helper()
	require.NotEmpty(t, id.Fits, "%s: nothing fits; ruled out: %+v", want, id.RuledOut)
	got := id.Fits[0]
	names := append([]string{got.Profile}, got.SameDecisions...)
	assert.Contains(t, names, model.MustSpec(want).String(), "%s is identified: %+v", want, id.Fits)
	assert.Len(t, id.Fits, 1, "%s alone fits: %+v", want, id.Fits)
	assert.Empty(t, got.RemainingDiffers)
	for _, r := range id.RuledOut {
		assert.NotEmpty(t, r.Timeline, "%s is ruled out with its evidence", r.Profile)
	}
}

// Every profile's own model, probed on the fake clock, is identified with
// its parameters.
func TestIdentifyNamesEveryProfileModel(t *testing.T) {
	for _, p := range append(slices.Clone(profileSpecs), "sliding-log", "gcra:burst=9", "token-bucket:capacity=2,refill=interval",
		"token-bucket:refill=interval", "fixed-window:align=first-hit,count-denied=true", "fixed-window:align=epoch", "sliding-counter:admit=at-most") {
		t.Run(p, func(t *testing.T) {
			id, err := suite.Identify(context.Background(), suite.Config{}, targets.ProfileModel(model.MustSpec(p)))
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
	group := []string{"fixed-window:align=first-hit,count-denied=false", "fixed-window:align=first-hit,count-denied=true", "token-bucket:capacity=limit,refill=interval"}
	for _, p := range group {
		t.Run(p+" without Configure", func(t *testing.T) {
			tg := targets.ProfileModel(model.MustSpec(p))
			tg.Capabilities.Configure = false
			id, err := suite.Identify(context.Background(), suite.Config{}, tg)
			require.NoError(t, err)
			require.Len(t, id.Fits, 1, "one group: %+v", id.Fits)
			assert.ElementsMatch(t, group, append([]string{id.Fits[0].Profile}, id.Fits[0].SameDecisions...))
		})
		t.Run(p+" with Configure", func(t *testing.T) {
			id, err := suite.Identify(context.Background(), suite.Config{}, targets.ProfileModel(model.MustSpec(p)))
			require.NoError(t, err)
			require.Len(t, id.Fits, 1, "%+v", id.Fits)
			assert.Equal(t, p, id.Fits[0].Profile)
			assert.Empty(t, id.Fits[0].SameDecisions, "the raised limit told them apart")
		})
	}
}
