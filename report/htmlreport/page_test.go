package htmlreport_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/bench"
	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/report/htmlreport"
	"github.com/rlconform/rlconform/result"
)

const ms = time.Millisecond

// failing is a report of every kind of result: a wrong answer on the
// fake clock (with a user id that is markup), an undecided spec in real
// time, a linearizability failure with its history, a shrunk schedule,
// and results with nothing to chart.
func failing() *result.Report {
	evil := `"<script>alert(1)</script>"`
	wrong := &result.Timeline{Limit: 2, Window: time.Minute, Instances: 2, UserTag: "run-01:", Total: 5, Ops: []result.Op{
		{Step: 1, At: 0, Kind: result.OpConfigure, Op: "Configure(2, 1m0s)", Got: "ok", Want: "ok", Count: 1, Limit: 2, Window: time.Minute},
		{Step: 2, At: 59999 * ms, User: evil, Kind: result.OpAllow, Op: "AllowRequest(" + evil + ")", Got: "allowed", Want: "allowed", Count: 1, Limit: 2, Window: time.Minute},
		{Step: 3, At: 59999 * ms, Instance: 1, User: evil, Kind: result.OpAllow, Op: "AllowRequest(" + evil + ")", Got: "allowed", Want: "allowed", Count: 1, Limit: 2, Window: time.Minute},
		{Step: 4, At: 60000 * ms, User: evil, Kind: result.OpAllow, Op: "AllowRequest(" + evil + ")", Got: "allowed", Want: "denied", Count: 1, Limit: 2, Window: time.Minute},
		{Step: 5, At: 60000 * ms, User: `"v"`, Kind: result.OpBurst, Op: `8 goroutines on 2 instance(s): AllowRequest("v") ×10`, Got: "2 allowed, 8 denied", Want: "2 allowed", Count: 10, Limit: 2, Window: time.Minute},
	}}
	undecided := &result.Timeline{Limit: 2, Window: time.Second, Instances: 1, Total: 2, Ops: []result.Op{
		{Step: 1, At: 10 * ms, Until: 14 * ms, User: `"u"`, Kind: result.OpAllow, Op: `AllowRequest("u")`, Got: "allowed", Count: 1, Undecided: true},
		{Step: 2, At: 1009 * ms, Until: 1013 * ms, User: `"u"`, Kind: result.OpRemaining, Op: `GetRemainingRequests("u")`, Got: "error", Count: 1, Undecided: true},
	}}
	history := &result.Timeline{Limit: 2, Window: time.Minute, Instances: 2, Total: 3, Ops: []result.Op{
		{Step: 1, At: 100 * time.Microsecond, Until: 900 * time.Microsecond, User: `"a"`, Kind: result.OpAllow, Op: `AllowRequest("a")`, Got: "allowed", Count: 1},
		{Step: 2, At: 200 * time.Microsecond, Until: 800 * time.Microsecond, User: `"a"`, Kind: result.OpAllow, Op: `AllowRequest("a")`, Got: "allowed", Count: 1},
		{Step: 3, At: 300 * time.Microsecond, Until: 1200 * time.Microsecond, User: `"a"`, Kind: result.OpAllow, Op: `AllowRequest("a")`, Got: "allowed", Want: "denied", Count: 1, Unordered: true},
	}}
	shrunk := &result.Timeline{Limit: 5, Window: time.Minute, Instances: 1, Total: 2, ShrunkFrom: 200, Ops: []result.Op{
		{Step: 1, User: "u0", Kind: result.OpAllow, Op: "AllowRequest(u0)", Got: "allowed", Want: "allowed", Count: 1, Limit: 5, Window: time.Minute},
		{Step: 2, User: "u0", Kind: result.OpAllow, Op: "AllowRequest(u0)", Got: "allowed", Want: "denied", Count: 1, Limit: 1, Window: 15 * time.Second},
	}}
	return &result.Report{Target: "http://127.0.0.1:8080", Targets: []string{"http://127.0.0.1:8080", "http://127.0.0.1:8081"}, Seed: 42, Level: result.All, Profile: "sliding-log",
		Results: []result.Result{
			{ID: "core/reset", Level: result.Core, Rule: "Reset gives a full quota", Status: result.Passed, Mode: result.FakeClock, Duration: 3 * ms},
			{ID: "strict/boundary-burst-epoch", Level: result.Strict, Rule: "N before an edge and N after", Status: result.Failed, Mode: result.FakeClock, Duration: 17 * ms,
				Message: "strict/boundary-burst-epoch: ...\n  step 4 at +60000ms: " + evil + " = allowed, want denied",
				Failure: &result.Failure{Kind: result.KindWrongAnswer, Summary: "step 4 at +60000ms: AllowRequest(" + evil + ") = allowed, want denied", Step: 4, At: time.Minute,
					Operation: "AllowRequest(" + evil + ")", Got: "allowed", Want: "denied", Hint: "keep a log", Explained: []string{"a fixed window of 1m0s"}, Timeline: wrong}},
			{ID: "core/sliding-expiry", Level: result.Core, Status: result.Inconclusive, Mode: result.RealTime, Duration: 2 * time.Second,
				Message: "every answer was undecided", Failure: &result.Failure{Kind: result.KindInconclusive, Summary: "every answer was undecided", Timeline: undecided}},
			{ID: "strict/linearizable", Level: result.Strict, Status: result.Failed, Mode: result.FakeClock, Duration: 60 * ms, Message: "not linearizable",
				Failure: &result.Failure{Kind: result.KindViolation, Summary: "not linearizable", History: history}},
			{ID: "strict/differential", Level: result.Strict, Status: result.Failed, Mode: result.FakeClock, Duration: 70 * ms, Message: "diverged",
				Failure: &result.Failure{Kind: result.KindWrongAnswer, Summary: "step 2 at +0ms: AllowRequest(u0) = allowed, want denied", Step: 2, Timeline: shrunk}},
			{ID: "strict/same-millisecond-burst", Level: result.Strict, Status: result.Failed, ExpectedFailure: true, Mode: result.FakeClock, Message: "expected"},
			{ID: "robust/key-hygiene", Level: result.Robust, Status: result.Skipped, Message: "needs store inspection"},
		}}
}

