package mutants_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/mutants"
	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/suite"
)

// identity is what identify must say of a mutant, on the fake clock: the
// profile that fits (with its parameters), or, when none does, the
// classic mistake of a sliding log that gives every decision ("" with no
// profile: nothing fits and nothing is named). A mutant missing here is a
// sliding log whose fault lies outside the decisions the probes make
// (keys, errors, ids, time), so a sliding log fits.
var identity = map[string]struct{ profile, mistake string }{
	"fixed-window-epoch":  {"fixed-window:align=epoch,count-denied=false,query=read", ""},
	"fixed-window-first":  {"fixed-window:align=first-hit,count-denied=false,query=read", ""},
	"two-window-approx":   {"sliding-counter:admit=below,align=epoch,count-denied=false", ""},
	"same-ms-collision":   {"", "same millisecond count once"},
	"logs-denied":         {"", "logs denied requests"},
	"off-by-one":          {"", "one more than the limit"},
	"under-admits":        {"", "one fewer than the limit"},
	"inclusive-boundary":  {"", "still count at exactly s+W"},
	"list-pop-inclusive":  {"", "still count at exactly s+W"},
	"window-unit-mixup":   {"", "seconds taken as milliseconds"},
	"reconfigure-ignored": {"", ""},
	"config-in-key":       {"sliding-log", ""}, // in steady state: Configure is reported apart
	"clock-ignored":       {"", ""},
	// An EXPIRE on every hit is the window python limits'
	// FixedWindowElasticExpiry keeps: a fault of first-hit, honest as
	// elastic.
	"fw-expire-every-hit":  {"fixed-window:align=elastic,count-denied=true,query=read", ""},
	"fw-incr-expire-split": {"fixed-window:align=first-hit,count-denied=true,query=read", ""},
	// A fault of Configure: the profile the mutant claims, where the
	// probes' raised limit (a change of the limit alone, graded against
	// the readings at once) cannot tell the fault from a reading; none
	// where it can.
	"fw-reconfigure-sticky":                {"", ""},
	"fw-reconfigure-window-ignored":        {"fixed-window:align=epoch,count-denied=false,query=read", ""},
	"fw-reconfigure-raise-ignored":         {"", ""},
	"fw-reconfigure-remaining-old-limit":   {"fixed-window:align=epoch,count-denied=false,query=read", ""},
	"sc-reconfigure-sticky":                {"", ""},
	"sc-reconfigure-window-ignored":        {"sliding-counter:admit=below,align=epoch,count-denied=false", ""},
	"sc-reconfigure-raise-ignored":         {"", ""},
	"sc-reconfigure-remaining-old-limit":   {"sliding-counter:admit=below,align=epoch,count-denied=false", ""},
	"gcra-reconfigure-sticky":              {"gcra:burst=limit", ""},
	"gcra-reconfigure-window-ignored":      {"gcra:burst=limit", ""},
	"gcra-reconfigure-raise-ignored":       {"gcra:burst=limit", ""},
	"gcra-reconfigure-remaining-old-limit": {"gcra:burst=limit", ""},
	"tb-reconfigure-sticky":                {"gcra:burst=limit", ""},
	"tb-reconfigure-window-ignored":        {"gcra:burst=limit", ""},
	"tb-reconfigure-raise-ignored":         {"gcra:burst=limit", ""},
	"tb-reconfigure-remaining-old-limit":   {"gcra:burst=limit", ""},
	"fw-reconfigure-old-while-active":      {"", ""},
	"sc-reconfigure-old-while-active":      {"", ""},
	"gcra-reconfigure-old-while-active":    {"gcra:burst=limit", ""},
	"tb-reconfigure-old-while-active":      {"gcra:burst=limit", ""},
	"gcra-burst-off-by-one":                {"gcra:burst=6", ""},
	// A weighted request decided whole: identify/cost names it so.
	"gcra-debt-whole": {"gcra:burst=limit", ""},
	// The probes land on no edge where the floats drift: a GCRA (its
	// drift is graded by strict/config-range).
	"gcra-float-drift":        {"gcra:burst=limit", ""},
	"tb-refill-wrong-instant": {"", ""},
	"tb-over-capacity":        {"", ""},
	"sc-weight-wrong-window":  {"", ""},
	// Every user shares one log: identify/bucket's two users interleave,
	// which no profile of per-user state explains.
	"global-limit": {"", ""},
}

// keysMayVanish are mutants whose key can expire in real time within a
// probe: ttl-oldest-entry sets a TTL of what is left of the oldest entry's
// window on the fake clock, a millisecond or two at a window's edge, and
// whether Redis expires the key before the next call depends on how fast
// the machine makes it (CI saw it). Its decisions are then a fresh user's,
// so the sliding log fits, or nothing does; nothing else may.
var keysMayVanish = []string{"ttl-oldest-entry"}

// checkLogOrNothing asserts that identify names the sliding log alone, or
// no profile.
func checkLogOrNothing(t *testing.T, tg suite.Target) {
	t.Helper()
	id, err := suite.Identify(context.Background(), suite.Config{Redis: store}, tg)
	require.NoError(t, err)
	var b strings.Builder
	report.Identification(&b, id)
	t.Log("\n" + b.String())
	if len(id.Fits) == 0 {
		return // a vanished key: a mistake it names is a diagnosis of that run
	}
	assert.Equal(t, "sliding-log", id.Fits[0].Profile)
	assert.Len(t, id.Fits, 1)
}

