// Package gateways grades real rate-limiting gateways over HTTP, as any
// user's service is graded: nginx (limit_req) and HAProxy (a stick table's
// http_req_rate). Each test starts its gateway as a child process on a
// free loopback port, from a configuration in this folder written into a
// temporary directory, grades it through the rlconform command's entry
// point, and asserts what the grader says of it. Neither gateway has clock
// control: everything runs in real time, with a window of 1s.
// docs/gateways.md explains the results.
//
// The gateways must be installed (make test does it, with
// scripts/ensure-gateways): a missing one fails the tests, never skips
// them. go test -short skips them (the edit loop); the two gateways are
// graded side by side.
package gateways

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/cli"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// The policy both gateways are configured to enforce: 5 requests per
// second per X-User.
const (
	limit  = 5
	window = time.Second
	policy = "5/1s"
	// maxRPS is the grader's default, max(50, 2N+8): a request waiting for
	// its turn is timed from when it leaves, so the pacing widens no
	// interval.
	maxRPS = 50
)

// The specs a black-box endpoint is graded on (the others need clock
// control, Configure, Reset, a remaining query, several replicas or a
// store, or send RateLimit fields: skipped with the reason).
var graded = []string{
	"core/allow-within-limit", "core/block-over-limit", "core/sliding-expiry", "core/multi-user",
	"strict/boundary-burst-epoch", "strict/boundary-burst-first", "strict/rolling-expiry",
	"strict/same-millisecond-burst", "strict/denied-not-logged", "strict/linearizable",
}

// gcraDescription is how rlconform describes nginx's bucket: rate=5r/s
// burst=4 is GCRA with T = 200ms and a burst of 5.
const gcraDescription = "GCRA (a token bucket of 5 refilled continuously at 5 per 1s, one every 200ms)"

func TestMain(m *testing.M) {
	// Each gateway's test waits on real time, on a port of its own.
	testtier.Parallelism(3)
	os.Exit(m.Run())
}

// gatewayBinary finds name on PATH or in the sbin directories (where
// Debian puts both gateways, not always on a user's PATH); it fails the
// test when the gateway is not installed.
func gatewayBinary(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin", "/opt/homebrew/bin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	t.Fatalf("%s is not installed, and make test grades it: run make test (scripts/ensure-gateways installs it as root on Debian), "+
		"or sudo apt-get install -y nginx-light haproxy (apt starts both on port 80: docs/gateways.md says how to keep it from doing so)", name)
	return ""
}

// render writes the template file tmpl, executed with data, to path.
func render(t *testing.T, tmpl, path string, data any) {
	t.Helper()
	text, err := os.ReadFile(tmpl)
	require.NoError(t, err)
	parsed, err := template.New(tmpl).Option("missingkey=error").Parse(string(text))
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, parsed.Execute(&b, data))
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startGateway runs the gateway that setup prepares in a fresh directory
// for a free port (its command line, and the logs to show when it does not
// start), waits until it answers GET /ok with 200 (a request without
// X-User, which neither limits), and stops it when the test ends. A port
// taken in between is tried again with another.
func startGateway(t *testing.T, name string, setup func(dir string, port int) (argv, logs []string)) string {
	t.Helper()
	for attempt := 1; ; attempt++ {
		dir, port := t.TempDir(), freePort(t)
		argv, logs := setup(dir, port)
		out, err := os.Create(filepath.Join(dir, "output.log"))
		require.NoError(t, err)
		logs = append(logs, out.Name())
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdout, cmd.Stderr = out, out
		dieWithParent(cmd)
		require.NoError(t, cmd.Start(), "%s", strings.Join(argv, " "))
		exited := make(chan struct{})
		go func() {
			cmd.Wait()
			out.Close()
			close(exited)
		}()
		url := fmt.Sprintf("http://127.0.0.1:%d/ok", port)
		err = waitReady(url, exited, 15*time.Second)
		if err == nil {
			t.Cleanup(func() {
				cmd.Process.Kill()
				<-exited
			})
			t.Logf("%s listening at %s: %s", name, url, strings.Join(argv, " "))
			return url
		}
		cmd.Process.Kill()
		<-exited
		var said strings.Builder
		for _, l := range logs {
			if b, err := os.ReadFile(l); err == nil {
				said.Write(b)
			}
		}
		if attempt < 3 && strings.Contains(said.String(), "in use") {
			continue
		}
		t.Fatalf("%s did not start: %v\n%s\n%s", name, err, strings.Join(argv, " "), said.String())
	}
}

