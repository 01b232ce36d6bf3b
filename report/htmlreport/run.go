package htmlreport

import (
	"fmt"
	"io"
	"strings"

	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/result"
)

// runPage is the page of a run.
type runPage struct {
	Head      head
	Target    string
	Verdict   verdictView
	Reasons   []string
	Diagnosis string
	Facts     []Fact
	Levels    []levelView
	Specs     []specView
	Details   []detailView
	Notes     []string
}

type levelView struct {
	Level, Class, Word                 string
	Passed, Failed, Skipped, Undecided int
}

type specView struct {
	ID, Anchor, Level, Class, Word, Time, Mode, Text string
}

// detailView is what a spec that failed, or could not be decided, shows.
type detailView struct {
	ID, Anchor, Class, Word, Summary string
	Explained, Hint, Shrunk          string
	Reproduce, Message               string
	Timeline, History                *timelineView
}

// Run writes rep as an HTML page: the verdict and the verdict of each
// level, every spec with its result and time, and for each spec that
// failed (unless expected) or could not be decided, its evidence: the
// timeline as a chart (a lane per user and instance, each answer a mark
// of its shape, the model's answer beside a wrong one, the window of the
// first wrong answer shaded), the concurrent history of a
// linearizability failure with the operations that cannot be ordered,
// the shrunk schedule, the whole message and the command that reproduces
// it (meta.Reproduce with the spec's --id).
func Run(w io.Writer, rep *result.Report, meta report.Meta) error {
	v := rep.Verdict()
	p := runPage{Head: newHead("rlconform: "+rep.Target, meta.Version), Target: rep.Target, Verdict: verdictOf(v),
		Reasons: v.Reasons, Diagnosis: v.Diagnosis(), Facts: runFacts(rep, meta), Notes: rep.Notes}
	for _, lv := range rep.Levels() {
		if lv.Total == 0 {
			continue
		}
		word, class := outcomeWord(lv.Outcome)
		if lv.NothingGraded() {
			word = "– nothing graded"
		}
		p.Levels = append(p.Levels, levelView{Level: string(lv.Level), Class: class, Word: word,
			Passed: lv.Passed, Failed: lv.Failed, Skipped: lv.Skipped, Undecided: lv.Undecided})
	}
	for i, r := range rep.Results {
		s := specView{ID: r.ID, Level: string(r.Level), Time: fmt.Sprintf("%d ms", r.Duration.Milliseconds()), Mode: modeWord(r.Mode), Text: specText(r)}
		s.Word, s.Class = statusWord(r)
		if readable(r) {
			s.Anchor = anchor("spec-", r.ID)
			p.Details = append(p.Details, detail(rep, r, i, s, meta))
		}
		p.Specs = append(p.Specs, s)
	}
	return write(w, "run", p)
}

// readable reports whether r's evidence needs reading: a failure not
// expected, an inconclusive or errored spec.
func readable(r result.Result) bool {
	switch r.Status {
	case result.Failed:
		return !r.ExpectedFailure
	case result.Inconclusive, result.Errored:
		return true
	}
	return false
}

func verdictOf(v result.Verdict) verdictView {
	word, class := outcomeWord(v.Outcome)
	sign, _, _ := cutSign(word)
	return verdictView{Class: class, Badge: sign, Line: v.String()}
}

// outcomeWord is an outcome's word with its sign, and its class.
func outcomeWord(o result.Outcome) (string, string) {
	switch o {
	case result.Conformant:
		return "✔ conformant", "conformant"
	case result.NotConformant:
		return "✘ not conformant", "not-conformant"
	}
	return "? undecided", "undecided"
}

// statusWord is r's result in words, with its sign, and its class.
func statusWord(r result.Result) (string, string) {
	switch {
	case r.ExpectedFailure && r.Status == result.Failed:
		return "⚠ expected failure", "skip"
	case r.ExpectedFailure && r.Status == result.Passed:
		return "! passed, but listed as an expected failure", "inconclusive"
	}
	switch r.Status {
	case result.Passed:
		return "✔ pass", "pass"
	case result.Failed:
		return "✘ fail", "fail"
	case result.Skipped:
		return "– skip", "skip"
	case result.Inconclusive:
		return "? inconclusive", "inconclusive"
	case result.Errored:
		return "⛔ could not be graded", "error"
	case result.Interrupted:
		return "■ interrupted", "interrupted"
	}
	return "■ " + string(r.Status), "not-run"
}

func modeWord(m result.Mode) string {
	switch m {
	case result.FakeClock:
		return "fake clock"
	case result.RealTime:
		return "real time"
	}
	return ""
}

// specText is what the table says of r: its rule when it passed, else
// why not.
func specText(r result.Result) string {
	switch {
	case r.Status == result.Passed && r.Message != "":
		return r.Rule + " (" + r.Message + ")"
	case r.Status == result.Passed:
		return r.Rule
	case r.Failure != nil && r.Failure.Summary != "":
		return r.Failure.Summary
	}
	return firstLine(r.Message)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// runFacts are what the page says of the run: the target, its level,
// profile and seed, and the grader.
func runFacts(rep *result.Report, meta report.Meta) []Fact {
	facts := []Fact{{Label: "target", Value: rep.Target, Mono: true}}
	if len(rep.Targets) > 1 {
		facts = append(facts, Fact{Label: "instances", Value: strings.Join(rep.Targets, ", "), Mono: true})
	}
	facts = append(facts, Fact{Label: "level", Value: string(rep.Level)}, Fact{Label: "profile", Value: rep.Profile, Mono: true},
		Fact{Label: "seed", Value: fmt.Sprint(rep.Seed), Mono: true})
	if rep.Selection != "" {
		facts = append(facts, Fact{Label: "only", Value: rep.Selection})
	}
	if rep.StoppedAt != "" {
		facts = append(facts, Fact{Label: "stopped early", Value: "at its first failure, " + rep.StoppedAt + " (fail-fast)"})
	}
	if rep.Aborted != "" {
		facts = append(facts, Fact{Label: "stopped early", Value: rep.Aborted})
	}
	if meta.Version != "" {
		facts = append(facts, Fact{Label: "rlconform", Value: meta.Version, Mono: true})
	}
	return facts
}
