package k6

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/bench"
)

// The lines of k6's documentation
// (https://grafana.com/docs/k6/latest/results-output/real-time/json/),
// verbatim, with the user tag added to the request's.
const documented = `{"type":"Metric","data":{"type":"gauge","contains":"default","tainted":null,"thresholds":[],"submetrics":null},"metric":"vus"}
{"type":"Point","data":{"time":"2017-05-09T14:34:45.625742514+02:00","value":5,"tags":null},"metric":"vus"}
{"type":"Metric","data":{"type":"trend","contains":"time","tainted":null,"thresholds":["avg<1000"],"submetrics":null},"metric":"http_req_duration"}
{"type":"Point","data":{"time":"2017-05-09T14:34:45.239531499+02:00","value":459.865729,"tags":{"group":"::my group::json","method":"GET","status":"200","url":"https://httpbin.test.k6.io/get","user":"u1"}},"metric":"http_req_duration"}
{"type":"Point","data":{"time":"2017-05-09T14:34:45.239531499+02:00","value":12.5,"tags":{"group":"::my group::json","method":"GET","status":"200","url":"https://httpbin.test.k6.io/get","user":"u1"}},"metric":"http_req_blocked"}
{"type":"Point","data":{"time":"2017-05-09T14:34:45.239531499+02:00","value":10,"tags":{"group":"::my group::json","method":"GET","status":"200","url":"https://httpbin.test.k6.io/get","user":"u1"}},"metric":"http_req_connecting"}
{"type":"Point","data":{"time":"2017-05-09T14:34:45.239531499+02:00","value":0,"tags":{"group":"::my group::json","method":"GET","status":"200","url":"https://httpbin.test.k6.io/get","user":"u1"}},"metric":"http_req_tls_handshaking"}
`

// The interval of a request runs from its time less its duration and the
// time it was blocked (which holds connecting and the TLS handshake), to
// its time (the end of the request).
func TestTheDocumentedLinesMakeOneRequest(t *testing.T) {
	r := NewReader(Options{})
	require.NoError(t, r.Read("doc", strings.NewReader(documented)))
	rec, err := r.Recording()
	require.NoError(t, err)
	require.Len(t, rec.Decisions, 1)
	end := time.Date(2017, 5, 9, 12, 34, 45, 239531499, time.UTC)
	d := rec.Decisions[0]
	assert.Equal(t, bench.Allowed, d.Outcome)
	assert.Equal(t, end.UnixNano(), int64(d.Returned))
	assert.Equal(t, end.Add(-472365729*time.Nanosecond).UnixNano(), int64(d.Sent), "459.865729 + 12.5 ms before (blocked holds connecting's 10)")
	assert.Equal(t, 459865729*time.Nanosecond, rec.Latency[0])
	assert.Equal(t, []string{"u1"}, rec.UserIDs)
	assert.Equal(t, Stats{Generators: 1, Lines: 7, Requests: 1, Decisions: 1}, r.Stats())
}

