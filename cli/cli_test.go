package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/internal/testaddr"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/internal/version"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/mutants"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/suite"
)

// asCommand, set to 1 in its environment, makes the test binary the
// rlconform command (Main on its arguments) instead of the tests: a test
// runs it as a child process, to interrupt it, without building
// cmd/rlconform.
const asCommand = "RLCONFORM_CLI_TEST_AS_COMMAND"

// store is the Redis of the services the tests start (each on a prefix of
// its own); a run of the reference obtains its own, as the command does.
var store *redisenv.Redis

func TestMain(m *testing.M) {
	if os.Getenv(asCommand) == "1" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	// The parallel tests grade in real time: they mostly wait.
	testtier.Parallelism(3)
	r, err := redisenv.Obtain(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "cli tests:", err)
		os.Exit(1)
	}
	store = r
	code := m.Run()
	r.Close()
	os.Exit(code)
}

// rlconform runs the command and returns its exit code and outputs.
func rlconform(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// serveModel serves the model over protocol v1; with clock false it has no
// clock control and is graded in real time.
func serveModel(t *testing.T, withClock bool) string {
	t.Helper()
	return serveModelInstances(t, withClock, 1)[0]
}

// serveModelInstances serves one model from k servers: k instances of one
// limiter sharing one state, as instances on one store do.
func serveModelInstances(t *testing.T, withClock bool, k int) []string {
	t.Helper()
	var clock *fakeclock.Fake
	var read fakeclock.Clock = fakeclock.Real{}
	if withClock {
		clock = fakeclock.New(time.Now())
		read = clock
	}
	lim, err := model.NewLimiter(read, 5, time.Minute)
	require.NoError(t, err)
	var urls []string
	for range k {
		srv, err := adapters.NewServer(lim, clock)
		require.NoError(t, err)
		t.Cleanup(func() { srv.Close() })
		urls = append(urls, srv.URL)
	}
	return urls
}

func TestRunGradesTheReferenceByDefault(t *testing.T) {
	dir := t.TempDir()
	code, out, _ := rlconform(t, "run", "--level", "core", "--json", filepath.Join(dir, "r.json"))
	assert.Equal(t, ExitConformant, code, out)
	assert.Contains(t, out, "CONFORMANT")
	for _, id := range []string{"core/allow-within-limit", "core/block-over-limit", "core/sliding-expiry", "core/remaining",
		"core/reset", "core/concurrent-4", "core/reconfigure", "core/multi-user"} {
		assert.Regexp(t, `pass\s+`+id, out)
	}
	var rep struct {
		Conformant bool `json:"conformant"`
		Results    []struct{ ID, Status string }
	}
	raw, err := os.ReadFile(filepath.Join(dir, "r.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &rep))
	assert.True(t, rep.Conformant)
	assert.Len(t, rep.Results, 8)
}

func TestRunRemoteTargets(t *testing.T) {
	t.Parallel() // its own servers: nothing shared
	urls := serveModelInstances(t, true, 2)
	dir := t.TempDir()
	junit, summary := filepath.Join(dir, "j.xml"), filepath.Join(dir, "s.md")
	code, out, _ := rlconform(t, "run", "--target", urls[0], "--target", urls[1], "--level", "strict", "--junit", junit, "--summary", summary)
	assert.Equal(t, ExitConformant, code, out)

	raw, err := os.ReadFile(junit)
	require.NoError(t, err)
	var parsed struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(raw, &parsed))
	require.Len(t, parsed.Suites, 2)
	assert.Zero(t, parsed.Suites[0].Failures+parsed.Suites[1].Failures)
	md, err := os.ReadFile(summary)
	require.NoError(t, err)
	assert.Contains(t, string(md), "| `strict/shared-store` | strict | ✅ pass |")
}

func TestRunInRealTimeWithoutClockControl(t *testing.T) {
	testtier.SkipShort(t, "grades in real time")
	t.Parallel()
	url := serveModel(t, false)
	start := time.Now()
	code, out, _ := rlconform(t, "run", "--target", url)
	// A slow machine may leave a real-time spec inconclusive (exit 2), never
	// failed.
	require.Contains(t, []int{ExitConformant, ExitCannotRun}, code, out)
	if code == ExitCannotRun {
		assert.Contains(t, out, "inconclusive", out)
	} else {
		assert.Regexp(t, `CONFORMANT at all: \d+ of \d+ graded \(\d+ in real time\)`, out)
	}
	assert.Regexp(t, `(pass|inconclusive)\s+core/sliding-expiry .*\(real time\)`, out)
	assert.Regexp(t, `(pass|inconclusive)\s+strict/boundary-burst-epoch .*\(real time\)`, out)
	assert.Regexp(t, `skip\s+strict/clock-step-back .*only clock control`, out)
	t.Logf("the real-time run took %v", time.Since(start)) // measured, never asserted: the machine may be slow
}

// serveFixedWindow serves the fixed-window-epoch mutant over protocol v1,
// with clock control: strict/boundary-burst-epoch fails it.
func serveFixedWindow(t *testing.T) *adapters.Server {
	t.Helper()
	red := store
	clock := fakeclock.New(time.Now())
	lim, err := mutants.FixedWindowEpoch(mutants.Store{Redis: red.Client, Clock: clock, Prefix: fmt.Sprintf("rlc-cli-test:%d:", time.Now().UnixNano()), MaxRequests: 5, Window: time.Minute})
	require.NoError(t, err)
	srv, err := adapters.NewServer(lim, clock)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	return srv
}

func TestRunFailsABrokenRemoteLimiter(t *testing.T) {
	t.Parallel() // its own servers: nothing shared
	srv := serveFixedWindow(t)

	code, out, _ := rlconform(t, "run", "--target", srv.URL, "--level", "strict", "--report-dir", t.TempDir())
	assert.Equal(t, ExitNotConformant, code)
	assert.Contains(t, out, "strict/boundary-burst-epoch")
	assert.Contains(t, out, `AllowRequest("u") = allowed, want denied`)
	assert.Contains(t, out, "NOT CONFORMANT")

	// Knowingly failing specs can be listed; only unexpected results count.
	code, out, _ = rlconform(t, "run", "--target", srv.URL, "--id", "strict/boundary-burst-epoch,core/reset",
		"--expect-fail", "strict/boundary-burst-epoch")
	assert.Equal(t, ExitConformant, code, out)
	assert.Contains(t, out, "(expected failure)")
	code, out, _ = rlconform(t, "run", "--target", srv.URL, "--id", "core/reset", "--expect-fail", "core/reset")
	assert.Equal(t, ExitCannotRun, code, "an expected failure that passes makes the run undecided: %s", out)
	assert.Contains(t, out, "remove it from the list")
}

func TestRunRejectsBadSelectionsAndPathsFirst(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"misspelt id", []string{"run", "--id", "core/reset,core/rset"}, `unknown spec id "core/rset" (did you mean "core/reset"?)`},
		{"unknown prefix", []string{"run", "--id", "nope/"}, `unknown spec id "nope/"`},
		{"unknown expected failure", []string{"run", "--expect-fail", "strict/linearisable"}, `did you mean "strict/linearizable"`},
		{"unknown label", []string{"run", "--label", "needs-confgure"}, `did you mean "needs-configure"`},
		{"report path", []string{"run", "--junit", "/nonexistent/dir/x.xml"}, "--junit: open /nonexistent/dir/x.xml"},
		{"two reports on stdout", []string{"run", "--json", "-", "--junit", "-"}, "only one of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			code, _, errOut := rlconform(t, tt.args...)
			assert.Equal(t, ExitCannotRun, code, errOut)
			assert.Contains(t, errOut, tt.want)
			assert.NotContains(t, errOut, "grading", "nothing is graded before the flags are known good")
			assert.Less(t, time.Since(start), 5*time.Second)
		})
	}
}

