package suite

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

func TestJudgeMatchesVerdict(t *testing.T) {
	// The go test and Ginkgo entry points never pass what the verdict does
	// not call conformant.
	for _, st := range []Status{Passed, Failed, Skipped, Inconclusive, Errored, Interrupted, NotRun} {
		for _, expected := range []bool{false, true} {
			r := Result{ID: "core/reset", Level: Core, Status: st, ExpectedFailure: expected}
			act, _ := judge(r, Config{})
			outcome := (&Report{Level: All, Results: []Result{r, {ID: "x", Status: Passed}}}).Verdict().Outcome
			if act == actPass || act == actLog {
				assert.Equal(t, Conformant, outcome, "%s expected=%v passes the test, so the verdict must be conformant", st, expected)
			}
			if outcome == NotConformant {
				assert.Equal(t, actFail, act, "%s expected=%v", st, expected)
			}
		}
	}
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, Config{}.Validate())
	require.NoError(t, Config{IDs: []string{"core/", "strict/linearizable"}, ExpectFail: []string{"core/reset"}}.Validate())
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{IDs: []string{"core/reset", "core/rset"}}, `unknown spec id "core/rset" (did you mean "core/reset"?)`},
		{Config{IDs: []string{"zzz/"}}, `unknown spec id "zzz/"`},
		{Config{ExpectFail: []string{"core/"}}, `unknown expected failure: spec id "core/"`},
		{Config{Labels: []string{"stric"}}, `did you mean "strict"`},
		{Config{Level: "extreme"}, "unknown level"},
		{Config{Limit: -1}, "Config.Limit -1"},
		{Config{Window: -1}, "Config.Window -1ns"},
		{Config{Level: Core, IDs: []string{"strict/linearizable"}}, "no spec matches"},
		{Config{RealTimeWindow: 1}, "RealTimeWindow"},
		{Config{IDs: []string{"cor/"}}, `did you mean "core/"`},
		{Config{IDs: []string{"reset"}}, `did you mean "core/reset"`},
		{Config{IDs: []string{"strict/boundary"}}, `ids starting with it are strict/boundary-burst-epoch, strict/boundary-burst-first`},
		{Config{IDs: []string{"core/sliding-expiry-realtime"}}, "was retired: it is now core/sliding-expiry"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if assert.Error(t, err, "%+v", tt.cfg) {
			assert.Contains(t, err.Error(), tt.want)
		}
		assert.Zero(t, Count(tt.cfg))
	}
}