// k6's own writer puts "metric" first (the field order of its envelope);
// the order of fields, gzip, and the points of other requests in between
// do not matter.
func TestFieldOrderGzipAndInterleaving(t *testing.T) {
	var lines []string
	for _, req := range []struct{ user, status, end string }{{"a", "429", "2025-01-01T00:00:00.010Z"}, {"b", "0", "2025-01-01T00:00:00.011Z"}} {
		for _, m := range []string{"http_reqs", "http_req_duration", "http_req_blocked", "http_req_connecting", "http_req_tls_handshaking", "http_req_failed"} {
			tags := fmt.Sprintf(`{"status":%q,"user":%q,"error_code":"1050","error":"request timeout"}`, req.status, req.user)
			lines = append(lines, fmt.Sprintf(`{"metric":%q,"type":"Point","data":{"time":%q,"value":1,"tags":%s}}`, m, req.end, tags))
		}
	}
	// The two requests' points alternate.
	var mixed []string
	for i := range 6 {
		mixed = append(mixed, lines[i], lines[6+i])
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	io.WriteString(gz, strings.Join(mixed, "\n")+"\n")
	require.NoError(t, gz.Close())
	r := NewReader(Options{})
	require.NoError(t, r.Read("gz", &buf))
	rec, err := r.Recording()
	require.NoError(t, err)
	require.Len(t, rec.Decisions, 2)
	assert.Equal(t, bench.Denied, rec.Decisions[0].Outcome)
	assert.Equal(t, bench.Errored, rec.Decisions[1].Outcome)
	assert.Equal(t, map[string]int{"timeout": 1}, rec.Errors)
	assert.Equal(t, "request timeout (error_code 1050)", rec.ErrorExamples["timeout"])
	assert.Equal(t, 2*time.Millisecond, rec.Decisions[0].Returned-rec.Decisions[0].Sent)
}

func TestUntaggedIncompleteAndBadInput(t *testing.T) {
	// Without the user tag: counted, not judged; nothing else: an error
	// that says why.
	r := NewReader(Options{UserTag: "who"})
	require.NoError(t, r.Read("doc", strings.NewReader(documented)))
	_, err := r.Recording()
	assert.ErrorContains(t, err, `none of its 1 requests carries the tag "who"`)
	assert.Equal(t, 1, r.Stats().Untagged)

	// A request without its blocked point is not judged.
	var partial []string
	for _, l := range strings.Split(strings.TrimSpace(documented), "\n") {
		if !strings.Contains(l, "http_req_blocked") {
			partial = append(partial, l)
		}
	}
	r = NewReader(Options{})
	require.NoError(t, r.Read("partial", strings.NewReader(strings.Join(partial, "\n"))))
	assert.Equal(t, 1, r.Stats().Incomplete)
	_, err = r.Recording()
	assert.ErrorContains(t, err, "no HTTP request points")

	for name, in := range map[string]string{
		"not JSON":     `{"type":"Point","metric":"http_req_duration","data":` + "\n",
		"no time":      `{"type":"Point","data":{"value":1,"tags":{}},"metric":"http_req_duration"}` + "\n",
		"a duplicate":  strings.Repeat(strings.Split(documented, "\n")[3]+"\n", 2),
		"no status":    strings.ReplaceAll(documented, `"status":"200",`, ""),
		"a bad status": strings.ReplaceAll(documented, `"status":"200"`, `"status":"OK"`),
		// Out of bounds: an instant past where Unix nanoseconds wrap, a
		// duration whose nanoseconds do.
		"the year 9999":         strings.ReplaceAll(documented, "2017-05-09", "9999-05-09"),
		"the year 1":            strings.ReplaceAll(documented, "2017-05-09", "0001-05-09"),
		"the year 9999, slowly": strings.ReplaceAll(strings.ReplaceAll(documented, "2017-05-09", "9999-05-09"), `"user":"u1"`, `"user":"u\u0031"`),
		"a duration of 1e300":   strings.ReplaceAll(documented, `"value":459.865729`, `"value":1e300`),
		"a day and a ms":        strings.ReplaceAll(documented, `"value":12.5`, `"value":86400001`),
	} {
		r := NewReader(Options{})
		err := r.Read(name, strings.NewReader(in))
		if err == nil {
			_, err = r.Recording()
		}
		assert.Error(t, err, name)
		if strings.Contains(name, "year") {
			assert.ErrorContains(t, err, "want an instant from 1970 to 2200", name)
		}
		if strings.Contains(name, "1e300") || strings.Contains(name, "a day") {
			assert.ErrorContains(t, err, "not a point of a duration in ms (-86400000 to 86400000, a day)", name)
		}
	}
}

// readFixtures reads testdata outputs (one generator each), shifting the
// timestamps of those in shifted by shift.
func readFixtures(t *testing.T, names []string, shifted map[string]bool, shift time.Duration) *bench.Recording {
	t.Helper()
	r := NewReader(Options{})
	for _, name := range names {
		f, err := os.Open(filepath.Join("testdata", name))
		require.NoError(t, err)
		var in io.Reader = f
		if shifted[name] {
			in = shiftTimes(t, f, shift)
		}
		require.NoError(t, r.Read(name, in))
		f.Close()
	}
	rec, err := r.Recording()
	require.NoError(t, err)
	return rec
}

var timeField = regexp.MustCompile(`"time":"([^"]+)"`)

// shiftTimes rewrites every timestamp of a (gzipped) k6 output by d: the
// output of a generator whose clock was d ahead.
func shiftTimes(t *testing.T, in io.Reader, d time.Duration) io.Reader {
	t.Helper()
	gz, err := gzip.NewReader(in)
	require.NoError(t, err)
	b, err := io.ReadAll(gz)
	require.NoError(t, err)
	out := timeField.ReplaceAllFunc(b, func(m []byte) []byte {
		at, err := time.Parse(time.RFC3339Nano, string(timeField.FindSubmatch(m)[1]))
		require.NoError(t, err)
		return fmt.Appendf(nil, `"time":%q`, at.Add(d).Format(time.RFC3339Nano))
	})
	return bytes.NewReader(out)
}

func judge(t *testing.T, rec *bench.Recording, skew time.Duration) *bench.Result {
	t.Helper()
	res, err := bench.Replay{Judge: bench.Judge{Limit: fixtureLimit, Window: fixtureWindow}, ClockSkew: skew}.Run(rec)
	require.NoError(t, err)
	require.NotNil(t, res.Exactness)
	return res
}

func text(r *bench.Result) string {
	var b strings.Builder
	r.Text(&b)
	return b.String()
}

var (
	exactFixtures     = []string{"exact-a.json.gz", "exact-b.json.gz"}
	nonAtomicFixtures = []string{"nonatomic-a.json.gz", "nonatomic-b.json.gz"}
)

// Two generators' outputs merged, of load on the reference behind the
// middleware: exact, and the limit was put to the test.
func TestTwoGeneratorsMergedAreExact(t *testing.T) {
	res := judge(t, readFixtures(t, exactFixtures, nil, 0), 0)
	out := text(res)
	assert.True(t, res.Exactness.Exact(), out)
	assert.Equal(t, 3, res.Exactness.UsersAtLimit, out)
	assert.Greater(t, res.Allowed, 20, out)
	assert.Contains(t, out, "load        k6 JSON output of 2 generators (exact-a.json.gz, exact-b.json.gz)")
	assert.Contains(t, out, "exactness   exact: no overshoot and no under-admission in 400 decisions of 3 users at the limit")
	assert.Contains(t, out, "clock skew  assumed 0s")
	assert.Equal(t, time.Duration(0), res.Skew.Smallest)
	assert.True(t, res.Skew.Explained)
}

// An endpoint that counts, then adds, in two round trips: concurrent
// requests of one user pass the same count. The overshoot is found, with
// the worst window's timeline, and no clock skew explains it.
func TestCountThenAddOvershoots(t *testing.T) {
	res := judge(t, readFixtures(t, nonAtomicFixtures, nil, 0), 0)
	out := text(res)
	require.True(t, res.Failed(), out)
	assert.Positive(t, res.Exactness.Overshoot, out)
	assert.Contains(t, out, "OVERSHOOT: ")
	assert.Contains(t, out, "worst window: user ")
	assert.Contains(t, out, "timeline (ms since the run's first instant; sent..answered):")
	assert.Regexp(t, `AllowRequest\("(alice|bob|carol)"\) = allowed`, out)
	// More than N allowed within less than the window, whatever the
	// clocks: its calls' span, widened by any skew that explains it, is a
	// window or more.
	assert.Greater(t, res.Exactness.Worst.Allowed, fixtureLimit)
	assert.True(t, res.Skew.Explained, out)
	assert.Greater(t, res.Skew.Smallest, time.Duration(0))
}

// One generator's clock 100ms ahead (its timestamps shifted in its
// output): within a declared bound of 100ms nothing fails; with none, the
// decisions look wrong, and the report gives the skew that explains them,
// which is at most the shift.
func TestAnOffsetClockIsExplainedBySkew(t *testing.T) {
	const shift = fixtureWindow
	shifted := map[string]bool{"exact-b.json.gz": true}

	res := judge(t, readFixtures(t, exactFixtures, shifted, shift), shift)
	assert.True(t, res.Exactness.Exact(), text(res))
	assert.Contains(t, text(res), "clock skew  assumed 100ms: every call's interval widened by it on each side")

	res = judge(t, readFixtures(t, exactFixtures, shifted, shift), 0)
	out := text(res)
	require.True(t, res.Failed(), out)
	s := res.Skew
	assert.True(t, s.Explained, out)
	assert.Positive(t, s.Smallest, out)
	assert.LessOrEqual(t, s.Smallest, shift, out)
	assert.Contains(t, out, fmt.Sprintf("the smallest skew that explains every decision is %v", s.Smallest))

	// Just below it the decisions still fail; at it they pass.
	below := judge(t, readFixtures(t, exactFixtures, shifted, shift), s.Smallest-bench.SkewResolution)
	assert.True(t, below.Failed(), text(below))
	at := judge(t, readFixtures(t, exactFixtures, shifted, shift), s.Smallest)
	assert.False(t, at.Failed(), text(at))
	assert.LessOrEqual(t, at.Skew.Smallest, s.Smallest)
}

// Live: two generators at once against the reference behind the
// middleware, on a test Redis, then against the endpoint that counts and
// adds in two round trips. The first is exact, the second overshoots.
// Whether two requests race through one check is up to the scheduler (a
// run under -race on a loaded machine once had none in 600): the racy
// endpoint is recorded again, up to five times, until one does; every
// recording without one must be judged exact.
func TestLiveTwoGenerators(t *testing.T) {
	for _, atomic := range []bool{true, false} {
		url := endpoint(t, atomic)
		for attempt := 1; ; attempt++ {
			var a, b bytes.Buffer
			recordPair(t, url, !atomic, &a, &b)
			r := NewReader(Options{})
			require.NoError(t, r.Read("a", &a))
			require.NoError(t, r.Read("b", &b))
			rec, err := r.Recording()
			require.NoError(t, err)
			res := judge(t, rec, 0)
			out := text(res)
			assert.Empty(t, res.Errors, out)
			if atomic {
				assert.True(t, res.Exactness.Exact(), out)
				assert.Positive(t, res.Exactness.UsersAtLimit, out)
				break
			}
			if res.Failed() {
				break
			}
			require.True(t, res.Exactness.Exact(), "a recording is failed or exact:\n%s", out)
			require.Less(t, attempt, 5, "five recordings of the racy endpoint, none with two requests through one check:\n%s", out)
		}
	}
}

// Tags named like the fields, escapes, spaces, non-string tags and tags
// nested deeper than the fast scanner reads read as encoding/json reads
// them.
func TestTheScannerAgreesWithEncodingJSON(t *testing.T) {
	const at = `"time":"2025-01-01T00:00:00.5Z"`
	for name, tags := range map[string]string{
		"tags named as fields": `{"time":"x","value":"y","metric":"http_req_blocked","type":"Metric","status":"200","user":"u\"1"}`,
		"an escaped error":     `{"status":"0","user":"u\"1","error":"dial: \"refused\"","error_code":"1212"}`,
		"spaces":               ` { "status" : "200" , "user" : "u\"1" } `,
		"a number status":      `{"status":200,"user":"u\"1"}`,
		"nested deep":          `{"status":"200","user":"u\"1","deep":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
	} {
		var lines []string
		for _, m := range []string{"http_req_duration", "http_req_blocked", "http_req_connecting", "http_req_tls_handshaking"} {
			lines = append(lines, fmt.Sprintf(`{"type":"Point", "data":{%s,"value":2,"tags":%s},"metric":%q}`, at, tags, m))
		}
		r := NewReader(Options{})
		require.NoError(t, r.Read(name, strings.NewReader(strings.Join(lines, "\n"))), name)
		rec, err := r.Recording()
		require.NoError(t, err, name)
		require.Len(t, rec.Decisions, 1, name)
		assert.Equal(t, []string{`u"1`}, rec.UserIDs, name)
		assert.Equal(t, 4*time.Millisecond, rec.Decisions[0].Returned-rec.Decisions[0].Sent, name)
		if strings.Contains(tags, "1212") {
			assert.Equal(t, map[string]string{"connection": `dial: "refused" (error_code 1212)`}, rec.ErrorExamples, name)
		}
	}
}

// docs/k6/ratelimit.js is valid JavaScript (k6 itself is not run here:
// node checks its syntax, as an ES module, as k6 reads it).
func TestTheScriptOfTheDocsParses(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "docs", "k6", "ratelimit.js"))
	require.NoError(t, err)
	mjs := filepath.Join(t.TempDir(), "ratelimit.mjs")
	require.NoError(t, os.WriteFile(mjs, src, 0o644))
	out, err := exec.Command(node, "--check", mjs).CombinedOutput()
	require.NoError(t, err, "%s", out)
}
