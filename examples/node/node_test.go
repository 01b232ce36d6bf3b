// Package node grades the Node.js example limiter (server.js) over HTTP.
package node

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// store is the Redis of the examples graded without robust/store-outage
// (which stops the Redis it grades: those tests obtain their own).
var store *redisenv.Redis

func TestMain(m *testing.M) {
	// The tests grade Node.js services over HTTP, mostly in real time.
	testtier.Parallelism(4)
	if testing.Short() {
		os.Exit(m.Run()) // every test skips: no Redis needed
	}
	r, err := redisenv.Obtain(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "node tests:", err)
		os.Exit(1)
	}
	store = r
	code := m.Run()
	r.Close()
	os.Exit(code)
}

// startNode runs script against red and returns its URL; it fails the
// test, never skips it, when Node.js or the npm packages are missing. env
// adds variables (CLOCK=off).
func startNode(t *testing.T, red *redisenv.Redis, script, prefix string, env ...string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "Node.js must be on PATH to grade the example")
	_, err = os.Stat("node_modules/ioredis")
	require.NoError(t, err, "run `npm ci` in examples/node first (make test does)")

	cmd := exec.Command(node, script)
	cmd.Env = append(append(os.Environ(), "PORT=0", "REDIS_URL=redis://"+red.Addr, "PREFIX="+prefix), env...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := make(chan string)
	go func() {
		scan := bufio.NewScanner(stdout)
		for scan.Scan() {
			lines <- scan.Text()
		}
		close(lines)
	}()
	select {
	case line, ok := <-lines:
		require.True(t, ok, "%s exited before listening", script)
		url, found := strings.CutPrefix(line, "listening on ")
		require.True(t, found, "%s said %q", script, line)
		return url
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not start listening within 30s", script)
	}
	return ""
}

// TestNodeExampleIsConformant grades the sliding-window example, two
// processes on one store, with clock control and without it (in real
// time): it passes every spec it is graded on, both ways. Each way has a
// Redis of its own, which robust/store-outage stops.
func TestNodeExampleIsConformant(t *testing.T) {
	testtier.SkipShort(t, "grades the Node.js example")
	t.Parallel()
	for _, mode := range []struct {
		name string
		env  []string
	}{{"clock control", nil}, {"real time", []string{"CLOCK=off"}}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			red, err := redisenv.Obtain(ctx)
			require.NoError(t, err)
			defer red.Close()
			prefix := fmt.Sprintf("rlc-node:%d:", time.Now().UnixNano())
			urls := []string{startNode(t, red, "server.js", prefix, mode.env...), startNode(t, red, "server.js", prefix, mode.env...)}

			target, err := targets.Remote(ctx, urls, 5*time.Second)
			require.NoError(t, err)
			require.Equal(t, mode.env == nil, target.Capabilities.Clock)
			target.Capabilities.StoreInspection = true
			target.NeedsRedis = true // its Redis is ours: the store-outage spec may stop it
			rep, err := suite.Check(ctx, suite.Config{Redis: red, StorePrefix: prefix}, target)
			require.NoError(t, err)
			t.Log("\n" + report.String(rep))
			for _, r := range rep.Results {
				if r.Status == result.Failed {
					t.Log(r.Message)
				}
			}
			assert.NotEqual(t, result.NotConformant, rep.Verdict().Outcome, "a correct limiter is never failed")
			if mode.env == nil {
				require.NoError(t, rep.Err())
			}
		})
	}
}

// incrExpire is how a diagnosis names the INCR + EXPIRE pattern, at any
// window.
var incrExpire = regexp.MustCompile(`fixed window of [0-9.]+(ms|s) opened by the first request, counting denied requests`)

// TestFixedWindowExampleIsFailedAndNamed grades the INCR + EXPIRE example
// without clock control: it is failed on a boundary burst, and the failure
// names a fixed window.
func TestFixedWindowExampleIsFailedAndNamed(t *testing.T) {
	testtier.SkipShort(t, "grades the Node.js example in real time")
	t.Parallel()
	ctx := context.Background()
	url := startNode(t, store, "fixed-window.js", fmt.Sprintf("rlc-fw:%d:", time.Now().UnixNano()), "CLOCK=off")
	target, err := targets.Remote(ctx, []string{url}, 5*time.Second)
	require.NoError(t, err)
	rep, err := suite.Check(ctx, suite.Config{IDs: []string{"strict/boundary-burst-first", "strict/boundary-burst-epoch"}}, target)
	require.NoError(t, err)
	t.Log("\n" + report.String(rep))
	if rep.Count(result.Failed) == 0 && rep.Count(result.Inconclusive) > 0 {
		t.Skip("inconclusive in real time on this machine (never a pass)")
	}
	assert.Equal(t, result.NotConformant, rep.Verdict().Outcome)
	named := false
	for _, r := range rep.Results {
		if r.Status != result.Failed {
			continue
		}
		t.Log(r.Message)
		assert.Contains(t, r.Message, "fixed window", "the failure names the algorithm")
		// Of 1s, or of the window the run raised it to on a slow machine
		// (CI saw 1.6s).
		for _, e := range r.Failure.Explained {
			named = named || incrExpire.MatchString(e)
		}
	}
	assert.True(t, named, "the INCR + EXPIRE pattern is named exactly")
}

// TestIdentifyNamesTheNodeExamples: identify names the sliding-window
// example a sliding log, with clock control and without, and the INCR +
// EXPIRE example a fixed window opened by the first request, counting
// denied requests.
func TestIdentifyNamesTheNodeExamples(t *testing.T) {
	testtier.SkipShort(t, "identifies the Node.js examples")
	t.Parallel()
	for _, c := range []struct {
		script string
		env    []string
		want   string
	}{
		{"server.js", nil, "sliding-log"},
		{"server.js", []string{"CLOCK=off"}, "sliding-log"},
		{"fixed-window.js", []string{"CLOCK=off"}, "fixed-window:align=first-hit,count-denied=true,query=read"},
	} {
		t.Run(c.script+" "+strings.Join(c.env, " "), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			url := startNode(t, store, c.script, fmt.Sprintf("rlc-id:%d:", time.Now().UnixNano()), c.env...)
			target, err := targets.Remote(ctx, []string{url}, 5*time.Second)
			require.NoError(t, err)
			id, err := suite.Identify(ctx, suite.Config{}, target)
			require.NoError(t, err)
			var b strings.Builder
			report.Identification(&b, id)
			t.Log("\n" + b.String())
			require.NotEmpty(t, id.Fits, "something fits")
			assert.Equal(t, c.want, id.Fits[0].Profile, "identified first")
			for _, f := range id.Fits[1:] {
				assert.NotEqual(t, f.Profile, c.want)
			}
		})
	}
}