// waitReady polls url until it answers 200, the process exits, or the
// bound passes.
func waitReady(url string, exited <-chan struct{}, bound time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	last := errors.New("no answer yet")
	for {
		select {
		case <-exited:
			return errors.New("it exited")
		case <-deadline.C:
			return fmt.Errorf("no 200 from %s within %v: %v", url, bound, last)
		case <-tick.C:
		}
		resp, err := client.Get(url)
		if err != nil {
			last = err
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		last = fmt.Errorf("status %d", resp.StatusCode)
	}
}

// nginxConfig fills nginx.conf.tmpl.
type nginxConfig struct {
	Dir       string
	Port      int
	Rate      string // limit_req_zone's rate
	Burst     int    // limit_req's burst
	TempPaths []string
}

// startNginx runs nginx with limit_req at rate and burst.
func startNginx(t *testing.T, rate string, burst int) string {
	bin := gatewayBinary(t, "nginx")
	v, _ := exec.Command(bin, "-V").CombinedOutput()
	t.Logf("%s", strings.SplitN(string(v), "\n", 2)[0])
	temp := []string{"client_body"}
	for _, m := range []string{"proxy", "fastcgi", "uwsgi", "scgi"} {
		if !strings.Contains(string(v), "--without-http_"+m+"_module") {
			temp = append(temp, m)
		}
	}
	return startGateway(t, "nginx", func(dir string, port int) ([]string, []string) {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "html"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "html", "ok"), []byte("ok\n"), 0o644))
		conf := filepath.Join(dir, "nginx.conf")
		render(t, "nginx.conf.tmpl", conf, nginxConfig{Dir: dir, Port: port, Rate: rate, Burst: burst, TempPaths: temp})
		errLog := filepath.Join(dir, "error.log")
		return []string{bin, "-p", dir, "-c", conf, "-e", errLog, "-g", "daemon off; master_process off;"}, []string{errLog}
	})
}

// haproxyConfig fills haproxy.cfg.tmpl.
type haproxyConfig struct {
	Port   int
	Period string // http_req_rate's period
	Limit  int    // denied when the rate read is greater
}

// startHAProxy runs HAProxy denying a user whose http_req_rate(period),
// counting the request itself, is greater than max.
func startHAProxy(t *testing.T, period string, max int) string {
	bin := gatewayBinary(t, "haproxy")
	v, _ := exec.Command(bin, "-v").CombinedOutput()
	t.Logf("%s", strings.SplitN(string(v), "\n", 2)[0])
	return startGateway(t, "haproxy", func(dir string, port int) ([]string, []string) {
		conf := filepath.Join(dir, "haproxy.cfg")
		render(t, "haproxy.cfg.tmpl", conf, haproxyConfig{Port: port, Period: period, Limit: max})
		return []string{bin, "-db", "-f", conf}, nil
	})
}

// A run's JSON report, as much of it as the tests read.
type runReport struct {
	Outcome string      `json:"outcome"`
	Verdict string      `json:"verdict"`
	Profile string      `json:"profile"`
	Results []runResult `json:"results"`
	text    string
	took    time.Duration
}

type runResult struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Failure *struct {
		Kind        string   `json:"kind"`
		Explanation string   `json:"explanation"`
		ExplainedBy []string `json:"explained_by"`
	} `json:"failure"`
}

