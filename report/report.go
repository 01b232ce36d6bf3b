// Package report renders a run's results: the plain-text table people read,
// and the formats CI systems read (JUnit XML, JSON, a Markdown summary).
// Every format says the same verdict, from result.Report.Verdict. It renders
// what rlconform identify found too ([Identification]).
package report

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rlconform/rlconform/result"
)

// Meta is what a report says beyond the results: the grader's version,
// and the command that runs the same run again.
type Meta struct {
	// Version is the grader's version in a line (internal/version), the
	// catalogue's version in it too.
	Version string
	// Catalogue is the catalogue's version alone: a hash of its rules,
	// the same for two graders that judge by the same rules.
	Catalogue string
	// Reproduce is the command line that grades the same target again
	// with the same seed, level and profile, to which a report adds a
	// spec's --id ("" when unknown).
	Reproduce string
}

// Text writes the table of results, the verdict of each level and the
// verdict line.
func Text(w io.Writer, rep *result.Report) error {
	var b strings.Builder
	scale := ""
	if rep.Limit > 0 && rep.Window > 0 {
		scale = fmt.Sprintf(", %d per %v", rep.Limit, rep.Window)
	}
	fmt.Fprintf(&b, "%s (level %s, profile %s%s, seed %d)\n", rep.Target, rep.Level, rep.Profile, scale, rep.Seed)
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "  %-13s %-34s %6dms", r.Status, r.ID, r.Duration.Milliseconds())
		if r.Mode == result.RealTime {
			b.WriteString("  (real time)")
		}
		switch {
		case r.ExpectedFailure && r.Status == result.Failed:
			b.WriteString("  (expected failure)")
		case r.ExpectedFailure && r.Status == result.Passed:
			b.WriteString("  (listed as an expected failure: remove it from the list)")
		case r.Status == result.Skipped, r.Status == result.Interrupted, r.Status == result.NotRun:
			fmt.Fprintf(&b, "  %s", r.Message)
		case r.Status == result.Inconclusive, r.Status == result.Errored:
			fmt.Fprintf(&b, "  %s", summary(r))
		case r.Status == result.Passed && r.Message != "":
			fmt.Fprintf(&b, "  %s", r.Message)
		}
		b.WriteByte('\n')
	}
	for _, lv := range rep.Levels() {
		if lv.Total == 0 {
			continue
		}
		outcome := string(lv.Outcome)
		if lv.NothingGraded() {
			outcome = "nothing graded"
		}
		fmt.Fprintf(&b, "  %s: %s (%d passed, %d failed, %d skipped, %d undecided)\n",
			lv.Level, outcome, lv.Passed, lv.Failed, lv.Skipped, lv.Undecided)
	}
	for _, note := range rep.Notes {
		fmt.Fprintf(&b, "  note: %s\n", note)
	}
	v := rep.Verdict()
	fmt.Fprintf(&b, "%s\n", v)
	for _, why := range v.Reasons {
		fmt.Fprintf(&b, "  - %s\n", why)
	}
	if d := v.Diagnosis(); d != "" {
		fmt.Fprintf(&b, "%s\n", d)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Failures writes the whole message of every result that needs reading: each
// unexpected failure, inconclusive or errored spec.
func Failures(w io.Writer, rep *result.Report) error {
	var b strings.Builder
	for _, r := range rep.Results {
		if needsReading(r) {
			fmt.Fprintf(&b, "\n%s\n", strings.TrimRight(r.Message, "\n"))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func needsReading(r result.Result) bool {
	switch r.Status {
	case result.Failed:
		return !r.ExpectedFailure
	case result.Inconclusive, result.Errored:
		return true
	}
	return false
}

type jsonFailure struct {
	Kind        string   `json:"kind"`
	Summary     string   `json:"summary"`
	Step        int      `json:"step,omitempty"`
	AtMs        float64  `json:"at_ms,omitempty"`
	Instance    int      `json:"instance,omitempty"`
	Operation   string   `json:"operation,omitempty"`
	Got         string   `json:"got,omitempty"`
	Want        string   `json:"want,omitempty"`
	Explanation string   `json:"explanation,omitempty"`
	Hint        string   `json:"hint,omitempty"`
	Explained   []string `json:"explained_by,omitempty"`
	// Timeline is every operation of the spec, as data; History, for a
	// history no serial order explains, its operations over their calls'
	// intervals, those that cannot be ordered marked.
	Timeline *jsonTimeline `json:"timeline,omitempty"`
	History  *jsonTimeline `json:"history,omitempty"`
}

// jsonDiagnosis is the run's diagnosis (result.Verdict.Explained).
type jsonDiagnosis struct {
	Explained []string `json:"explained_by"`
	Hint      string   `json:"hint,omitempty"`
	Weighed   int      `json:"specs_weighed"`
}

type jsonResult struct {
	ID         string       `json:"id"`
	Level      string       `json:"level"`
	Rule       string       `json:"rule"`
	Status     string       `json:"status"`
	Mode       string       `json:"mode,omitempty"`
	Expected   bool         `json:"expected_failure,omitempty"`
	Structural bool         `json:"structural,omitempty"`
	Message    string       `json:"message,omitempty"`
	Failure    *jsonFailure `json:"failure,omitempty"`
	DurationMs float64      `json:"duration_ms"`
}

type jsonCoverage struct {
	Selected         int            `json:"selected"`
	Graded           int            `json:"graded"`
	RealTime         int            `json:"real_time"`
	Passed           int            `json:"passed"`
	Failed           int            `json:"failed"`
	ExpectedFailures int            `json:"expected_failures"`
	Skipped          int            `json:"skipped"`
	Inconclusive     int            `json:"inconclusive"`
	Errored          int            `json:"errored"`
	Interrupted      int            `json:"interrupted"`
	NotRun           int            `json:"not_run"`
	SkippedBy        map[string]int `json:"skipped_by,omitempty"`
}

// JSON writes rep as indented JSON: the verdict ("outcome": conformant,
// not-conformant or undecided, with its reasons and coverage) and every
// result, with its failure as fields. "error" (and "aborted", its older
// name) says why a run stopped early or could not begin; then "results"
// may be empty.
func JSON(w io.Writer, rep *result.Report, meta Meta) error {
	v := rep.Verdict()
	c := v.Coverage
	out := struct {
		Version    string         `json:"version,omitempty"`
		Catalogue  string         `json:"catalogue,omitempty"`
		Target     string         `json:"target"`
		Targets    []string       `json:"targets,omitempty"`
		Level      string         `json:"level"`
		Profile    string         `json:"profile,omitempty"`
		Selection  string         `json:"selection,omitempty"`
		Limit      int            `json:"limit,omitempty"`
		WindowMs   float64        `json:"window_ms,omitempty"`
		Seed       uint64         `json:"seed"`
		Outcome    string         `json:"outcome"`
		Conformant bool           `json:"conformant"`
		Verdict    string         `json:"verdict"`
		Reasons    []string       `json:"reasons,omitempty"`
		Diagnosis  *jsonDiagnosis `json:"diagnosis,omitempty"`
		Aborted    string         `json:"aborted,omitempty"`
		StoppedAt  string         `json:"stopped_at,omitempty"`
		Error      string         `json:"error,omitempty"`
		Notes      []string       `json:"notes,omitempty"`
		Coverage   jsonCoverage   `json:"coverage"`
		Results    []jsonResult   `json:"results"`
		// NotGraded are the levels whose every spec was skipped while
		// another graded some: the outcome says nothing of them.
		NotGraded []string `json:"levels_not_graded,omitempty"`
	}{
		Version: meta.Version, Catalogue: meta.Catalogue, Target: rep.Target, Targets: rep.Targets, Level: string(rep.Level), Profile: rep.Profile, Selection: rep.Selection, Seed: rep.Seed,
		Limit: rep.Limit, WindowMs: ms(rep.Window),
		Outcome: string(v.Outcome), Conformant: v.Outcome == result.Conformant, Verdict: v.String(), Reasons: v.Reasons,
		Aborted: rep.Aborted, StoppedAt: rep.StoppedAt, Error: rep.Aborted, Notes: rep.Notes,
		Coverage: jsonCoverage{Selected: c.Selected, Graded: c.Graded, RealTime: c.RealTime, Passed: c.Passed, Failed: c.Failed,
			ExpectedFailures: c.ExpectedFailures, Skipped: c.Skipped, Inconclusive: c.Inconclusive, Errored: c.Errored,
			Interrupted: c.Interrupted, NotRun: c.NotRun, SkippedBy: c.SkippedBy},
		Results: []jsonResult{},
	}
	if len(v.Explained) > 0 {
		out.Diagnosis = &jsonDiagnosis{Explained: v.Explained, Hint: v.Hint, Weighed: v.Weighed}
	}
	for _, l := range v.NotGraded {
		out.NotGraded = append(out.NotGraded, string(l))
	}
	for _, r := range rep.Results {
		jr := jsonResult{ID: r.ID, Level: string(r.Level), Rule: r.Rule, Status: string(r.Status), Mode: string(r.Mode),
			Expected: r.ExpectedFailure, Structural: r.Structural, Message: r.Message, DurationMs: ms(r.Duration)}
		if f := r.Failure; f != nil {
			jr.Failure = &jsonFailure{Kind: string(f.Kind), Summary: f.Summary, Step: f.Step, AtMs: ms(f.At), Instance: f.Instance,
				Operation: f.Operation, Got: f.Got, Want: f.Want, Explanation: f.Explanation, Hint: f.Hint, Explained: f.Explained,
				Timeline: timelineJSON(f.Timeline), History: timelineJSON(f.History)}
		}
		out.Results = append(out.Results, jr)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// junitFailure is a testcase's failure or error element.
type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// junitSkipped is a testcase's skipped element.
type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// junitCase is the testcase of one spec (or of the run).
type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Error     *junitFailure `xml:"error,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// junitProperty is a property of a testsuite.
type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// junitTotals are the counts of a testsuite, and of all of them.
type junitTotals struct {
	Tests    int           `xml:"tests,attr"`
	Failures int           `xml:"failures,attr"`
	Errors   int           `xml:"errors,attr"`
	Skipped  int           `xml:"skipped,attr"`
	Time     string        `xml:"time,attr"`
	dur      time.Duration `xml:"-"`
}

// junitSuite is the testsuite of one level (or of the run).
type junitSuite struct {
	Name string `xml:"name,attr"`
	junitTotals
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

// junitSuites is the document's root.
type junitSuites struct {
	XMLName xml.Name `xml:"testsuites"`
	Name    string   `xml:"name,attr"`
	junitTotals
	Suites []junitSuite `xml:"testsuite"`
}

// JUnit writes rep as JUnit XML: one testsuite per level, one testcase per
// spec. A failed spec is a failure; one that could not be graded is an
// error; skipped, inconclusive and interrupted specs are skipped, with a
// message that says which; an expected failure passes with its message in
// system-out. A run that stopped early, or could not begin, has one more
// testcase, "the run" in testsuite rlconform.run, with an error that says
// why. The target's addresses, the seed and the grader's version are
// properties of every testsuite.
func JUnit(w io.Writer, rep *result.Report, meta Meta) error {
	props := junitProperties(rep, meta)
	all := junitSuites{Name: "rlconform", Suites: junitLevels(rep.Results, props)}
	if rep.Aborted != "" {
		all.Suites = append(all.Suites, junitAborted(rep.Aborted, props))
	}
	all.sum()
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(all); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// junitProperties are the properties every testsuite has: the target's
// addresses, the seed, the level, the profile, the verdict and the
// grader's version.
func junitProperties(rep *result.Report, meta Meta) []junitProperty {
	props := []junitProperty{{"target", rep.Target}, {"seed", fmt.Sprint(rep.Seed)}, {"level", string(rep.Level)},
		{"profile", rep.Profile}, {"verdict", rep.Verdict().String()}}
	for i, t := range rep.Targets {
		props = append(props, junitProperty{fmt.Sprintf("target.%d", i+1), t})
	}
	if meta.Version != "" {
		props = append(props, junitProperty{"rlconform.version", meta.Version})
	}
	if meta.Catalogue != "" {
		props = append(props, junitProperty{"rlconform.catalogue", meta.Catalogue})
	}
	return props
}

// junitLevels are the testsuites of results, one per level in the order
// the levels first appear, each with its testcases and counts.
func junitLevels(results []result.Result, props []junitProperty) []junitSuite {
	var suites []junitSuite
	index := map[result.Level]int{}
	for _, r := range results {
		i, ok := index[r.Level]
		if !ok {
			i = len(suites)
			index[r.Level] = i
			suites = append(suites, junitSuite{Name: "rlconform." + string(r.Level), Properties: props})
		}
		s := &suites[i]
		c := junitCaseOf(r)
		switch {
		case c.Failure != nil:
			s.Failures++
		case c.Error != nil:
			s.Errors++
		case c.Skipped != nil:
			s.Skipped++
		}
		s.Tests++
		s.dur += r.Duration
		s.Cases = append(s.Cases, c)
	}
	return suites
}

// junitCaseOf is the testcase of r: a failure, an error, skipped, or
// passed (with an expected failure's message in system-out).
func junitCaseOf(r result.Result) junitCase {
	c := junitCase{Name: r.ID, Classname: "rlconform." + string(r.Level), Time: secs(r.Duration)}
	switch {
	case r.ExpectedFailure && r.Status == result.Failed:
		c.SystemOut = "expected failure:\n" + r.Message
	case r.ExpectedFailure && r.Status == result.Passed:
		c.Failure = &junitFailure{Message: "expected to fail but passed: remove it from the expected failures", Text: r.Rule}
	case r.Status == result.Failed:
		c.Failure = &junitFailure{Message: summary(r), Type: kind(r), Text: r.Message}
	case r.Status == result.Errored:
		c.Error = &junitFailure{Message: "could not be graded: " + summary(r), Type: kind(r), Text: r.Message}
	case r.Status == result.Inconclusive:
		c.Skipped = &junitSkipped{Message: "inconclusive (not a pass): " + summary(r)}
	case r.Status == result.Interrupted, r.Status == result.NotRun:
		c.Skipped = &junitSkipped{Message: string(r.Status) + ": " + r.Message}
	case r.Status == result.Skipped:
		c.Skipped = &junitSkipped{Message: r.Message}
	}
	return c
}

// junitAborted is the testsuite of a run that stopped early, or could
// not begin: one testcase, "the run", with an error CI shows.
func junitAborted(why string, props []junitProperty) junitSuite {
	return junitSuite{Name: "rlconform.run", Properties: props,
		junitTotals: junitTotals{Tests: 1, Errors: 1},
		Cases: []junitCase{{Name: "the run", Classname: "rlconform.run", Time: secs(0),
			Error: &junitFailure{Message: why, Type: "aborted", Text: why}}}}
}

// sum sets each testsuite's time, and the totals of all of them.
func (all *junitSuites) sum() {
	for i := range all.Suites {
		s := &all.Suites[i].junitTotals
		s.Time = secs(s.dur)
		all.Tests += s.Tests
		all.Failures += s.Failures
		all.Errors += s.Errors
		all.Skipped += s.Skipped
		all.dur += s.dur
	}
	all.Time = secs(all.dur)
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

func kind(r result.Result) string {
	if r.Failure != nil {
		return string(r.Failure.Kind)
	}
	return ""
}

// Markdown writes a summary for a CI job summary or a pull-request comment:
// the verdict with its coverage, a table of specs, and each failure in a
// collapsed block.
func Markdown(w io.Writer, rep *result.Report, meta Meta) error {
	var b strings.Builder
	v := rep.Verdict()
	icon := map[result.Outcome]string{result.Conformant: "✅", result.NotConformant: "❌", result.Undecided: "❔"}[v.Outcome]
	fmt.Fprintf(&b, "## rlconform: %s %s at level `%s`", icon, escape(rep.Target), rep.Level)
	if len(v.NotGraded) > 0 {
		names := make([]string, len(v.NotGraded))
		for i, l := range v.NotGraded {
			names[i] = "`" + string(l) + "`"
		}
		fmt.Fprintf(&b, " (nothing graded at %s)", strings.Join(names, ", "))
	}
	b.WriteString("\n\n")
	if rep.Selection != "" {
		fmt.Fprintf(&b, "Only the specs selected: %s.\n\n", escape(rep.Selection))
	}
	fmt.Fprintf(&b, "**%s**\n\n", escape(v.String()))
	for _, why := range v.Reasons {
		fmt.Fprintf(&b, "- %s\n", escape(why))
	}
	if len(v.Reasons) > 0 {
		b.WriteByte('\n')
	}
	if d := v.Diagnosis(); d != "" {
		fmt.Fprintf(&b, "%s\n\n", escape(d))
	}
	fmt.Fprintf(&b, "profile `%s` · seed `%d`", rep.Profile, rep.Seed)
	if meta.Version != "" {
		fmt.Fprintf(&b, " · rlconform %s", meta.Version)
	}
	for _, t := range rep.Targets {
		fmt.Fprintf(&b, " · `%s`", t)
	}
	b.WriteString("\n\n| spec | level | result | rule |\n|---|---|---|---|\n")
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.ID, r.Level, mdStatus(r), escape(r.Rule))
	}
	for _, r := range rep.Results {
		if needsReading(r) {
			fmt.Fprintf(&b, "\n<details><summary><code>%s</code>: %s</summary>\n\n```\n%s\n```\n</details>\n", r.ID, r.Status, strings.TrimRight(r.Message, "\n"))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdStatus(r result.Result) string {
	switch {
	case r.ExpectedFailure && r.Status == result.Failed:
		return "⚠️ expected failure"
	case r.ExpectedFailure && r.Status == result.Passed:
		return "❗ passed, but expected to fail"
	case r.Status == result.Passed:
		return "✅ pass"
	case r.Status == result.Failed:
		return "❌ fail"
	case r.Status == result.Inconclusive:
		return "❔ inconclusive: " + escape(summary(r))
	case r.Status == result.Errored:
		return "⛔ could not be graded: " + escape(summary(r))
	case r.Status == result.Interrupted:
		return "⏹️ interrupted"
	case r.Status == result.NotRun:
		return "⏹️ not run: " + escape(r.Message)
	}
	return "⏭️ skip: " + escape(r.Message)
}

func escape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// summary is the one line that says what happened to r.
func summary(r result.Result) string {
	if r.Failure != nil && r.Failure.Summary != "" {
		return r.Failure.Summary
	}
	s := strings.TrimSpace(r.Message)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// String is Text as a string, for logs and test failures.
func String(rep *result.Report) string {
	var b strings.Builder
	Text(&b, rep)
	return b.String()
}
