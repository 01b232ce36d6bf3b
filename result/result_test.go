package result

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestVerdict(t *testing.T) {
	res := func(st Status, expected bool) Result {
		return Result{ID: "core/reset", Level: Core, Status: st, ExpectedFailure: expected, Message: "why\nmore"}
	}
	tests := []struct {
		name    string
		results []Result
		aborted string
		want    Outcome
	}{
		{"all pass", []Result{res(Passed, false)}, "", Conformant},
		{"a failure", []Result{res(Passed, false), res(Failed, false)}, "", NotConformant},
		{"an expected failure", []Result{res(Failed, true)}, "", Conformant},
		{"an expected failure that passed", []Result{res(Passed, true)}, "", Undecided},
		{"inconclusive", []Result{res(Passed, false), res(Inconclusive, false)}, "", Undecided},
		{"errored", []Result{res(Passed, false), res(Errored, false)}, "", Undecided},
		{"failed beats errored", []Result{res(Failed, false), res(Errored, false)}, "", NotConformant},
		{"all skipped", []Result{res(Skipped, false)}, "", Undecided},
		{"nothing selected", nil, "", Undecided},
		{"aborted", []Result{res(Passed, false), res(Interrupted, false)}, "the store died", Undecided},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := &Report{Level: All, Results: tt.results, Aborted: tt.aborted}
			v := rep.Verdict()
			assert.Equal(t, tt.want, v.Outcome, v.Reasons)
			assert.Equal(t, tt.want == Conformant, rep.Err() == nil)
			if tt.want != Conformant {
				assert.NotEmpty(t, v.Reasons, "a verdict that is not conformant says why")
			}
		})
	}
}

// A level that graded nothing (every spec skipped) is never read as
// conformant, and the verdict line claims only the levels that graded a
// spec, naming the others apart; the outcome is what was graded.
func TestLevelsThatGradedNothing(t *testing.T) {
	pass := func(id string, l Level) Result { return Result{ID: id, Level: l, Status: Passed} }
	skip := func(id string, l Level) Result {
		return Result{ID: id, Level: l, Status: Skipped, Message: "needs Reset, which the target does not declare"}
	}
	for _, c := range []struct {
		name      string
		level     Level
		results   []Result
		want      Outcome
		line      string
		notGraded []Level
	}{
		{"every level graded", All, []Result{pass("core/a", Core), pass("strict/b", Strict), pass("robust/c", Robust)},
			Conformant, "CONFORMANT at all: 3 of 3 graded", nil},
		{"robust graded nothing", All, []Result{pass("core/a", Core), pass("strict/b", Strict), skip("robust/c", Robust)},
			Conformant, "CONFORMANT at strict (nothing graded at robust): 2 of 3 graded", []Level{Robust}},
		{"strict and robust graded nothing", All, []Result{pass("core/a", Core), skip("strict/b", Strict), skip("robust/c", Robust)},
			Conformant, "CONFORMANT at core (nothing graded at strict, robust): 1 of 3 graded", []Level{Strict, Robust}},
		{"a gap", All, []Result{pass("core/a", Core), skip("strict/b", Strict), pass("robust/c", Robust)},
			Conformant, "CONFORMANT on levels core and robust only (nothing graded at strict): 2 of 3 graded", []Level{Strict}},
		{"only a higher level", Strict, []Result{skip("core/a", Core), pass("strict/b", Strict)},
			Conformant, "CONFORMANT on level strict only (nothing graded at core): 1 of 2 graded", []Level{Core}},
		{"a failure, a level not graded", All, []Result{{ID: "core/a", Level: Core, Status: Failed}, pass("strict/b", Strict), skip("robust/c", Robust)},
			NotConformant, "NOT CONFORMANT at strict (nothing graded at robust): 2 of 3 graded", []Level{Robust}},
		{"nothing graded at all", All, []Result{skip("core/a", Core), skip("robust/c", Robust)},
			Undecided, "UNDECIDED at all: 0 of 2 graded", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := &Report{Level: c.level, Results: c.results}
			v := rep.Verdict()
			assert.Equal(t, c.want, v.Outcome, v.Reasons)
			assert.Equal(t, c.notGraded, v.NotGraded)
			assert.Contains(t, v.String(), c.line)
			for _, lv := range rep.Levels() {
				if lv.NothingGraded() {
					assert.Equal(t, Undecided, lv.Outcome, "a level that graded nothing is never conformant")
					if v.Coverage.Graded > 0 {
						assert.Contains(t, c.notGraded, lv.Level, "a level that graded nothing is named apart")
					}
				}
			}
		})
	}
}