// grade runs `rlconform run --endpoint url` as a user would, identities in
// X-User, policy 5/1s, with extra flags, and returns its JSON report.
func grade(t *testing.T, url string, extra ...string) runReport {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	args := append([]string{"run", "--endpoint", url, "--identity", "header:X-User", "--policy", policy,
		"--max-rps", strconv.Itoa(maxRPS), "--report-dir", dir, "--json", path}, extra...)
	var out, errOut bytes.Buffer
	began := time.Now()
	code := cli.Main(args, &out, &errOut)
	took := time.Since(began)
	t.Logf("rlconform %s: exit %d in %v\n%s", strings.Join(args, " "), code, took.Round(10*time.Millisecond), out.String())
	b, err := os.ReadFile(path)
	require.NoError(t, err, "no report: %s", errOut.String())
	var rep runReport
	require.NoError(t, json.Unmarshal(b, &rep))
	rep.text, rep.took = out.String(), took
	// The exit code says the verdict.
	want := map[string]int{"conformant": cli.ExitConformant, "not-conformant": cli.ExitNotConformant, "undecided": cli.ExitCannotRun}
	require.Contains(t, want, rep.Outcome, errOut.String())
	require.Equal(t, want[rep.Outcome], code, errOut.String())
	return rep
}

// with returns the ids of the results with status s.
func (r runReport) with(s string) []string {
	var ids []string
	for _, res := range r.Results {
		if res.Status == s {
			ids = append(ids, res.ID)
		}
	}
	return ids
}

func (r runReport) result(id string) runResult {
	for _, res := range r.Results {
		if res.ID == id {
			return res
		}
	}
	return runResult{}
}

// expectOnlyFailures asserts that the run graded the endpoint's specs and
// failed none but those of mayFail, each of mustFail failed or (in real
// time, on a loaded machine) inconclusive, never passed, and at least
// one failed.
//
// On a loaded machine (rep.slow) only the first half holds: nothing
// fails that the evidence does not fail. Which spec catches the gateway,
// and whether one does, then depends on how late the load sends each
// request: a user hammering at a few requests a second lets HAProxy's
// rate fall as a log's would (CI saw strict/denied-not-logged pass so,
// with round trips of 161ms). That is logged, never a failure of the
// grader: the catch is proven on a machine that answers in time.
func expectOnlyFailures(t *testing.T, rep runReport, mayFail, mustFail []string) {
	t.Helper()
	for _, id := range graded {
		assert.NotEqual(t, "skip", rep.result(id).Status, "%s is graded on an endpoint", id)
	}
	for _, id := range rep.with("fail") {
		assert.Contains(t, mayFail, id, "a spec failed that the evidence does not fail")
		assert.Contains(t, []string{"wrong-answer", "violation"}, rep.result(id).Failure.Kind, id)
	}
	assert.Empty(t, rep.with("error"))
	if rep.slow() {
		var passed []string
		for _, id := range mustFail {
			if rep.result(id).Status == "pass" {
				passed = append(passed, id)
			}
		}
		t.Logf("round trips slow for the window on this machine: outcome %s, of the specs that catch the gateway in time %v passed", rep.Outcome, passed)
		return
	}
	assert.Equal(t, "not-conformant", rep.Outcome, rep.Verdict)
	assert.NotEmpty(t, rep.with("fail"))
	for _, id := range mustFail {
		assert.Contains(t, []string{"fail", "inconclusive"}, rep.result(id).Status, id)
	}
}

// expectNoFailure asserts that nothing failed: the run is conformant, or
// undecided because a real-time spec was inconclusive on a loaded machine
// (never a pass, never a failure).
func expectNoFailure(t *testing.T, rep runReport) {
	t.Helper()
	assert.Empty(t, rep.with("fail"), rep.text)
	assert.Empty(t, rep.with("error"), rep.text)
	if in := rep.with("inconclusive"); len(in) > 0 {
		assert.Equal(t, "undecided", rep.Outcome)
		t.Logf("inconclusive in real time on this machine (never a pass): %v", in)
	} else {
		assert.Equal(t, "conformant", rep.Outcome, rep.Verdict)
	}
	assert.Subset(t, graded, rep.with("pass"))
	if !rep.slow() {
		assert.GreaterOrEqual(t, len(rep.with("pass")), len(graded)-2, "passed")
	}
}