// inRealTime are the mutants whose profile identify must name without
// clock control too. In real time the answers identify cannot decide fit
// every profile, so what it must never do is rule the right one out; the
// classic mistakes it names there are a diagnosis, not a verdict, and a
// loaded machine may leave them unnamed.
var inRealTime = []string{"fixed-window-epoch", "fixed-window-first", "two-window-approx", "fw-incr-expire-split", "gcra-burst-off-by-one", "fw-expire-every-hit"}

// TestIdentifyReportsConfigureApart: an exact log whose keys name the
// limit is the sliding log in steady state, and identify says so, with
// what its Configure does (it forgets every user's history) apart, and the
// answer that shows it; a sliding log whose Configure is right has no
// such finding.
func TestIdentifyReportsConfigureApart(t *testing.T) {
	id, err := suite.Identify(context.Background(), suite.Config{Redis: store}, target(byName(t, "config-in-key")))
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, report.Identification(&b, id))
	t.Log("\n" + b.String())
	require.Len(t, id.Fits, 1)
	assert.Equal(t, "sliding-log", id.Fits[0].Profile)
	require.NotNil(t, id.Configure, "what Configure does is reported apart")
	assert.Contains(t, id.Configure.Does, "forgets every user's history")
	assert.Equal(t, "strict/raised-limit", id.Configure.Evidence.Probe)
	assert.NotEmpty(t, id.Configure.Evidence.Timeline)
	assert.Contains(t, b.String(), "IDENTIFIED")
	assert.Contains(t, b.String(), "Configure forgets every user's history")

	id, err = suite.Identify(context.Background(), suite.Config{Redis: store}, target(byName(t, "late-reset")))
	require.NoError(t, err)
	assert.Nil(t, id.Configure)
}

// TestIdentifyReportsConfigureApartInRealTime: without clock control
// too, the exact log whose keys name the limit is the sliding log with
// Configure apart. In real time a fixed window on the limiter's second
// (align=first-second) explains its decisions as well if the answers
// after a change of configuration go unjudged; identify named that, and
// ruled the sliding log out by the change (python limits 2.8's moving
// window, issue 61), where one profile judged on every answer fits.
func TestIdentifyReportsConfigureApartInRealTime(t *testing.T) {
	testtier.SkipShort(t, "identifies a mutant in real time")
	id, err := suite.Identify(context.Background(), suite.Config{Redis: store}, clockless(byName(t, "config-in-key")))
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, report.Identification(&b, id))
	t.Log("\n" + b.String())
	require.NotEmpty(t, id.Fits)
	var fits []string
	for _, f := range id.Fits {
		assert.False(t, f.ChangeUnjudged, "%s fits with the answers after a change unjudged, where a profile judged on every answer fits", f.Profile)
		fits = append(append(fits, f.Profile), f.SameDecisions...)
	}
	assert.Contains(t, fits, "sliding-log")
	require.NotNil(t, id.Configure, "what Configure does is reported apart")
	assert.Contains(t, id.Configure.Does, "forgets every user's history")
}

// TestIdentifyNamesEveryMutant: identify names the algorithm of every
// mutant, with its parameters, or the classic mistake it makes, or says
// nothing fits; without clock control too, for those whose fault shows in
// real time.
func TestIdentifyNamesEveryMutant(t *testing.T) {
	sem := make(chan struct{}, 3) // real-time probes mostly wait
	for _, m := range mutants.All() {
		if testtier.Rest() {
			break // the default tier identified them all on the fake clock
		}
		want, ok := identity[m.Name]
		if !ok {
			want.profile = "sliding-log"
		}
		t.Run(m.Name, func(t *testing.T) {
			if slices.Contains(keysMayVanish, m.Name) {
				checkLogOrNothing(t, target(m))
				return
			}
			checkIdentity(t, target(m), want.profile, want.mistake)
		})
	}
	t.Run("real-time", func(t *testing.T) {
		testtier.SkipShort(t, "identifies mutants in real time")
		// Real time waits for windows to pass: make test identifies a
		// sample, which rotates with the seed; the full tier all of them.
		for _, name := range testtier.Sample(t, "mutants identified in real time", inRealTime, 2, func(s string) string { return s }) {
			m := byName(t, name)
			want := identity[name]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				sem <- struct{}{}
				defer func() { <-sem }()
				id, err := suite.Identify(context.Background(), suite.Config{Redis: store}, clockless(m))
				require.NoError(t, err)
				var b strings.Builder
				report.Identification(&b, id)
				t.Log("\n" + b.String())
				var fits []string
				for _, f := range id.Fits {
					fits = append(append(fits, f.Profile), f.SameDecisions...)
				}
				assert.Contains(t, fits, want.profile, "the profile is never ruled out")
			})
		}
	})
}

func checkIdentity(t *testing.T, tg suite.Target, profile, mistake string) {
	t.Helper()
	id, err := suite.Identify(context.Background(), suite.Config{Redis: store}, tg)
	require.NoError(t, err)
	var b strings.Builder
	report.Identification(&b, id)
	t.Log("\n" + b.String())
	if profile == "" {
		assert.Empty(t, id.Fits, "no profile fits")
		if mistake == "" {
			assert.Empty(t, id.Mistakes, "no mistake is named")
		} else if assert.Len(t, id.Mistakes, 1) {
			assert.Contains(t, id.Mistakes[0], mistake)
		}
		return
	}
	require.NotEmpty(t, id.Fits, "%s fits", profile)
	assert.Equal(t, profile, id.Fits[0].Profile)
	assert.Len(t, id.Fits, 1, "identified: one profile, or one group of profiles that decide alike, not an ambiguity")
}

func byName(t *testing.T, name string) mutants.Mutant {
	for _, m := range mutants.All() {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no mutant %s", name)
	return mutants.Mutant{}
}
