// Package report writes a run's results in the formats CI systems read:
// JUnit XML, JSON and a Markdown summary.
package report

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/rlconform/rlconform/suite"
)

// JSON writes rep as indented JSON.
func JSON(w io.Writer, rep *suite.Report) error {
	type result struct {
		ID         string  `json:"id"`
		Level      string  `json:"level"`
		Rule       string  `json:"rule"`
		Status     string  `json:"status"`
		Expected   bool    `json:"expected_failure,omitempty"`
		Message    string  `json:"message,omitempty"`
		DurationMs float64 `json:"duration_ms"`
	}
	out := struct {
		Target     string   `json:"target"`
		Level      string   `json:"level"`
		Seed       uint64   `json:"seed"`
		Conformant bool     `json:"conformant"`
		Problems   []string `json:"problems,omitempty"`
		Results    []result `json:"results"`
	}{Target: rep.Target, Level: string(rep.Level), Seed: rep.Seed, Conformant: rep.Err() == nil, Results: []result{}}
	if err := rep.Err(); err != nil {
		out.Problems = strings.Split(err.Error(), "\n")
	}
	for _, r := range rep.Results {
		out.Results = append(out.Results, result{ID: r.ID, Level: string(r.Level), Rule: r.Rule, Status: string(r.Status),
			Expected: r.ExpectedFailure, Message: r.Message, DurationMs: float64(r.Duration.Microseconds()) / 1000})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// JUnit writes rep as JUnit XML: one testsuite per level, one testcase per
// spec. An inconclusive spec is an error; an expected failure is a pass
// with its message in system-out.
func JUnit(w io.Writer, rep *suite.Report) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	type skipped struct {
		Message string `xml:"message,attr"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Time      string   `xml:"time,attr"`
		Failure   *failure `xml:"failure,omitempty"`
		Error     *failure `xml:"error,omitempty"`
		Skipped   *skipped `xml:"skipped,omitempty"`
		SystemOut string   `xml:"system-out,omitempty"`
	}
	type testsuite struct {
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Errors   int        `xml:"errors,attr"`
		Skipped  int        `xml:"skipped,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	type testsuites struct {
		XMLName xml.Name    `xml:"testsuites"`
		Name    string      `xml:"name,attr"`
		Suites  []testsuite `xml:"testsuite"`
	}
	all := testsuites{Name: fmt.Sprintf("rlconform %s (seed %d)", rep.Target, rep.Seed)}
	index := map[suite.Level]int{}
	for _, r := range rep.Results {
		i, ok := index[r.Level]
		if !ok {
			i = len(all.Suites)
			index[r.Level] = i
			all.Suites = append(all.Suites, testsuite{Name: "rlconform." + string(r.Level)})
		}
		s := &all.Suites[i]
		c := testcase{Name: r.ID, Classname: "rlconform." + rep.Target, Time: fmt.Sprintf("%.3f", r.Duration.Seconds())}
		first := firstLine(r.Message)
		switch {
		case r.ExpectedFailure && r.Status == suite.Failed:
			c.SystemOut = "expected failure:\n" + r.Message
		case r.ExpectedFailure && r.Status == suite.Passed:
			c.Failure = &failure{Message: "expected to fail but passed: remove it from --expect-fail", Text: r.Rule}
			s.Failures++
		case r.Status == suite.Failed:
			c.Failure = &failure{Message: first, Text: r.Message}
			s.Failures++
		case r.Status == suite.Inconclusive:
			c.Error = &failure{Message: first, Text: r.Message}
			s.Errors++
		case r.Status == suite.Skipped:
			c.Skipped = &skipped{Message: r.Message}
			s.Skipped++
		}
		s.Tests++
		s.Cases = append(s.Cases, c)
	}
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

// Markdown writes a summary for a CI job summary or a pull-request comment:
// the verdict, a table of specs, and each failure in a collapsed block.
func Markdown(w io.Writer, rep *suite.Report) error {
	var b strings.Builder
	verdict := "✅ conformant"
	if rep.Err() != nil {
		verdict = "❌ not conformant"
	}
	fmt.Fprintf(&b, "## rlconform: %s is %s at level `%s`\n\n", rep.Target, verdict, rep.Level)
	fmt.Fprintf(&b, "%d passed, %d failed, %d skipped, %d inconclusive · seed `%d`\n\n",
		rep.Count(suite.Passed), rep.Count(suite.Failed), rep.Count(suite.Skipped), rep.Count(suite.Inconclusive), rep.Seed)
	b.WriteString("| spec | level | result | rule |\n|---|---|---|---|\n")
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.ID, r.Level, mdStatus(r), escape(r.Rule))
	}
	for _, r := range rep.Results {
		if (r.Status == suite.Failed || r.Status == suite.Inconclusive) && !r.ExpectedFailure {
			fmt.Fprintf(&b, "\n<details><summary><code>%s</code>: %s</summary>\n\n```\n%s\n```\n</details>\n", r.ID, r.Status, strings.TrimRight(r.Message, "\n"))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdStatus(r suite.Result) string {
	switch {
	case r.ExpectedFailure && r.Status == suite.Failed:
		return "⚠️ expected failure"
	case r.ExpectedFailure && r.Status == suite.Passed:
		return "❗ passed, but expected to fail"
	case r.Status == suite.Passed:
		return "✅ pass"
	case r.Status == suite.Failed:
		return "❌ fail"
	case r.Status == suite.Inconclusive:
		return "❔ inconclusive"
	}
	return "⏭️ skip: " + escape(r.Message)
}

func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func firstLine(s string) string {
	lines := strings.SplitN(s, "\n", 3)
	if len(lines) > 1 {
		return strings.TrimSpace(lines[1])
	}
	return s
}