// slow reports whether the run met a machine too loaded to answer in
// time: the grader found the target's round trips slow for the 1s window
// or stalled (its report's note), or a spec was inconclusive or not run
// (it ran out of time, or decided nothing). Load that comes after the
// first spec measured the round trips shows only so (make test saw
// strict/rolling-expiry run out of its minute, with every later spec not
// run). Answers near a window's edges are then undecided, and a spec may
// decide too little to catch what it catches on a machine that answers
// in time.
func (r runReport) slow() bool {
	return strings.Contains(r.text, "slow for the window") || strings.Contains(r.text, "calls stalled") ||
		len(r.with("inconclusive")) > 0 || len(r.with("not-run")) > 0
}

// identify runs suite.Identify on the endpoint, in real time with the
// policy's window, and logs what it says.
func identify(t *testing.T, url string) *result.Identification {
	t.Helper()
	ctx := context.Background()
	target, pol, _, err := targets.Endpoint(ctx, []string{url}, targets.EndpointOptions{
		EndpointOptions: adapters.EndpointOptions{Identity: adapters.Identity{Kind: "header", Name: "X-User"}},
		Policy:          adapters.Policy{Limit: limit, Window: window},
		MaxRPS:          maxRPS,
	})
	require.NoError(t, err)
	require.Equal(t, limit, pol.Limit)
	began := time.Now()
	id, err := suite.Identify(ctx, suite.Config{Limit: limit, RealTimeWindow: window}, target)
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, report.Identification(&b, id))
	t.Logf("identify took %v:\n%s", time.Since(began).Round(10*time.Millisecond), b.String())
	assert.Equal(t, result.RealTime, id.Mode)
	assert.Equal(t, window, id.Window)
	return id
}

func ruledOut(id *result.Identification) []string {
	var out []string
	for _, r := range id.RuledOut {
		out = append(out, r.Profile)
	}
	return out
}

