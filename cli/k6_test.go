package cli

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The outputs of two generators at once, recorded by bench/k6's tests
// (bench/k6/testdata/README.md): limit 5 per 100ms.
func k6Fixture(name string) string { return filepath.Join("..", "bench", "k6", "testdata", name) }

var k6Policy = []string{"--policy", "5/100ms"}

func TestBenchFromK6Exact(t *testing.T) {
	dir := t.TempDir()
	js, svg := filepath.Join(dir, "k6.json"), filepath.Join(dir, "k6.svg")
	// The files may follow --from-k6, and flags follow them.
	code, out, errOut := rlconform(t, append([]string{"bench", "--from-k6", k6Fixture("exact-a.json.gz"), k6Fixture("exact-b.json.gz"),
		"--json", js, "--svg", svg, "--require-exactness"}, k6Policy...)...)
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "load        k6 JSON output of 2 generators (exact-a.json.gz, exact-b.json.gz)")
	assert.Contains(t, out, "exactness   exact: no overshoot and no under-admission in 400 decisions of 3 users at the limit")
	assert.Contains(t, out, "clock skew  assumed 0s")
	assert.Contains(t, errOut, "rlconform: read 400 requests of 2 generators")
	var res map[string]any
	b, err := os.ReadFile(js)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &res))
	assert.Equal(t, "recorded", res["mode"])
	assert.Equal(t, map[string]any{"assumed_ns": 0.0, "smallest_ns": 0.0, "explained": true}, res["clock_skew"])
	chart, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(chart), "<?xml"))
}

func TestBenchFromK6Overshoot(t *testing.T) {
	code, out, errOut := rlconform(t, append([]string{"bench", "--from-k6", k6Fixture("nonatomic-a.json.gz"), "--from-k6", k6Fixture("nonatomic-b.json.gz")}, k6Policy...)...)
	require.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "OVERSHOOT: ")
	assert.Contains(t, out, "worst window: user \"alice\"")
	assert.Contains(t, out, "timeline (ms since the run's first instant; sent..answered):")
	assert.Contains(t, errOut, "the limiter is not exact under load")
}

// One generator's clock 100ms ahead: within a declared bound of 100ms
// nothing fails; with 1ms the report gives the skew that would explain
// the decisions, and exits 1.
func TestBenchFromK6ClockSkew(t *testing.T) {
	shifted := filepath.Join(t.TempDir(), "exact-b-ahead.json")
	shiftK6(t, k6Fixture("exact-b.json.gz"), shifted, 100*time.Millisecond)
	args := append([]string{"bench", "--from-k6", k6Fixture("exact-a.json.gz"), shifted}, k6Policy...)

	code, out, errOut := rlconform(t, append(args, "--clock-skew", "100ms")...)
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "clock skew  assumed 100ms: every call's interval widened by it on each side")

	code, out, errOut = rlconform(t, append(args, "--clock-skew", "1ms")...)
	require.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)
	m := regexp.MustCompile(`the smallest skew that explains every decision is (\S+):`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	smallest, err := time.ParseDuration(m[1])
	require.NoError(t, err)
	assert.Greater(t, smallest, time.Millisecond)
	assert.LessOrEqual(t, smallest, 100*time.Millisecond)
	assert.Contains(t, errOut, fmt.Sprintf("seen through generators whose clocks were off by up to %v", smallest))

	// Declared at that skew, nothing fails.
	code, out, errOut = rlconform(t, append(args, "--clock-skew", smallest.String())...)
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
}

func TestBenchFromK6Flags(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--from-k6", "x.json"}, "needs --policy"},
		{[]string{"--from-k6", "x.json", "--policy", "5/1s", "--rate", "10"}, "--rate drives load"},
		{[]string{"--from-k6", "x.json", "--policy", "5/1s", "--target", "http://x"}, "--target drives load"},
		{[]string{"--clock-skew", "5ms"}, "go with --from-k6"},
		{[]string{"--from-k6", "x.json", "--policy", "5/1s", "--clock-skew", "-1ms"}, "must not be negative"},
		// The longest time.Duration: widening by it panicked (makeslice).
		{[]string{"--from-k6", k6Fixture("exact-a.json.gz"), "--policy", "5/1s", "--clock-skew", "2562047h"}, "--clock-skew 2562047h0m0s: more than 1h0m0s"},
		{[]string{"--from-k6", k6Fixture("exact-a.json.gz"), "--policy", "5/1s", "--clock-skew", "1h0m0.001s"}, "more than 1h0m0s"},
		{[]string{"--from-k6", k6Fixture("exact-a.json.gz"), "--policy", "5/213504d"}, "more than 36500d"},
		{[]string{"--from-k6", k6Fixture("exact-a.json.gz"), "--policy", "5/1s", "--limited-status", "200"}, "--limited-status 200: want a status from 300 to 599"},
		{[]string{"--from-k6", "no-such-file.json", "--policy", "5/1s"}, "no-such-file.json"},
		{[]string{"--from-k6", k6Fixture("exact-a.json.gz"), "--policy", "5/1s", "--user-tag", "who"}, `carries the tag "who"`},
	} {
		code, out, errOut := rlconform(t, append([]string{"bench"}, c.args...)...)
		assert.Equal(t, ExitCannotRun, code, "%v\n%s\n%s", c.args, out, errOut)
		assert.Contains(t, errOut, c.says, "%v", c.args)
	}
}

// shiftK6 writes the k6 output in to out with every timestamp moved by
// d: the output of a generator whose clock was d ahead.
func shiftK6(t *testing.T, in, out string, d time.Duration) {
	t.Helper()
	f, err := os.Open(in)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	b, err := io.ReadAll(gz)
	require.NoError(t, err)
	field := regexp.MustCompile(`"time":"([^"]+)"`)
	b = field.ReplaceAllFunc(b, func(m []byte) []byte {
		at, err := time.Parse(time.RFC3339Nano, string(field.FindSubmatch(m)[1]))
		require.NoError(t, err)
		return fmt.Appendf(nil, `"time":%q`, at.Add(d).Format(time.RFC3339Nano))
	})
	require.NoError(t, os.WriteFile(out, b, 0o644))
}
