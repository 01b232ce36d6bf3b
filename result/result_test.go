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