func render(t *testing.T, rep *result.Report) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, htmlreport.Run(&b, rep, report.Meta{Version: "v0.0.0-test", Reproduce: "rlconform run --target http://127.0.0.1:8080 --seed 42"}))
	return b.String()
}

// selfContained checks that page loads nothing and runs nothing: no
// script, no external style sheet, font or image, no URL but data: ones
// in a source, and a policy that forbids the rest, its style sheet
// allowed by its hash.
func selfContained(t *testing.T, page string) {
	t.Helper()
	for _, bad := range []string{"<script", "<link", "@import", "url(", "<iframe", "<object", "<embed", "javascript:", " on"} {
		if bad == " on" {
			assert.NotRegexp(t, `<[^>]+\son[a-z]+=`, page, "no event handler attribute")
			continue
		}
		assert.NotContains(t, page, bad)
	}
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		u := html.UnescapeString(m[1])
		assert.True(t, strings.HasPrefix(u, "#") || strings.HasPrefix(u, "data:image/svg+xml;base64,"), "a URL that loads: %.80s", u)
	}
	csp := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`).FindStringSubmatch(page)
	require.Len(t, csp, 2, "a Content-Security-Policy")
	policy := html.UnescapeString(csp[1])
	assert.Contains(t, policy, "default-src 'none'")
	style := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindStringSubmatch(page)
	require.Len(t, style, 2)
	sum := sha256.Sum256([]byte(style[1]))
	assert.Contains(t, policy, "style-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'", "the policy allows the page's own style sheet")
	assert.NotContains(t, page, "ZgotmplZ", "html/template refused a value")
	assert.NotRegexp(t, `\sstyle="`, page, "no style attribute: the policy would refuse it")
}

