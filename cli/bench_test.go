package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/mutants"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/reference"
)

// short is a bench short and heavy enough that every user is at the limit
// (above 100 decisions/s).
var short = []string{"bench", "--duration", "700ms", "--users", "4", "--limit", "5", "--window", "200ms", "--progress", "never"}

func TestBenchTheReferenceWritesJSONAndAChart(t *testing.T) {
	dir := t.TempDir()
	js, svg := filepath.Join(dir, "b.json"), filepath.Join(dir, "b.svg")
	code, out, errOut := rlconform(t, append(short, "--json", js, "--svg", svg)...)
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	for _, want := range []string{"target      reference", "closed loop, 16 callers for 700ms; 4 users, uniform; limit 5 per 200ms",
		"throughput", "p99.9", "errors      none", "exactness   exact: no overshoot and no under-admission"} {
		assert.Contains(t, out, want)
	}
	var res map[string]any
	b, err := os.ReadFile(js)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &res))
	assert.Equal(t, "closed-loop", res["mode"])
	assert.Positive(t, res["throughput"])
	chart, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(chart), "<?xml"))

	// Against itself, nothing regressed; against a baseline twice as fast,
	// the gate closes with exit 3.
	code, out, errOut = rlconform(t, append(short, "--compare", js, "--max-regression", "1000")...)
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "compared    with "+js)
	res["throughput"] = res["throughput"].(float64) * 100
	fast := filepath.Join(dir, "fast.json")
	b, err = json.Marshal(res)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(fast, b, 0o644))
	code, out, errOut = rlconform(t, append(short, "--compare", fast, "--max-regression", "50")...)
	require.Equal(t, ExitRegressed, code, "%s\n%s", out, errOut)
	assert.Contains(t, errOut, "throughput fell")
}

// Two instances of a limiter over protocol v1, deciding on their own clock,
// are benched as one: the check judges them together.
func TestBenchRemoteInstances(t *testing.T) {
	urls := serveModelInstances(t, false, 2)
	code, out, errOut := rlconform(t, append(short, "--target", urls[0], "--target", urls[1], "--concurrency", "4")...)
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "exactness   exact")

	// A target stamped with our clock is measured, not judged.
	code, out, errOut = rlconform(t, append(short, "--target", serveModel(t, true), "--concurrency", "4")...)
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "exactness   not checked: the target takes \"now\" from each request's clock header")
}

// A service behind the middleware is benched by its answers, its limit
// read from its RateLimit-Policy field.
func TestBenchAnEndpoint(t *testing.T) {
	red := store
	api := serveAPI(t, red, fmt.Sprintf("rlc-bench-ep:%d:", time.Now().UnixNano()), nil)
	code, out, errOut := rlconform(t, "bench", "--endpoint", api, "--identity", "header:X-User", "--duration", "1500ms",
		"--users", "3", "--concurrency", "4", "--progress", "never")
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "limit 5 per 1s")
	assert.Contains(t, out, "exactness   exact")
}

func TestBenchCannotRun(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"bench", "--zipf", "0.5"},
		{"bench", "--users", "0"},
		{"bench", "--max-regression", "5"},
		{"bench", "--compare", filepath.Join(dir, "missing.json")},
		{"bench", "--endpoint", "http://127.0.0.1:1", "--identity", "none", "--limit", "5"},
		{"bench", "--target", "http://127.0.0.1:1", "--profile", "gcra:burst=0"},
		{"bench", "--progress", "sometimes"},
		{"bench", "--rate", "fast"},
		{"bench", "--rate", "-5/s"},
		{"bench", "--profile", "nonsense"},
		{"bench", "extra"},
	} {
		code, _, errOut := rlconform(t, args...)
		assert.Equal(t, ExitCannotRun, code, "%v: %s", args, errOut)
		assert.NotEmpty(t, errOut, "%v", args)
	}
	// A target that does not answer is a fault, never a verdict.
	code, _, errOut := rlconform(t, "bench", "--target", "http://127.0.0.1:1", "--timeout", "500ms", "--progress", "never")
	assert.Equal(t, ExitCannotRun, code, errOut)
}

