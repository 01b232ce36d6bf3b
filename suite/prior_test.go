package suite_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// takenFromIdentify are the specs of rep whose results a run took from
// its Config.Prior.
func takenFromIdentify(rep *result.Report) map[string]bool {
	taken := map[string]bool{}
	for _, r := range rep.Results {
		if strings.HasPrefix(r.Message, "passed as identify probed it") {
			taken[r.ID] = true
		}
	}
	return taken
}

// A run given an identification of its target takes the probes that
// passed, graded as the run grades them, and grades the rest: a failure,
// another profile, another limit or another target are graded again.
func TestRunTakesWhatIdentifyPassed(t *testing.T) {
	t.Parallel() // in memory
	ctx := context.Background()
	log := targets.ProfileModel(model.MustVariant("sliding-log"))
	id, err := suite.Identify(ctx, suite.Config{}, log)
	require.NoError(t, err)
	require.NotEmpty(t, id.Graded, "identify keeps its catalogue probes' results")

	rep, err := suite.Check(ctx, suite.Config{Prior: id}, log)
	require.NoError(t, err)
	taken := takenFromIdentify(rep)
	assert.Len(t, taken, len(id.Graded), "every probe passed and is taken")
	assert.Equal(t, result.Conformant, rep.Verdict().Outcome)
	assert.Contains(t, strings.Join(rep.Notes, "\n"), "not graded again")

	for name, cfg := range map[string]suite.Config{
		"another limit":   {Prior: id, Limit: 7},
		"another profile": {Prior: id, Profile: "gcra:burst=limit"},
	} {
		rep, err := suite.Check(ctx, cfg, log)
		require.NoError(t, err)
		assert.Empty(t, takenFromIdentify(rep), "%s: nothing taken", name)
	}
	other := log
	other.Name += " (another)"
	rep, err = suite.Check(ctx, suite.Config{Prior: id}, other)
	require.NoError(t, err)
	assert.Empty(t, takenFromIdentify(rep), "another target: nothing taken")
}

// A probe that failed under the run's profile is graded again, and fails
// again: only passes are taken.
func TestRunGradesAgainWhatIdentifyFailed(t *testing.T) {
	t.Parallel() // in memory
	ctx := context.Background()
	fixed := targets.ProfileModel(model.MustVariant("fixed-window:align=epoch"))
	id, err := suite.Identify(ctx, suite.Config{}, fixed)
	require.NoError(t, err)
	failed := map[string]bool{}
	for _, g := range id.Graded {
		if g.Result.Status == result.Failed {
			failed[g.Result.ID] = true
		}
	}
	require.NotEmpty(t, failed, "a fixed window fails some probes under the sliding log")
	rep, err := suite.Check(ctx, suite.Config{Prior: id}, fixed)
	require.NoError(t, err)
	taken := takenFromIdentify(rep)
	assert.NotEmpty(t, taken)
	for _, r := range rep.Results {
		if failed[r.ID] {
			assert.False(t, taken[r.ID], "%s failed in identify: graded again", r.ID)
			assert.Equal(t, result.Failed, r.Status, "%s fails again", r.ID)
		}
	}
}