func TestRunWritesAReportToStdout(t *testing.T) {
	code, out, errOut := rlconform(t, "run", "--id", "core/reset", "--json", "-")
	require.Equal(t, ExitConformant, code, errOut)
	var rep struct {
		Outcome   string `json:"outcome"`
		Version   string `json:"version"`
		Catalogue string `json:"catalogue"`
		Coverage  struct{ Graded int }
		Results   []struct{ Status, Mode string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), "stdout holds the JSON alone: %s", out)
	assert.Equal(t, "conformant", rep.Outcome)
	assert.NotEmpty(t, rep.Version)
	assert.Equal(t, version.Of(suite.Specs()).Catalogue, rep.Catalogue, "the report names the rules that judged it, alone too")
	assert.Contains(t, rep.Version, "catalogue "+rep.Catalogue)
	assert.Equal(t, 1, rep.Coverage.Graded)
	assert.Equal(t, "pass", rep.Results[0].Status)
	assert.Equal(t, "fake-clock", rep.Results[0].Mode)
	assert.Contains(t, errOut, "CONFORMANT on the specs selected (ids core/reset): 1 of 1 graded", "the table goes to stderr")
}

func TestVersionAndListFilters(t *testing.T) {
	code, out, _ := rlconform(t, "version")
	assert.Equal(t, ExitConformant, code)
	assert.Regexp(t, `^rlconform \S+\ncommit +.+\ngo +go1\.\S+\ncatalogue +[0-9a-f]{12} \(\d+ specs\)\n$`, out)
	assert.Contains(t, Version(), "catalogue ", "every report says which rules judged it")

	code, out, _ = rlconform(t, "list", "--json", "robust")
	require.Equal(t, ExitConformant, code)
	var specs []struct{ ID, Level string }
	require.NoError(t, json.Unmarshal([]byte(out), &specs))
	require.NotEmpty(t, specs)
	for _, s := range specs {
		assert.Equal(t, "robust", s.Level)
	}
	code, out, _ = rlconform(t, "list", "core/re")
	assert.Equal(t, ExitConformant, code)
	assert.Contains(t, out, "core/reset")
	assert.NotContains(t, out, "core/multi-user")
	code, _, errOut := rlconform(t, "list", "nothing/")
	assert.Equal(t, ExitCannotRun, code)
	assert.Contains(t, errOut, "no spec matches")
}