// A limiter that counts and adds in two round trips, served on its own
// clock, overshoots under load: exit 1, with the worst window.
func TestBenchFailsALimiterThatOvershootsUnderLoad(t *testing.T) {
	red := store
	code, out, errOut := 0, "", ""
	for attempt := 0; attempt < 5 && code != ExitNotConformant; attempt++ {
		lim, err := mutants.NonAtomic(mutants.Store{Redis: red.Client, Prefix: fmt.Sprintf("rlc-bench-na:%d:", time.Now().UnixNano()),
			MaxRequests: 5, Window: 200 * time.Millisecond})
		require.NoError(t, err)
		srv, err := adapters.NewServer(lim, nil)
		require.NoError(t, err)
		code, out, errOut = rlconform(t, append(short, "--target", srv.URL, "--users", "1")...)
		srv.Close()
	}
	require.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "OVERSHOOT")
	assert.Contains(t, out, "worst window")
	assert.Contains(t, errOut, "the limiter is not exact under load")
}

// The progress line ends with the run, whenever its last update came.
func TestBenchProgressLineEnds(t *testing.T) {
	done := make(chan string, 1)
	go func() {
		var out, errOut strings.Builder
		// Shorter than a progress snapshot's interval (250ms): the line
		// ends on the run's result, never on "starting".
		Main(append(short[:len(short)-1], "always", "--duration", "100ms"), &out, &errOut)
		done <- errOut.String()
	}()
	select {
	case errOut := <-done:
		assert.Contains(t, errOut, "decisions/s")
	case <-time.After(time.Minute):
		t.Fatal("rlconform bench --progress always did not end a minute after a 100ms run")
	}
}

// A report that cannot be written fails before the load, not after it.
func TestBenchChecksReportPathsFirst(t *testing.T) {
	began := time.Now()
	code, _, errOut := rlconform(t, "bench", "--duration", "1m", "--json", filepath.Join(t.TempDir(), "missing", "b.json"))
	assert.Equal(t, ExitCannotRun, code)
	assert.Contains(t, errOut, "--json")
	assert.Less(t, time.Since(began), 30*time.Second)
}

// serve --impl model is the sliding log's model, as its help says (it was
// read as a profile named "model").
func TestServeBuildsEveryImplTheHelpNames(t *testing.T) {
	for _, impl := range []string{"model", "model:gcra:burst=3"} {
		lim, red, err := build(context.Background(), impl, nil, "rlc-serve-test:", 5, time.Second)
		require.NoError(t, err, impl)
		require.Nil(t, red)
		ok, err := lim.AllowRequest(context.Background(), "u")
		require.NoError(t, err)
		assert.True(t, ok)
	}
}

// serve --impl reference-compact is the compact log: a LIST per user.
func TestServeBuildsTheCompactLog(t *testing.T) {
	ctx := context.Background()
	prefix := fmt.Sprintf("rlc-serve-compact:%d:", time.Now().UnixNano())
	lim, red, err := build(ctx, "reference-compact", nil, prefix, 5, time.Second)
	require.NoError(t, err)
	require.NotNil(t, red)
	defer red.Close()
	ok, err := lim.AllowRequest(ctx, "u")
	require.NoError(t, err)
	assert.True(t, ok)
	typ, err := red.Client.Type(ctx, prefix+"{u}").Result()
	require.NoError(t, err)
	assert.Equal(t, "list", typ)
}