// TestRunPage: the page says the verdict of the run and of each level,
// lists every spec with its result and time, and charts each failing or
// undecided spec: a mark per operation, with its text alternative.
func TestRunPage(t *testing.T) {
	page := render(t, failing())
	selfContained(t, page)
	assert.Contains(t, page, `<html lang="en">`)
	assert.Contains(t, page, "NOT CONFORMANT")
	for _, lv := range []string{"core", "strict", "robust"} {
		assert.Regexp(t, `<tr><th scope="row">`+lv+`</th><td class="status`, page)
	}
	for _, r := range failing().Results {
		assert.Regexp(t, regexp.QuoteMeta(r.ID)+`(</a>)?</th><td class="nowrap">`+string(r.Level)+`</td><td class="status [a-z-]+">[^<]+</td><td class="num">`+
			fmt.Sprint(r.Duration.Milliseconds())+` ms</td>`, page, "every spec with its result and time")
	}
	assert.NotContains(t, page, "<script>alert", "a user id is text, never markup")
	assert.Contains(t, page, "&lt;script&gt;alert(1)&lt;/script&gt;")

	figures := regexp.MustCompile(`(?s)<figure class="timeline" id="([^"]+)" data-marks="(\d+)">(.*?)</figure>`).FindAllStringSubmatch(page, -1)
	require.Len(t, figures, 4, "the wrong answer's, the undecided spec's, the history's and the shrunk schedule's")
	wantMarks := map[string]int{"tl-2": 5, "tl-3": 2, "hist-4": 3, "tl-5": 2}
	for _, f := range figures {
		id, body := f[1], f[3]
		assert.Equal(t, wantMarks[id], strings.Count(body, `<g class="mark `), id)
		assert.Equal(t, f[2], strings.TrimSpace(f[2]))
		assert.Contains(t, body, `role="img" aria-labelledby="`+id+`-title `+id+`-desc"`, id)
		assert.Contains(t, body, `<title id="`+id+`-title">`, id)
		assert.Regexp(t, `<desc id="`+id+`-desc">[^<]{40,}</desc>`, body, id)
		assert.Equal(t, wantMarks[id], strings.Count(body, "<tr><td class=\"num\">")+strings.Count(body, "<tr class=\"wrong\"><td class=\"num\">"), "a table row per mark: %s", id)
		assert.Contains(t, body, `class="legend"`, id)
	}
	wrong := figures[0][3]
	assert.Equal(t, 1, strings.Count(wrong, `<g class="mark allowed wrong"`), "the first wrong answer is marked")
	assert.Contains(t, wrong, "step 4: the first wrong answer")
	assert.Contains(t, wrong, `class="ghost denied"`, "the model's answer beside the wrong one")
	assert.Contains(t, wrong, `class="band"`, "the window of the wrong answer")
	assert.Contains(t, html.UnescapeString(wrong), "the window of step 4: (+0ms, +60000ms]")
	assert.NotContains(t, wrong, `class="ghost other"`, "a burst that allowed the model's count")
	assert.Contains(t, wrong, `on #2`, "a lane per user and instance")
	assert.Contains(t, wrong, `data-count="10"`, "a burst stands for its calls")
	assert.Contains(t, figures[1][3], `class="interval`, "real time: from the call to its answer")
	assert.Equal(t, 2, strings.Count(figures[1][3], " undecided\""))
	assert.Contains(t, figures[1][3], `<g class="mark error undecided"`)
	assert.Equal(t, 1, strings.Count(figures[2][3], `unordered"`+` data-step`), "the operation that cannot be ordered")
	assert.Contains(t, figures[2][3], "cannot be ordered")
	assert.Contains(t, page, "Of a schedule of 200 operations that went wrong, these 2 are the fewest that still do")
	assert.Contains(t, page, "rlconform run --target http://127.0.0.1:8080 --seed 42 --id strict/differential")
	assert.NotContains(t, page, `id="spec-strict-same-millisecond-burst"`, "an expected failure needs no reading")
	assert.Contains(t, page, "expected failure")
}

