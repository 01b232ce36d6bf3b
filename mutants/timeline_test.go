package mutants_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
)

// failure grades mutant name with spec id alone and returns its failure.
func failure(t *testing.T, name, id string) *result.Failure {
	t.Helper()
	var r result.Result
	// A race a spec catches shows on most runs, not all (make test-full
	// saw non-atomic pass strict/linearizable once, and make test, on two
	// loaded cores, three times in a row): up to 6 tries, a tenth of a
	// second each.
	for try := 1; try <= 6; try++ {
		rep, err := suite.Check(context.Background(), suite.Config{Redis: store, IDs: []string{id}, ReportDir: t.TempDir()}, target(byName(t, name)))
		require.NoError(t, err)
		require.Len(t, rep.Results, 1)
		if r = rep.Results[0]; r.Status != result.Passed {
			break
		}
	}
	require.Equal(t, result.Failed, r.Status, r.Message)
	require.NotNil(t, r.Failure)
	return r.Failure
}

// A failure carries its timeline as data: every operation the message's
// timeline shows, its step the failing one, with the model's answer
// beside the target's.
func TestAFailureCarriesItsTimeline(t *testing.T) {
	f := failure(t, "fixed-window-epoch", "strict/boundary-burst-epoch")
	tl := f.Timeline
	require.NotNil(t, tl)
	assert.Equal(t, tl.Total, len(tl.Ops))
	assert.NotEmpty(t, tl.UserTag)
	require.GreaterOrEqual(t, len(tl.Ops), f.Step)
	wrong := tl.Ops[f.Step-1]
	assert.Equal(t, f.Step, wrong.Step)
	assert.Equal(t, result.OpAllow, wrong.Kind)
	assert.Equal(t, `"u"`, wrong.User)
	assert.Equal(t, f.Got, wrong.Got)
	assert.Equal(t, f.Want, wrong.Want)
	assert.Equal(t, f.At, wrong.At)
	for _, o := range tl.Ops {
		assert.Positive(t, o.Limit, "the configuration in force: %+v", o)
		assert.Positive(t, o.Window)
		assert.NotEmpty(t, o.Want, "on the fake clock the model answers every checked call: %+v", o)
	}
}

// A shrunk schedule says it is one, and its failing step is one of its
// operations.
func TestAShrunkScheduleSaysSo(t *testing.T) {
	f := failure(t, "off-by-one", "strict/differential")
	tl := f.Timeline
	require.NotNil(t, tl)
	assert.Greater(t, tl.ShrunkFrom, len(tl.Ops))
	require.GreaterOrEqual(t, len(tl.Ops), f.Step)
	assert.Equal(t, f.Want, tl.Ops[f.Step-1].Want)
	assert.NotEqual(t, tl.Ops[f.Step-1].Got, tl.Ops[f.Step-1].Want)
}

// A history no serial order explains marks the operations that cannot be
// ordered, each with the answer the model takes there, over their calls'
// intervals.
func TestAHistoryMarksWhatCannotBeOrdered(t *testing.T) {
	f := failure(t, "non-atomic", "strict/linearizable")
	h := f.History
	require.NotNil(t, h)
	unordered := 0
	for i, o := range h.Ops {
		assert.Equal(t, i+1, o.Step)
		assert.GreaterOrEqual(t, o.Until, o.At, "an interval: %+v", o)
		if o.Unordered {
			unordered++
			assert.NotEmpty(t, o.Want, "the model's answer there: %+v", o)
			assert.NotEqual(t, o.Got, o.Want)
		}
	}
	assert.Positive(t, unordered)
	assert.Less(t, unordered, len(h.Ops), "only those that could come next")
}
