package htmlreport

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/rlconform/rlconform/bench"
	"github.com/rlconform/rlconform/result"
)

// BenchPage is the page of a load run (or of several, for a tool that
// drives more than one): its verdict, its figures, its charts and the
// evidence of what went wrong. [BenchPageOf] makes the page of one
// bench; a tool of its own fills one in and writes it with [Bench].
type BenchPage struct {
	Title   string
	Version string
	// Outcome styles the verdict, which says it in words too: Conformant
	// (exact under load), NotConformant (proven wrong), Undecided
	// (nothing proven either way).
	Outcome result.Outcome
	Verdict string
	Facts   []Fact
	Charts  []Chart
	// Evidence proves each finding, with the calls as a timeline.
	Evidence []Evidence
	// Text is the run's text report, shown whole at the end.
	Text  string
	Notes []string
}

// Chart is an SVG image as self-contained as the page (no script,
// nothing loaded): the page embeds it as a data: URL, so it must hold
// nothing secret that the page's writer would not see.
type Chart struct {
	Title string
	// Description is its text alternative: what it shows, in words.
	Description string
	SVG         []byte
}

// Evidence is what proves a finding: a text, and the calls as a timeline
// of intervals (sent to answered), Band shaded and the call at Step (0:
// none) marked as the wrong answer.
type Evidence struct {
	Title, Text string
	Timeline    *result.Timeline
	Band        *Band
	Step        int
}

// benchPage is a BenchPage laid out for the template.
type benchPage struct {
	Head     head
	Title    string
	Verdict  verdictView
	Facts    []Fact
	Charts   []chartView
	Evidence []evidenceView
	Text     string
	Notes    []string
}

type chartView struct {
	ID, Title, Description string
	Src                    template.URL
}

type evidenceView struct {
	ID, Title, Text string
	Timeline        *timelineView
}

// Bench writes p as an HTML page: the verdict, the facts, each chart
// (an image with its description), each piece of evidence with its
// timeline chart and table, and the text report.
func Bench(w io.Writer, p BenchPage) error {
	word, class := outcomeWord(p.Outcome)
	sign, _, _ := cutSign(word)
	out := benchPage{Head: newHead(p.Title, p.Version), Title: p.Title, Facts: p.Facts, Text: p.Text, Notes: p.Notes,
		Verdict: verdictView{Class: class, Badge: sign, Line: p.Verdict}}
	for i, c := range p.Charts {
		// A data: URL of an image, which runs no script: the one URL the
		// page's policy lets load.
		src := template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(c.SVG))
		out.Charts = append(out.Charts, chartView{ID: fmt.Sprintf("chart-%d", i+1), Title: c.Title, Description: c.Description, Src: src})
	}
	for i, e := range p.Evidence {
		id := fmt.Sprintf("evidence-%d", i+1)
		out.Evidence = append(out.Evidence, evidenceView{ID: id, Title: e.Title, Text: e.Text,
			Timeline: layout(e.Timeline, chartOptions{id: id + "-tl", title: e.Title + ": the calls", realTime: true, step: e.Step, band: e.Band, from: "the run's start"})})
	}
	return write(w, "bench", out)
}

// cutSign splits an outcome's word into its sign and the rest.
func cutSign(word string) (string, string, bool) {
	for i, r := range word {
		if r == ' ' {
			return word[:i], word[i+1:], true
		}
	}
	return word, "", false
}

// BenchPageOf is the page of res: its verdict (exact, wrong under load,
// or nothing proven), its figures, the chart rlconform bench --svg
// draws, the overshoot and under-admission it found with their calls,
// and its text report.
func BenchPageOf(res *bench.Result) (BenchPage, error) {
	var svg bytes.Buffer
	if err := res.WriteSVG(&svg); err != nil {
		return BenchPage{}, fmt.Errorf("the bench's chart: %w", err)
	}
	var text bytes.Buffer
	res.Text(&text)
	p := BenchPage{Title: "rlconform bench: " + res.Target, Version: res.Version, Facts: benchFacts(res), Text: text.String()}
	p.Outcome, p.Verdict = benchVerdict(res)
	p.Charts = []Chart{{Title: "Latency, throughput and the busiest user over time", Description: chartText(res), SVG: svg.Bytes()}}
	if ex := res.Exactness; ex != nil {
		if wd := ex.Worst; ex.Overshoot > 0 && wd != nil {
			p.Evidence = append(p.Evidence, Evidence{Title: "Overshoot: the worst window",
				Text: fmt.Sprintf("%d requests of user %q were allowed between %s (the first sent) and %s (the last answered): the profile admits at most %d there, whatever their instants. The bound: %s.",
					wd.Allowed, wd.UserID, offset(wd.From), offset(wd.To), wd.Bound, wd.Rule),
				Timeline: callsTimeline(res, wd.UserID, wd.Calls, -1),
				Band:     &Band{From: wd.From, To: wd.To, Label: fmt.Sprintf("%d allowed within %v; the bound is %d", wd.Allowed, (wd.To - wd.From).Round(time.Microsecond), wd.Bound)}})
		}
		if u := ex.WorstUnder; ex.UnderAdmitted > 0 && u != nil {
			calls := append(slices.Clone(u.Nearby), u.Call)
			tl := callsTimeline(res, u.UserID, calls, len(calls)-1)
			step := 0
			for _, o := range tl.Ops {
				if o.Want != "" {
					step = o.Step
				}
			}
			p.Evidence = append(p.Evidence, Evidence{Title: "Under-admission: the worst denial", Step: step, Timeline: tl,
				Text: fmt.Sprintf("User %q was denied at %s…%s while at most %d allowed (or failed) requests could have counted, fewer than the limit %d. The rule: %s.",
					u.UserID, offset(u.Call.Sent), offset(u.Call.Returned), u.Counted, res.Limit, u.Rule)})
		}
	}
	return p, nil
}

// callsTimeline is calls of user id as a timeline, in the order sent;
// the one at index wrong (-1: none) was denied where the profile admits
// it.
func callsTimeline(res *bench.Result, id string, calls []bench.Decision, wrong int) *result.Timeline {
	type call struct {
		d     bench.Decision
		wrong bool
	}
	cs := make([]call, len(calls))
	for i, c := range calls {
		cs[i] = call{c, i == wrong}
	}
	slices.SortStableFunc(cs, func(a, b call) int { return int(a.d.Sent - b.d.Sent) })
	user := strconv.Quote(id)
	tl := &result.Timeline{Limit: res.Limit, Window: res.Window, Instances: 1, Total: len(cs)}
	for i, c := range cs {
		op := result.Op{Step: i + 1, At: c.d.Sent, Until: c.d.Returned, User: user, Op: "AllowRequest(" + user + ")", Got: c.d.Outcome.String(),
			Kind: result.OpAllow, Count: 1, Limit: res.Limit, Window: res.Window}
		if c.wrong {
			op.Want = "allowed"
		}
		tl.Ops = append(tl.Ops, op)
	}
	return tl
}