// nginx's limit_req, rate=5r/s burst=4 nodelay: a leaky bucket drained at
// 5 a second that refuses a request when more than 4 would be waiting in
// it. That is GCRA with T = 200ms and a burst of 5 (nginx's burst does not
// count the request the bucket always takes): graded as the sliding log
// it is not, it is failed with GCRA named; graded as gcra:burst=5 it
// passes, as gcra:burst=4 it does not; identify names it
// (TestNginxBurstIsNamed names burst=2 a GCRA with a burst of 3).
func TestNginxLimitReqIsGCRA(t *testing.T) {
	testtier.SkipShort(t, "grades nginx in real time")
	t.Parallel() // beside the other gateway: each waits on real time, on its own port
	url := startNginx(t, "5r/s", 4)

	t.Run("as a sliding log", func(t *testing.T) {
		rep := grade(t, url)
		// http/retry-after, too, judges its requests' answers by the log:
		// one sent 200ms after a refusal is admitted by the bucket (seen
		// under load, when its phases land past a refill).
		// So does core/multi-user when its calls are slow enough (7.7s
		// for its 18 in one make test) that a refill lands mid-spec.
		mayFail := []string{"core/sliding-expiry", "core/multi-user", "strict/boundary-burst-epoch", "strict/boundary-burst-first",
			"strict/rolling-expiry", "strict/same-millisecond-burst", "strict/denied-not-logged", "strict/linearizable", "http/retry-after"}
		// Quota comes back one request every 200ms, long before the
		// requests of the last second leave it: these fail however late
		// a loaded machine sends their requests.
		expectOnlyFailures(t, rep, mayFail, []string{"strict/rolling-expiry", "strict/denied-not-logged", "strict/boundary-burst-epoch"})
		named := 0
		for _, id := range rep.with("fail") {
			f := rep.result(id).Failure
			if len(f.ExplainedBy) > 0 && !slices.Contains(f.ExplainedBy, gcraDescription) {
				// A diagnosis replays the answers at a few instants of
				// each call, not all of them (it is not a verdict): an
				// answer on a bucket's edge may miss it.
				t.Logf("%s: the diagnosis leaves out GCRA: %v", id, f.ExplainedBy)
			}
			if slices.Equal(f.ExplainedBy, []string{gcraDescription}) {
				named++
				assert.Contains(t, rep.result(id).Message, "a rate with a burst lets requests through as soon as the bucket refills")
			}
		}
		// strict/rolling-expiry's answers are far from every edge (on a
		// machine that answers in time).
		if !rep.slow() {
			assert.Positive(t, named, "no failure is diagnosed as GCRA alone:\n%s", rep.text)
		}
	})

	t.Run("as gcra:burst=5", func(t *testing.T) {
		rep := grade(t, url, "--profile", "gcra:burst=5")
		assert.Equal(t, "gcra:burst=5", rep.Profile)
		expectNoFailure(t, rep)
	})

	// nginx's own number is one short: five at once are admitted.
	t.Run("as gcra:burst=4", func(t *testing.T) {
		rep := grade(t, url, "--profile", "gcra:burst=4", "--id", "core/block-over-limit,strict/same-millisecond-burst")
		if rep.slow() && rep.Outcome == "undecided" {
			t.Logf("undecided on this machine (its round trips too slow for the window): %v inconclusive", rep.with("inconclusive"))
			return
		}
		assert.Equal(t, "not-conformant", rep.Outcome, rep.text)
		admitted := regexp.MustCompile(`= allowed, want denied|5 allowed, want exactly 4`)
		for _, id := range rep.with("fail") {
			assert.Regexp(t, admitted, rep.result(id).Message, id)
		}
	})

	t.Run("identify", func(t *testing.T) {
		id := identify(t, url)
		require.NotEmpty(t, id.Fits, "GCRA explains every answer")
		if len(id.Fits) > 1 && strings.Contains(identifyNotes(id), "slow for the window") {
			// As HAProxy's identify: an honest AMBIGUOUS under load, that
			// must still hold nginx's bucket.
			var fits []string
			for _, f := range id.Fits {
				fits = append(append(fits, f.Profile), f.SameDecisions...)
			}
			assert.True(t, slices.Contains(fits, "gcra:burst=5") || slices.Contains(fits, "gcra:burst=limit"), "nginx's bucket is never ruled out: %v", fits)
			t.Logf("ambiguous under load, nginx's bucket among %d fits", len(id.Fits))
			return
		}
		require.Len(t, id.Fits, 1, "one group of profiles explains every answer")
		fit := id.Fits[0]
		assert.Contains(t, []string{"gcra:burst=limit", "gcra:burst=5"}, fit.Profile)
		assert.Equal(t, gcraDescription, fit.Description)
		assert.Subset(t, []string{"token-bucket:capacity=limit,expire=full,query=read,refill=continuous"}, fit.SameDecisions)
		assert.Positive(t, fit.Decided)
		assert.Subset(t, ruledOut(id), []string{"sliding-log", "sliding-counter:admit=below,align=epoch,count-denied=false", "sliding-counter:admit=below,align=epoch,count-denied=true",
			"fixed-window:align=epoch,count-denied=false,query=read", "fixed-window:align=first-hit,count-denied=false,query=read", "token-bucket:capacity=limit,expire=full,query=read,refill=interval"})
	})
}

// A burst other than the limit is named with its number: nginx's burst=2
// is GCRA with three at once. (A gateway of its own, graded beside the
// others.)
func TestNginxBurstIsNamed(t *testing.T) {
	testtier.SkipShort(t, "identifies nginx in real time")
	t.Parallel()
	id := identify(t, startNginx(t, "5r/s", 2))
	assert.Equal(t, 3, id.Burst, "a fresh user's requests at once")
	require.Len(t, id.Fits, 1, "one group of profiles explains every answer")
	fit := id.Fits[0]
	assert.Equal(t, "gcra:burst=3", fit.Profile)
	assert.Equal(t, "GCRA (a token bucket of 3 refilled continuously at 5 per 1s, one every 200ms)", fit.Description)
	assert.Subset(t, []string{"token-bucket:capacity=3,expire=full,query=read,refill=continuous"}, fit.SameDecisions)
	assert.Contains(t, ruledOut(id), "gcra:burst=limit")
}

