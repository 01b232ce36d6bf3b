package suite_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// profileSpecs are the profiles and parameters the self-test grades.
var profileSpecs = []string{
	"fixed-window:align=epoch", "fixed-window:align=first-grid,count-denied=true", "fixed-window:align=first-hit",
	"sliding-counter", "sliding-counter:count-denied=true",
	"gcra", "gcra:burst=2",
	"token-bucket:capacity=8", "token-bucket:refill=interval,capacity=3",
}

// Each profile's own model, graded against its profile, passes every spec
// that grades it, on the fake clock: the catalogue's rules are the
// profile's.
func TestProfileModelsPassTheirProfile(t *testing.T) {
	for _, p := range profileSpecs {
		t.Run(p, func(t *testing.T) {
			rep, err := suite.Check(context.Background(), suite.Config{Profile: p, ReportDir: t.TempDir()}, targets.ProfileModel(model.MustSpec(p)))
			require.NoError(t, err)
			for _, r := range rep.Results {
				assert.NotEqual(t, suite.Failed, r.Status, "%s under %s:\n%s", r.ID, p, r.Message)
				assert.NotEqual(t, suite.Errored, r.Status, "%s under %s:\n%s", r.ID, p, r.Message)
			}
			assert.Greater(t, rep.Count(suite.Passed), 20, "most of the catalogue grades %s", p)
		})
	}
}