func TestRunCannotRun(t *testing.T) {
	t.Parallel() // its own servers: nothing shared
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>hello</html>"))
	}))
	defer garbage.Close()
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer hang.Close()
	refused := "http://" + testaddr.Refused(t)

	// Answers well for the first requests, then hangs for good.
	var served atomic.Int32
	lim, _ := model.NewLimiter(fakeclock.Real{}, 5, time.Minute)
	healthy := adapters.Handler(lim, nil)
	dies := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) > 20 {
			io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		}
		healthy.ServeHTTP(w, r)
	}))
	defer dies.Close()

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"dies mid-run", []string{"run", "--target", dies.URL, "--timeout", "500ms"}, "stopped answering during core/"},
		{"garbage", []string{"run", "--target", garbage.URL}, "malformed answer"},
		{"hang", []string{"run", "--target", hang.URL, "--timeout", "300ms"}, "no answer within 300ms"},
		{"refused", []string{"run", "--target", refused}, "refused"},
		{"not a URL", []string{"run", "--target", "localhost:8080"}, "not an http(s) URL"},
		{"bad level", []string{"run", "--level", "extreme"}, "unknown level"},
		{"bad flag", []string{"run", "--frobnicate"}, "flag provided but not defined"},
		{"store flags alone", []string{"run", "--target", refused, "--store-url", "redis://x"}, "go together"},
		{"no spec", []string{"run", "--id", "core/nope"}, "unknown spec id"},
		{"no command", nil, "usage"},
		{"unknown command", []string{"grade"}, "unknown command"},
		{"unknown impl", []string{"serve", "--impl", "mutant:nope"}, "unknown mutant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			code, out, errOut := rlconform(t, tt.args...)
			assert.Equal(t, ExitCannotRun, code, out)
			assert.Contains(t, errOut, tt.want)
			assert.NotContains(t, errOut, "goroutine", "no stack traces")
			assert.Less(t, time.Since(start), 10*time.Second)
		})
	}
}

