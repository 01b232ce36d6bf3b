package engine

import (
	"testing"

	"github.com/rlconform/rlconform/result"
	"github.com/stretchr/testify/assert"
)

func TestJudgeMatchesVerdict(t *testing.T) {
	// The go test and Ginkgo entry points never pass what the verdict does
	// not call conformant.
	for _, st := range []result.Status{result.Passed, result.Failed, result.Skipped, result.Inconclusive, result.Errored, result.Interrupted, result.NotRun} {
		for _, expected := range []bool{false, true} {
			r := result.Result{ID: "core/reset", Level: result.Core, Status: st, ExpectedFailure: expected}
			act, _ := judge(r, Config{})
			outcome := (&result.Report{Level: result.All, Results: []result.Result{r, {ID: "x", Status: result.Passed}}}).Verdict().Outcome
			if act == ActPass || act == ActLog {
				assert.Equal(t, result.Conformant, outcome, "%s expected=%v passes the test, so the verdict must be conformant", st, expected)
			}
			if outcome == result.NotConformant {
				assert.Equal(t, ActFail, act, "%s expected=%v", st, expected)
			}
		}
	}
}

// TestNoSpecNamesACauseAnotherRulesOut is the case: remaining read
// from a window start truncated to whole seconds fails core/remaining,
// whose answers a log that logs denied requests gives too; but
// strict/denied-not-logged passed, and a log that logs denied requests
// would have failed it. Neither the spec nor the run may name it.
func TestNoSpecNamesACauseAnotherRulesOut(t *testing.T) {
	denied := clue{key: "mistake:count-denied", name: "a sliding log that logs denied requests too", hint: "log only allowed"}
	trunc := clue{key: "mistake:truncated-start", name: "a sliding log whose remaining counts from the window's start truncated to whole seconds", hint: "count from now - W"}
	failed := result.Result{ID: "core/remaining", Status: result.Failed, Failure: &result.Failure{Kind: result.KindWrongAnswer}}
	diags := map[string]*diagnosed{"core/remaining": {failed: true, base: "core/remaining: ...\n  step 16: wrong\n", hint: "the spec's own hint",
		clues: []clue{with(denied, true), with(trunc, true)}}}
	render(&failed, diags["core/remaining"], nil)
	assert.Equal(t, []string{denied.name, trunc.name}, failed.Failure.Explained, "alone, the spec's answers fit both")

	passed := result.Result{ID: "strict/denied-not-logged", Status: result.Passed}
	diags["strict/denied-not-logged"] = &diagnosed{graded: true, clues: []clue{with(denied, false), with(trunc, true)}}
	errored := result.Result{ID: "strict/linearizable", Status: result.Errored} // says nothing, whatever its clues
	diags["strict/linearizable"] = &diagnosed{graded: true, clues: []clue{with(trunc, false)}}
	rep := &result.Report{Results: []result.Result{failed, passed, errored}}
	reconcile(rep, diags)

	got := rep.Results[0]
	assert.Equal(t, []string{trunc.name}, got.Failure.Explained)
	assert.Equal(t, "count from now - W", got.Failure.Hint)
	assert.Contains(t, got.Message, "diagnosis: every answer of this spec is what "+trunc.name)
	assert.Contains(t, got.Message, "(not "+denied.name+", which gives these answers too: strict/denied-not-logged rules it out)")
	v := rep.Verdict()
	assert.Equal(t, []string{trunc.name}, v.Explained)
	assert.Equal(t, 2, v.Weighed)
	assert.Contains(t, v.Diagnosis(), "diagnosis of the run: every answer of the 2 specs")

	// When the run rules out every cause, nothing is named, and the hint
	// is the spec's own.
	diags["strict/denied-not-logged"].clues = []clue{with(denied, false), with(trunc, false)}
	reconcile(rep, diags)
	got = rep.Results[0]
	assert.Empty(t, got.Failure.Explained)
	assert.Equal(t, "the spec's own hint", got.Failure.Hint)
	assert.NotContains(t, got.Message, "diagnosis:")
	assert.Empty(t, rep.Verdict().Diagnosis())
}

func with(c clue, explains bool) clue { c.explains, c.fits = explains, explains; return c }
