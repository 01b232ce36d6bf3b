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
	"github.com/rlconform/rlconform/mutants"
	"github.com/rlconform/rlconform/redisenv"
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
	red, err := redisenv.Obtain(context.Background())
	require.NoError(t, err)
	defer red.Close()
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
		{"bench", "--target", "http://127.0.0.1:1", "--profile", "gcra"},
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
	red, err := redisenv.Obtain(context.Background())
	require.NoError(t, err)
	defer red.Close()
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
		Main(append(short[:len(short)-1], "always", "--duration", "300ms"), &out, &errOut)
		done <- errOut.String()
	}()
	select {
	case errOut := <-done:
		assert.Contains(t, errOut, "decisions/s")
	case <-time.After(time.Minute):
		t.Fatal("rlconform bench --progress always did not end a minute after a 300ms run")
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