func TestList(t *testing.T) {
	code, out, _ := rlconform(t, "list")
	assert.Equal(t, ExitConformant, code)
	for _, id := range []string{"core/reset", "strict/linearizable", "robust/key-hygiene"} {
		assert.Contains(t, out, id)
	}
	assert.Equal(t, len(suite.Specs()), strings.Count(out, "\n"))
}

func TestRunTellsSlowFromWrong(t *testing.T) {
	t.Parallel() // its own servers: nothing shared
	// Answers every call correctly, 150ms late.
	lim, err := model.NewLimiter(fakeclock.Real{}, 5, time.Minute)
	require.NoError(t, err)
	healthy := adapters.Handler(lim, nil)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(150 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		healthy.ServeHTTP(w, r)
	}))
	defer slow.Close()
	start := time.Now()
	code, out, errOut := rlconform(t, "run", "--target", slow.URL, "--id", "core/", "--spec-timeout", "1s")
	assert.Equal(t, ExitCannotRun, code, "slow is not wrong: %s", out)
	assert.Contains(t, out, "too slow to grade")
	assert.Contains(t, errOut, "too slow to grade")
	assert.NotContains(t, out, "NOT CONFORMANT")
	assert.Less(t, time.Since(start), 30*time.Second, "the run ends at the first spec that is too slow")

	// --max-duration bounds the whole run, with what finished reported.
	code, out, _ = rlconform(t, "run", "--target", slow.URL, "--id", "core/", "--max-duration", "2s")
	assert.Equal(t, ExitCannotRun, code, out)
	assert.Contains(t, out, "--max-duration")
}

func TestFailOnSkip(t *testing.T) {
	t.Parallel() // its own servers: nothing shared
	url := serveModel(t, false)
	args := []string{"run", "--target", url, "--id", "core/reset,strict/clock-step-back"}
	code, out, _ := rlconform(t, args...)
	assert.Equal(t, ExitConformant, code, out)
	assert.Contains(t, out, "1 skipped: 1 steps the clock back")
	code, out, errOut := rlconform(t, append(args, "--fail-on-skip")...)
	assert.Equal(t, ExitCannotRun, code, out)
	assert.Contains(t, errOut, "--fail-on-skip: 1 spec(s) were skipped for a capability")
	assert.Contains(t, errOut, "strict/clock-step-back: steps the clock back")

	// What no target over HTTP can have graded does not count: a remote
	// target that declares everything it can passes --fail-on-skip.
	code, out, errOut = rlconform(t, "run", "--target", serveModel(t, true), "--level", "robust", "--fail-on-skip",
		"--label", "needs-in-process,needs-endpoint,core")
	assert.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "skip          robust/context-cancel")
	// A selection is named, never read as the whole level.
	// Its levels that graded nothing are named apart, never claimed.
	assert.Contains(t, out, "CONFORMANT on the specs selected (labels needs-in-process, needs-endpoint, core) up to robust (nothing graded at strict, robust):")
	assert.Contains(t, out, "strict: nothing graded (0 passed, 0 failed, 2 skipped, 0 undecided)")
	assert.NotContains(t, out, "CONFORMANT at robust")
}