// The page is the same for the same report: nothing of the moment it was
// written (a time, a random id) is in it.
func TestRunPageIsDeterministic(t *testing.T) {
	assert.Equal(t, render(t, failing()), render(t, failing()))
}

// A run that could not begin still makes a page that says why.
func TestRunPageOfARunThatCouldNotBegin(t *testing.T) {
	page := render(t, &result.Report{Target: "reference", Level: result.All, Aborted: "no Redis"})
	selfContained(t, page)
	assert.Contains(t, page, "UNDECIDED")
	assert.Contains(t, page, "no Redis")
	assert.NotContains(t, page, "<figure")
}

// TestBenchPage: a bench's page embeds its chart as an image with a text
// alternative, and shows the overshoot with its calls.
func TestBenchPage(t *testing.T) {
	calls := []bench.Decision{}
	for i := range 6 {
		calls = append(calls, bench.Decision{User: 0, Outcome: bench.Allowed, Sent: time.Duration(1000+i) * ms, Returned: time.Duration(1003+i) * ms})
	}
	res := &bench.Result{Target: "http://127.0.0.1:9999", Version: "v0", Mode: "closed-loop", Concurrency: 4, Duration: 2 * time.Second, Users: 1, Limit: 5,
		Window: time.Second, Decisions: 100, Allowed: 11, Denied: 89, Elapsed: 2 * time.Second, Throughput: 50, Errors: map[string]int{},
		Series: []bench.Bucket{{At: 0, Decisions: 50, Allowed: 5, Users: 1, Busiest: 5, P50: ms, P99: 2 * ms, Max: 3 * ms},
			{At: time.Second, Decisions: 50, Allowed: 6, Users: 1, Busiest: 6, P50: ms, P99: 2 * ms, Max: 3 * ms}},
		Exactness: &bench.Exactness{UsersAtLimit: 1, Overshoot: 1, Decisions: 100,
			Worst: &bench.Window{UserID: "bench-u0", Allowed: 6, Bound: 5, Rule: "at most 5 allowed within less than 1s", From: 1000 * ms, To: 1008 * ms, Calls: calls}}}
	page, err := htmlreport.BenchPageOf(res)
	require.NoError(t, err)
	assert.Equal(t, result.NotConformant, page.Outcome)
	var b bytes.Buffer
	require.NoError(t, htmlreport.Bench(&b, page))
	out := b.String()
	selfContained(t, out)
	assert.Contains(t, out, "NOT EXACT under load: 1 request allowed past the limit of 5 per 1s")
	img := regexp.MustCompile(`<img class="bench-chart" src="data:image/svg&#43;xml;base64,([^"]+)" alt="([^"]+)" aria-describedby="([^"]+)">`).FindStringSubmatch(out)
	require.Len(t, img, 4, "the chart, embedded")
	svg, err := base64.StdEncoding.DecodeString(html.UnescapeString(img[1]))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "<svg", "the bench's own chart")
	assert.Contains(t, out, `id="`+img[3]+`">Three panels`, "its description")
	assert.Contains(t, out, "Overshoot: the worst window")
	assert.Equal(t, 6, strings.Count(out, `<g class="mark allowed"`), "a mark per call of the worst window")
	assert.Contains(t, out, "6 allowed within 8ms; the bound is 5")
}

// Both pages list their notes in the same section, each note text.
func TestNotes(t *testing.T) {
	const want = "<section aria-labelledby=\"notes\">\n<h2 id=\"notes\">Notes</h2>\n<ul>\n<li>a &lt;b&gt; note</li>\n<li>another</li>\n</ul>\n</section>\n</main>"
	rep := failing()
	rep.Notes = []string{"a <b> note", "another"}
	assert.Contains(t, render(t, rep), want, "the run's page")
	var b bytes.Buffer
	require.NoError(t, htmlreport.Bench(&b, htmlreport.BenchPage{Title: "a bench", Notes: rep.Notes}))
	assert.Contains(t, b.String(), want, "the bench's page")
}
