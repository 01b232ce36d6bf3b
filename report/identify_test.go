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

// No fit, with profiles whose search ran past identify's budget, is
// UNDECIDED (JSON outcome "undecided"), naming them: never NONE FITS.
func TestIdentificationWithProfilesNotJudgedIsUndecided(t *testing.T) {
	id := &result.Identification{Target: "t", Limit: 5, Window: time.Second, Mode: "real-time", Burst: 5,
		RuledOut: []result.RuledOut{{Profile: "sliding-log", Probe: "core/within-limit", Step: 6, Operation: `AllowRequest("u")`, Got: "allowed", Want: "denied"}}}
	var b strings.Builder
	require.NoError(t, Identification(&b, id))
	assert.Contains(t, b.String(), "NONE FITS")

	id.Unjudged = []string{"fixed-window:align=first-second,count-denied=false,query=read"}
	b.Reset()
	require.NoError(t, Identification(&b, id))
	assert.NotContains(t, b.String(), "NONE FITS")
	assert.Contains(t, b.String(), "UNDECIDED: no profile judged explains every answer, but 1 profile could not be judged (below) and may explain them all")
	assert.Contains(t, b.String(), "not judged fixed-window:align=first-second,count-denied=false,query=read: neither fits nor ruled out")

	b.Reset()
	require.NoError(t, IdentificationJSON(&b, id, Meta{}))
	assert.Contains(t, b.String(), `"outcome": "undecided"`)
	assert.Contains(t, b.String(), `"unjudged": [`)
}
