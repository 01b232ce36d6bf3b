package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/result"
)

// A window is raised by whole seconds unless the target declares its
// granularity.
func TestRaiseUnit(t *testing.T) {
	assert.Equal(t, time.Second, raiseUnit(contract.Capabilities{}, time.Millisecond), "learned: it takes 1.5s")
	assert.Equal(t, time.Second, raiseUnit(contract.Capabilities{}, time.Second))
	assert.Equal(t, time.Millisecond, raiseUnit(contract.Capabilities{WindowGranularity: time.Millisecond}, time.Millisecond))
	assert.Equal(t, 300*time.Millisecond, raiseUnit(contract.Capabilities{WindowGranularity: 300 * time.Millisecond}, 300*time.Millisecond))
	assert.Equal(t, 2*time.Second, raisedWindow(250*time.Millisecond, raiseUnit(contract.Capabilities{}, time.Millisecond)))
}

// A real-time window raised for slow round trips is five margins, rounded
// up to a tenth of a second, then to the target's granularity.
func TestRaisedWindow(t *testing.T) {
	for _, c := range []struct {
		margin, granularity time.Duration
		want                time.Duration
	}{
		{250 * time.Millisecond, time.Millisecond, 1300 * time.Millisecond},
		{250 * time.Millisecond, time.Second, 2 * time.Second},
		{200 * time.Millisecond, time.Second, time.Second},
		{201 * time.Millisecond, time.Second, 2 * time.Second},
		{201 * time.Millisecond, 300 * time.Millisecond, 1200 * time.Millisecond},
	} {
		if got := raisedWindow(c.margin, c.granularity); got != c.want {
			t.Errorf("raisedWindow(%v, %v) = %v, want %v", c.margin, c.granularity, got, c.want)
		}
	}
}

// A fit's parameters that no answer decided are those a profile of its
// group of the same algorithm holds otherwise: shown as "?", with the
// values, and its description claims neither.
func TestUndecidedParams(t *testing.T) {
	group := []model.Variant{
		model.MustVariant("fixed-window:align=epoch,count-denied=false,query=read"),
		model.MustVariant("fixed-window:align=epoch,count-denied=true,query=read"),
		model.MustVariant("gcra:burst=limit"), // another algorithm: says nothing of these
	}
	got := undecidedParams(group, true)
	require.Len(t, got, 1)
	assert.Equal(t, "count-denied", got[0].Param)
	assert.Equal(t, []string{"false", "true"}, got[0].Values)
	assert.Contains(t, got[0].Why, "no answer tells count-denied=false from count-denied=true")
	assert.NotContains(t, got[0].Why, "no query")
	assert.Contains(t, undecidedParams(group, false)[0].Why, "and no query of what remains (the probes made none)")
	fit := result.Fit{Profile: group[0].String(), Undecided: got}
	assert.Equal(t, "fixed-window:align=epoch,count-denied=?,query=read", fit.Name())

	desc := groupDescription(group, 20, time.Minute)
	assert.Equal(t, "a fixed window of 1m0s aligned to the epoch, not counting denied requests or counting denied requests, limit 20", desc)

	// Alone, or with profiles of other algorithms, nothing is undecided.
	assert.Empty(t, undecidedParams(group[:1], true))
	assert.Empty(t, undecidedParams([]model.Variant{group[0], group[2]}, true))
	assert.Equal(t, "fixed-window:align=epoch,count-denied=false,query=read", result.Fit{Profile: group[0].String()}.Name())

	// Clauses are split outside parentheses.
	assert.Equal(t, []string{"a (b, c)", "d"}, splitClauses("a (b, c), d"))
}

// One limiter has one clock: users whose answers fit phases far apart
// are not explained by it, users whose phases are within a late tick
// are, across the second's wrap too.
func TestOnePhaseExplainsEveryUser(t *testing.T) {
	assert.True(t, onePhase(nil, clockLate), "no user: nothing against it")
	assert.True(t, onePhase([][]int64{{100, 400}, {400, 700}}, 0), "400 fits both")
	assert.False(t, onePhase([][]int64{{100}, {400}}, clockLate), "300ms apart")
	assert.True(t, onePhase([][]int64{{100}, {120}}, clockLate), "a tick 20ms late")
	assert.False(t, onePhase([][]int64{{100}, {130}}, clockLate), "30ms apart")
	assert.True(t, onePhase([][]int64{{990}, {5}}, clockLate), "15ms apart across the wrap")
	assert.False(t, onePhase([][]int64{{100}, {}}, clockLate), "a user no phase explains")
}

// A profile whose search ran past identify's budget is neither a fit nor
// ruled out: with no fit, the identification is undecided, never "none
// fits". Seven answers allowed within 60ms at a limit of 5 per second
// rule the sliding log out (its replay takes no search), and a fixed
// window whose boundary falls among them explains them, when judged.
func TestUnjudgedProfilesMakeIdentifyUndecided(t *testing.T) {
	start := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	p := probe{id: "core/within-limit", n: 5, w: time.Second, realTime: true, start: start}
	for i := range 7 {
		at := start.Add(time.Duration(i) * 10 * time.Millisecond)
		p.trace = append(p.trace, TraceOp{At: at, until: at.Add(5 * time.Millisecond), Kind: model.OpAllow, User: "u", Got: AllowedWord(true)})
	}
	cands, err := candidates(model.Builtin(), 5, 5)
	require.NoError(t, err)

	starved := &result.Identification{Limit: 5, Window: time.Second}
	judgeFits(starved, cands, []probe{p}, false, model.NewBudget(1))
	assert.Empty(t, starved.Fits)
	assert.NotEmpty(t, starved.Unjudged)
	assert.True(t, starved.Undecided(), "profiles not judged: undecided, not none fits")
	assert.NotContains(t, starved.Unjudged, "sliding-log", "the sliding log takes no search: ruled out")

	// Once the budget is spent, a profile whose replay takes no step (the
	// sliding log's) is judged still: replays after it (with Configure
	// apart) find it.
	within := probe{id: "core/within-limit", n: 5, w: time.Second, realTime: true, start: start, trace: p.trace[:5]}
	b := model.NewBudget(1)
	judgeFits(&result.Identification{Limit: 5, Window: time.Second}, cands, []probe{within}, false, b)
	require.True(t, b.Exhausted())
	after := &result.Identification{Limit: 5, Window: time.Second}
	judgeFits(after, cands, []probe{within}, false, b)
	require.NotEmpty(t, after.Fits)
	assert.Equal(t, "sliding-log", after.Fits[0].Profile, "judged whole, the budget spent before it")
	assert.NotContains(t, after.Unjudged, "sliding-log")
	assert.NotEmpty(t, after.Unjudged, "the searching profiles are not judged")

	judged := &result.Identification{Limit: 5, Window: time.Second}
	judgeFits(judged, cands, []probe{p}, false, model.NewBudget(identifySteps))
	assert.Empty(t, judged.Unjudged)
	assert.NotEmpty(t, judged.Fits, "judged, a fixed window explains them")
	assert.False(t, judged.Undecided())
}