// haproxyProfile is HAProxy's http_req_rate as rlconform's profile.
const haproxyProfile = "sliding-counter:align=first-grid,count-denied=true"

// HAProxy's http_req_rate(1s) with `deny if { sc_http_req_rate(0) gt 5 }`:
// a two-window weighted counter that counts every request, refused ones
// too, on periods that start at the entry's first request (not on the
// epoch). Graded as a sliding log or as the weighted counter on the epoch
// it is failed; as the counter on periods anchored at the first request
// (haproxyProfile) nothing fails, and identify names it; the last subtest
// shows that HAProxy's own counter explains every answer.
func TestHAProxyHTTPReqRateIsAnAnchoredWeightedCounter(t *testing.T) {
	testtier.SkipShort(t, "grades HAProxy in real time")
	t.Parallel() // beside the other gateway: each waits on real time, on its own port
	url := startHAProxy(t, "1s", limit)

	t.Run("as a sliding log", func(t *testing.T) {
		rep := grade(t, url)
		// Stricter than the log: refused requests keep the rate up, and
		// the last period's count weighs on after its requests left the
		// window.
		mayFail := []string{"core/sliding-expiry", "strict/boundary-burst-epoch", "strict/boundary-burst-first", "strict/rolling-expiry",
			"strict/same-millisecond-burst", "strict/denied-not-logged", "strict/linearizable", "http/retry-after"}
		// A user hammering while refused keeps its rate up for seconds.
		expectOnlyFailures(t, rep, mayFail, []string{"strict/denied-not-logged"})
		if rep.slow() {
			return // which failure, and its words, depend on the load
		}
		stricter := false
		for _, id := range rep.with("fail") {
			stricter = stricter || strings.Contains(rep.result(id).Message, "denied, but at most")
		}
		assert.True(t, stricter, "no request refused where the log has room:\n%s", rep.text)
		counted := regexp.MustCompile(`logs denied requests too|counting denied requests`)
		diagnosed := false
		for _, id := range rep.with("fail") {
			for _, d := range rep.result(id).Failure.ExplainedBy {
				diagnosed = diagnosed || counted.MatchString(d)
			}
		}
		assert.True(t, diagnosed, "no diagnosis says refused requests count:\n%s", rep.text)
	})

	t.Run("as sliding-counter:count-denied=true", func(t *testing.T) {
		rep := grade(t, url, "--profile", "sliding-counter:count-denied=true")
		// Any spec whose requests straddle an epoch edge may fail: where
		// they fall depends on when each spec starts. Even six requests
		// in 50ms: five before an edge, and the epoch's counter weighs
		// them at less than five after it (CI saw block-over-limit fail
		// so). Only allow-within-limit's N requests are allowed by both.
		mayFail := []string{"core/block-over-limit", "core/multi-user", "core/sliding-expiry", "strict/boundary-burst-epoch", "strict/boundary-burst-first", "strict/rolling-expiry",
			"strict/same-millisecond-burst", "strict/denied-not-logged", "strict/linearizable", "http/retry-after"}
		// Which spec tells the two apart depends on where each spec's
		// requests fall in HAProxy's period, which a loaded machine
		// moves: usually strict/boundary-burst-epoch (its burst just
		// before an epoch edge anchors HAProxy's period there), but CI
		// (under -race) saw it pass, some timing of its calls explaining
		// every answer, while core/sliding-expiry and
		// strict/rolling-expiry failed. So some spec must fail, none in
		// particular.
		expectOnlyFailures(t, rep, mayFail, nil)
		for _, id := range rep.with("fail") {
			if id != "strict/linearizable" {
				assert.Contains(t, rep.result(id).Message, "a two-window weighted counter (sliding-window estimate) of 1s, counting denied requests, limit 5", id)
			}
		}
	})

	t.Run("as its own profile", func(t *testing.T) {
		expectNoFailure(t, grade(t, url, "--profile", haproxyProfile))
	})

	t.Run("identify", func(t *testing.T) {
		id := identify(t, url)
		require.NotEmpty(t, id.Fits, "the anchored weighted counter explains every answer")
		want := model.MustVariant(haproxyProfile).String()
		var fits []string
		for _, f := range id.Fits {
			fits = append(append(fits, f.Profile), f.SameDecisions...)
		}
		require.Contains(t, fits, want, "HAProxy's own counter is never ruled out")
		if len(id.Fits) > 1 && strings.Contains(identifyNotes(id), "slow for the window") {
			// Round trips slow for a 1s window (a loaded machine under
			// make test) leave the probes' edges undecided: an honest
			// AMBIGUOUS that still holds HAProxy's counter.
			t.Logf("ambiguous under load, HAProxy's counter among %d fits", len(id.Fits))
			return
		}
		assert.Equal(t, want, id.Fits[0].Profile)
		assert.Subset(t, ruledOut(id), []string{"sliding-log", "sliding-counter:admit=below,align=epoch,count-denied=false", "sliding-counter:admit=below,align=epoch,count-denied=true",
			"fixed-window:align=first-grid,count-denied=true,query=read", "gcra:burst=limit"})
	})

	t.Run("HAProxy's own counter explains every answer", func(t *testing.T) {
		haproxyExplainsItself(t, url)
	})
}

