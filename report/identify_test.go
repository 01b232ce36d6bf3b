package report

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/result"
)

// A profile that explains every decision, where only what remains (or
// Configure) answers otherwise, is IDENTIFIED with the query read apart,
// as Configure is: python limits 2.8's moving window, whose query counts
// from a window start truncated to whole seconds, is the sliding log.
func TestIdentificationReadsQueriesApart(t *testing.T) {
	id := &result.Identification{Target: "t", Limit: 5, Window: time.Second, Mode: "real-time", Burst: 5,
		Fits: []result.Fit{{Profile: "sliding-log", Description: "the exact sliding log of 5 per 1s", Decided: 210,
			RemainingDiffers: `core/remaining step 16 at +1020ms: GetRemainingRequests("u") = 0, the profile says another count`}}}
	var b strings.Builder
	require.NoError(t, Identification(&b, id))
	assert.Contains(t, b.String(), "IDENTIFIED: one profile explains every allow and deny answer; GetRemainingRequests answers otherwise (below)")
	assert.Contains(t, b.String(), `GetRemainingRequests answers otherwise: core/remaining step 16`)

	id.Configure = &result.ConfigureFinding{Does: "Configure forgets every user's history"}
	b.Reset()
	require.NoError(t, Identification(&b, id))
	assert.Contains(t, b.String(), "IDENTIFIED: one profile explains every allow and deny answer in steady state; GetRemainingRequests and Configure answer otherwise (below)")

	id.Fits[0].RemainingDiffers = ""
	b.Reset()
	require.NoError(t, Identification(&b, id))
	assert.Contains(t, b.String(), "IDENTIFIED: one profile explains every answer in steady state; Configure does otherwise (below)")
}