// --fail-fast stops at the first failure: the verdict is that failure
// (exit 1), the specs after it are not run, never passed, and the
// same run without it grades them all. An expected failure does not stop
// it.
func TestFailFastStopsAtTheFirstFailure(t *testing.T) {
	t.Parallel() // its own servers: nothing shared
	url := serveModel(t, true)
	// The sliding log graded as a fixed window: several specs fail.
	args := []string{"run", "--target", url, "--level", "strict", "--profile", "fixed-window", "--json", "-"}
	code, out, _ := rlconform(t, args...)
	require.Equal(t, ExitNotConformant, code)
	whole := statusesOf(t, out)
	require.Greater(t, len(whole["fail"]), 1, "the test needs a run with more than one failure")

	code, out, errOut := rlconform(t, append(args, "--fail-fast")...)
	assert.Equal(t, ExitNotConformant, code, errOut)
	got := statusesOf(t, out)
	require.Len(t, got["fail"], 1, "one failure, then the run stops")
	first := got["fail"][0]
	assert.Equal(t, whole["fail"][0], first)
	assert.NotEmpty(t, got["not-run"], "the specs after it are not run")
	assert.Contains(t, out, `"stopped_at": "`+first+`"`)
	assert.NotContains(t, out, `"error"`, "stopping as asked is no error")
	assert.Subset(t, whole["pass"], got["pass"], "no spec passes that the whole run did not")
	assert.Contains(t, errOut, "rlconform: --fail-fast: stopped at the first failure, "+first+"; the specs not begun were not run")
	assert.NotContains(t, errOut, "could not go on")

	// That failure, expected, does not stop it: the next one does.
	code, out, _ = rlconform(t, append(args, "--fail-fast", "--expect-fail", first)...)
	assert.Equal(t, ExitNotConformant, code)
	got = statusesOf(t, out)
	require.Len(t, got["fail"], 2, "the expected failure and the next one")
	assert.Equal(t, whole["fail"][:2], got["fail"])
}

// statusesOf reads a JSON report's results: spec ids by status, in
// catalogue order.
func statusesOf(t *testing.T, report string) map[string][]string {
	t.Helper()
	var rep struct{ Results []struct{ ID, Status string } }
	require.NoError(t, json.Unmarshal([]byte(report), &rep), report)
	out := map[string][]string{}
	for _, r := range rep.Results {
		out[r.Status] = append(out[r.Status], r.ID)
	}
	return out
}

func TestRealTimeWindowIsRaisedForSlowTargets(t *testing.T) {
	lim, err := model.NewLimiter(fakeclock.Real{}, 5, time.Minute)
	require.NoError(t, err)
	healthy := adapters.Handler(lim, nil)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(30 * time.Millisecond) // the target's own slowness, not a wait of the grader
		healthy.ServeHTTP(w, r)
	}))
	defer slow.Close()
	code, out, _ := rlconform(t, "run", "--target", slow.URL, "--id", "core/allow-within-limit")
	assert.Equal(t, ExitConformant, code, out)
	// A target that declares no granularity may take only whole seconds:
	// raised, the window is a whole number of them.
	assert.Regexp(t, `note: the real-time window was raised from 1s to \d+s:`, out)
}

// A target that declares millisecond windows, graded without clock
// control and without --realtime-window, gets windows of ten round-trip
// margins (a few tenths of a second on loopback), and the run says so;
// --realtime-window keeps the window given.
func TestRealTimeWindowIsShortenedForMillisecondWindows(t *testing.T) {
	testtier.SkipShort(t, "grades in real time")
	t.Parallel()
	lim, err := model.NewLimiter(fakeclock.Real{}, 5, time.Minute)
	require.NoError(t, err)
	srv, err := adapters.ListenWith("127.0.0.1:0", lim, nil, adapters.ServerOptions{WindowGranularity: time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	ids := "core/sliding-expiry,strict/rolling-expiry,strict/boundary-burst-first"
	code, out, errOut := rlconform(t, "run", "--target", srv.URL, "--id", ids)
	require.Contains(t, []int{ExitConformant, ExitCannotRun}, code, out) // inconclusive on a slow machine, never failed
	if !strings.Contains(out, "the real-time window is") {
		t.Skipf("the round trips here were too slow to shorten the window (ten margins over 1s):\n%s", out)
	}
	assert.Regexp(t, `the real-time window is \d+ms, not 1s: the target declares millisecond windows, and 10 margins`, out)
	assert.Contains(t, errOut, "on windows of 1s or shorter (the target declares millisecond windows")
	code, out, errOut = rlconform(t, "run", "--target", srv.URL, "--id", ids, "--realtime-window", "1s")
	require.Contains(t, []int{ExitConformant, ExitCannotRun}, code, out)
	assert.NotContains(t, out, "the real-time window is")
	assert.NotContains(t, errOut, "or shorter")
}