// haproxyRate is HAProxy's frequency counter over a period (freq_ctr.c,
// 2.6) on one stick-table entry, as `track-sc0` then `deny if {
// sc_http_req_rate(0) gt limit }` use it, at whole milliseconds: the
// zero value is a fresh entry.
//
//   - A request at t in [tick, tick+P) adds one to cur. At or after
//     tick+P, the periods rotate first: prev = cur, cur = 0, tick += P;
//     when a whole period passed with no request (t >= tick + 2P, a fresh
//     entry too), prev = 0 and tick = t with its lowest bit cleared (the
//     bit is HAProxy's lock).
//   - The rate read is ⌊(prev × (tick + P − t) + cur × P) / P⌋, cur
//     holding the request itself, and the request is refused when it is
//     greater than the limit. A refused request stays counted
//     (countDenied false is the variant that would not count it).
type haproxyRate struct{ tick, prev, cur int64 }

func (h haproxyRate) request(t, period, limit int64, countDenied bool) (haproxyRate, bool) {
	switch {
	case t-h.tick >= 2*period:
		h = haproxyRate{tick: t &^ 1}
	case t-h.tick >= period:
		h = haproxyRate{tick: h.tick + period, prev: h.cur}
	}
	h.cur++
	rate := (h.prev*(h.tick+period-t) + h.cur*period) / period
	allowed := rate <= limit
	if !allowed && !countDenied {
		h.cur--
	}
	return h, allowed
}

// answer is one request of a probe: its answer, and when it was sent and
// answered.
type answer struct {
	allowed        bool
	sent, returned time.Time
}

// explainsAll replays answers on haproxyRate at every admissible whole
// millisecond of each request's interval (widened by 1ms each way, no
// earlier than the previous request's instant), as rlconform's search
// does for its profiles; it returns the index of the first answer no
// choice of instants gives, or -1.
func explainsAll(answers []answer, countDenied bool) int {
	type cand struct{ low int64 }
	states := map[haproxyRate]cand{{}: {low: 0}}
	for i, a := range answers {
		lo, hi := a.sent.UnixMilli()-1, a.returned.UnixMilli()+1
		next := map[haproxyRate]cand{}
		for s, c := range states {
			for t := max(lo, c.low); t <= hi; t++ {
				n, allowed := s.request(t, window.Milliseconds(), limit, countDenied)
				// Of two ways to one state, the earlier leaves more
				// instants to the requests after it.
				if prev, ok := next[n]; allowed == a.allowed && (!ok || t < prev.low) {
					next[n] = cand{low: t}
				}
			}
		}
		if len(next) == 0 {
			return i
		}
		states = next
	}
	return -1
}

