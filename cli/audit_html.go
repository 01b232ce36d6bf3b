package cli

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rlconform/rlconform/audit"
	"github.com/rlconform/rlconform/report/htmlreport"
	"github.com/rlconform/rlconform/result"
)

// auditPage lays an audit's result out as a load run's page: the verdict,
// the figures, the evidence of its findings as timelines (each request
// from its send to its answer, counted from the first of them), the log
// lines they were read from, and the text report whole.
func auditPage(res *audit.Result) htmlreport.BenchPage {
	var text bytes.Buffer
	res.Text(&text)
	p := htmlreport.BenchPage{Title: "rlconform audit: " + auditFiles(res), Version: res.Version, Text: text.String(), Notes: res.Notes}
	switch res.Verdict.Outcome {
	case audit.Explained:
		p.Outcome, p.Verdict = result.Conformant, "EXPLAINED: "+res.Verdict.Why
	case audit.Wrong:
		p.Outcome, p.Verdict = result.NotConformant, "WRONG: "+res.Verdict.Why
	default:
		p.Outcome, p.Verdict = result.Undecided, "UNDECIDED: "+res.Verdict.Why
	}
	p.Facts = []htmlreport.Fact{
		{Label: "format", Value: res.Format},
		{Label: "lines read", Value: strconv.FormatInt(res.Lines, 10)},
		{Label: "policy", Value: fmt.Sprintf("%d per %v, %s", res.Limit, res.Window, res.Profile)},
	}
	if s := res.Stream; s != nil {
		p.Facts = append(p.Facts,
			htmlreport.Fact{Label: "requests judged", Value: strconv.FormatInt(s.Calls, 10)},
			htmlreport.Fact{Label: "users", Value: strconv.FormatInt(s.Users, 10)},
			htmlreport.Fact{Label: "user-windows", Value: strconv.FormatInt(s.UserWindows, 10)},
			htmlreport.Fact{Label: "interval widths (p50, p99, max)", Value: fmt.Sprintf("%v, %v, %v", s.Widths.P50, s.Widths.P99, s.Widths.Max)})
	}
	if e := res.Overshoot; e != nil {
		p.Evidence = append(p.Evidence, auditEvidence(res, "Overshoot: more admissions than the limit inside one window", e, false))
	}
	if e := res.Under; e != nil {
		p.Evidence = append(p.Evidence, auditEvidence(res, "Under-admission: a refusal no timing explains", e, true))
	}
	return p
}

// auditFiles names the logs audited.
func auditFiles(res *audit.Result) string {
	names := make([]string, len(res.Files))
	for i, f := range res.Files {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// auditEvidence is a finding's requests as a timeline, and their log
// lines in its text; the refusal, last of an under-admission, marked.
func auditEvidence(res *audit.Result, title string, e *audit.Evidence, refusalLast bool) htmlreport.Evidence {
	user := strconv.Quote(e.User)
	tl := &result.Timeline{Limit: res.Limit, Window: res.Window, Instances: 1, Total: len(e.Lines)}
	var lines []string
	var first time.Duration
	if len(e.Lines) > 0 {
		first = e.Lines[0].Call.Sent
	}
	for _, l := range e.Lines {
		first = min(first, l.Call.Sent)
	}
	step := 0
	for i, l := range e.Lines {
		op := result.Op{Step: i + 1, At: l.Call.Sent - first, Until: l.Call.Returned - first, User: user, Op: "a request of " + user,
			Got: l.Call.Outcome.String(), Kind: result.OpAllow, Count: 1, Limit: res.Limit, Window: res.Window}
		if refusalLast && i == len(e.Lines)-1 {
			op.Want, step = "allowed", i+1
		}
		tl.Ops = append(tl.Ops, op)
		lines = append(lines, fmt.Sprintf("%s:%d %s", l.File, l.Line, l.Text))
	}
	return htmlreport.Evidence{Title: title, Timeline: tl, Step: step,
		Text: fmt.Sprintf("The requests of user %s, counted from the first one sent, each from its send to its answer as the log allows. Their lines: %s", user, strings.Join(lines, " · "))}
}

// writeAuditHTML writes the --html page of an audit.
func writeAuditHTML(w io.Writer, res *audit.Result) error {
	return htmlreport.Bench(w, auditPage(res))
}