// serveReferenceProfile serves the reference implementation of spec on Redis,
// deciding on Redis's clock (no clock control: rlconform serve
// --impl reference:SPEC -clock=false); extra, when positive, is added to
// every limit it is configured with (a limiter that admits more than its
// profile).
func serveReferenceProfile(t *testing.T, red *redisenv.Redis, spec string, extra int) string {
	t.Helper()
	lim, err := reference.NewProfile(red.Client, model.MustVariant(spec), reference.Options{MaxRequests: 5, Window: time.Second,
		Prefix: fmt.Sprintf("rlc-bench-profile:%d:", time.Now().UnixNano())})
	require.NoError(t, err)
	srv, err := adapters.NewServer(raised{lim, extra}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	return srv.URL
}

// raised adds extra to the limit it is configured with.
type raised struct {
	contract.RateLimiterContract
	extra int
}

func (r raised) Configure(ctx context.Context, n int, w time.Duration) error {
	return r.RateLimiterContract.Configure(ctx, n+r.extra, w)
}

// paced is a load that spreads each user's allowed requests over the
// window (an open loop of 50 requests a second per user, 10 per window of
// 200ms against a limit of 5), so that a fixed window's admissions on
// either side of an edge fall within less than one window.
var paced = []string{"bench", "--duration", "1500ms", "--rate", "200", "--users", "4", "--limit", "5", "--window", "200ms", "--progress", "never"}

// A fixed window of the epoch, on its own clock, is exact judged as one
// (and the gate that requires exactness passes), and overshoots judged as
// the sliding log it is not; one that admits N+1 in a window is caught.
func TestBenchJudgesTheProfileATargetClaims(t *testing.T) {
	red := store
	url := serveReferenceProfile(t, red, "fixed-window", 0)

	code, out, errOut := rlconform(t, append(paced, "--target", url, "--profile", "fixed-window", "--require-exactness")...)
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "profile     fixed-window:align=epoch,count-denied=false,query=read: the decisions are judged by its rules")
	assert.Contains(t, out, "exactness   exact: no overshoot and no under-admission in")
	assert.Contains(t, out, "judged as fixed-window:align=epoch,count-denied=false,query=read")
	assert.NotContains(t, errOut, "--require-exactness")

	code, out, errOut = 0, "", ""
	for attempt := 0; attempt < 3 && code != ExitNotConformant; attempt++ {
		code, out, errOut = rlconform(t, append(paced, "--target", url)...)
	}
	require.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "OVERSHOOT")
	assert.Contains(t, out, "judged as sliding-log")

	code, out, errOut = rlconform(t, append(paced, "--target", serveReferenceProfile(t, red, "fixed-window", 1), "--profile", "fixed-window")...)
	require.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "OVERSHOOT")
	assert.Contains(t, out, "where the profile admits at most 5 whatever their instants")
	assert.Contains(t, out, "the bound: at most 5 allowed in each window [kW, (k+1)W) of the epoch: 6 in the 1 window(s)")
}

// A gate that checked nothing fails: --require-exactness exits 2 with the
// reason when the target is stamped with our clock, or when no user was
// ever denied.
func TestBenchRequireExactness(t *testing.T) {
	code, out, errOut := rlconform(t, append(short, "--target", serveModel(t, true), "--concurrency", "4", "--require-exactness")...)
	require.Equal(t, ExitCannotRun, code, "%s\n%s", out, errOut)
	assert.Contains(t, errOut, "rlconform: --require-exactness: exactness was not checked: the target takes \"now\" from each request's clock header")

	code, out, errOut = rlconform(t, "bench", "--duration", "300ms", "--limit", "1000000", "--progress", "never", "--require-exactness")
	require.Equal(t, ExitCannotRun, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "NOT EXERCISED")
	assert.Contains(t, errOut, "rlconform: --require-exactness: exactness was not exercised: no user was ever denied")

	// Without the flag, the same runs measure and exit 0.
	code, out, errOut = rlconform(t, "bench", "--duration", "300ms", "--limit", "1000000", "--progress", "never")
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
}

// The built-in limiter of a profile is judged by that profile's rules.
func TestBenchABuiltInProfileIsJudgedByItsRules(t *testing.T) {
	code, out, errOut := rlconform(t, append(short, "--profile", "gcra:burst=3", "--require-exactness")...)
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "target      reference:gcra:burst=3")
	assert.Contains(t, out, "judged as gcra:burst=3")
}