// firstImpossible replays answers on a profile's interval oracle (the one
// rlconform grades with in real time): the index of the first answer it
// rules out, or -1.
func firstImpossible(t *testing.T, profile string, answers []answer) int {
	o, err := model.NewOracle(model.MustVariant(profile), limit, window)
	require.NoError(t, err)
	for i, a := range answers {
		if j, _, _ := o.Judge(model.TimedOp{Kind: model.OpAllow, User: "u", Lo: a.sent, Hi: a.returned, Allowed: a.allowed}); j == model.Impossible {
			return i
		}
	}
	return -1
}

// haproxyExplainsItself sends a fresh user five requests at once half a
// second into an epoch second, one at +600ms (the epoch's next second has
// begun; HAProxy's first period has not ended), one at +1080ms (the
// requests at +0 have left a sliding second; the refused one at +600ms
// still counts, weighted 0.92) and one at +1500ms (weighted 0.5: room
// again). HAProxy's counter explains every answer; without counting the
// refused request it does not, and neither does any profile rlconform has
// for it. When a loaded machine delays the requests so much that the
// profiles are not all ruled out, the probe is tried again.
func haproxyExplainsItself(t *testing.T, url string) {
	client := &http.Client{Timeout: 5 * time.Second}
	send := func(user string) answer {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		req.Header.Set("X-User", user)
		sent := time.Now()
		resp, err := client.Do(req)
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Contains(t, []int{http.StatusOK, http.StatusTooManyRequests}, resp.StatusCode)
		return answer{allowed: resp.StatusCode == http.StatusOK, sent: sent, returned: time.Now()}
	}
	others := []string{"sliding-log", "sliding-counter:count-denied=true", "sliding-counter:count-denied=false",
		"fixed-window:align=first-grid,count-denied=true,query=read", "fixed-window:align=first-hit,count-denied=true,query=read", "gcra:burst=limit"}
	var unexplained []string
	for try := 1; try <= 3; try++ {
		send(fmt.Sprintf("warm-%d-%d", try, time.Now().UnixNano())) // a connection ready
		user := fmt.Sprintf("probe-%d-%d", try, time.Now().UnixNano())
		// Half a second into an epoch second.
		time.Sleep(time.Duration((1500-time.Now().UnixMilli()%1000)%1000) * time.Millisecond)
		var answers []answer
		for range limit {
			answers = append(answers, send(user))
		}
		start := answers[0].sent
		for _, at := range []time.Duration{600 * time.Millisecond, 1080 * time.Millisecond, 1500 * time.Millisecond} {
			time.Sleep(time.Until(start.Add(at)))
			answers = append(answers, send(user))
		}
		var timeline strings.Builder
		for _, a := range answers {
			fmt.Fprintf(&timeline, "  +%dms…%dms (epoch ms %d) %v\n", a.sent.Sub(start).Milliseconds(), a.returned.Sub(start).Milliseconds(), a.sent.UnixMilli()%1000, map[bool]string{true: "allowed", false: "denied"}[a.allowed])
		}
		t.Logf("try %d:\n%s", try, timeline.String())
		require.Equal(t, -1, explainsAll(answers, true), "HAProxy's own counter does not explain its answers:\n%s", timeline.String())
		assert.NotEqual(t, -1, explainsAll(answers, false), "refused requests not counted explain the answers too:\n%s", timeline.String())
		unexplained = nil
		for _, p := range others {
			if i := firstImpossible(t, p, answers); i < 0 {
				unexplained = append(unexplained, p)
			} else {
				t.Logf("%s is ruled out by answer %d", p, i+1)
			}
		}
		if len(unexplained) == 0 {
			return
		}
		t.Logf("not ruled out on this try (the timing missed its marks): %v", unexplained)
	}
	t.Errorf("after 3 tries, these profiles explain HAProxy's answers too: %v", unexplained)
}

// identifyNotes is every note of an identification, one per line.
func identifyNotes(id *result.Identification) string { return strings.Join(id.Notes, "\n") }
