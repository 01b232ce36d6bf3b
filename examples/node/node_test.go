// Package node grades the Node.js example limiter (server.js) over HTTP.
package node

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// startNode runs server.js against red and returns its URL; it fails the
// test, never skips it, when Node.js or the npm packages are missing.
func startNode(t *testing.T, red *redisenv.Redis, prefix string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "Node.js must be on PATH to grade the example")
	_, err = os.Stat("node_modules/ioredis")
	require.NoError(t, err, "run `npm ci` in examples/node first (make test does)")

	cmd := exec.Command(node, "server.js")
	cmd.Env = append(os.Environ(), "PORT=0", "REDIS_URL=redis://"+red.Addr, "PREFIX="+prefix)
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
		require.True(t, ok, "server.js exited before listening")
		url, found := strings.CutPrefix(line, "listening on ")
		require.True(t, found, "server.js said %q", line)
		return url
	case <-time.After(30 * time.Second):
		t.Fatal("server.js did not start listening within 30s")
	}
	return ""
}

func TestNodeExampleIsConformant(t *testing.T) {
	ctx := context.Background()
	red, err := redisenv.Obtain(ctx)
	require.NoError(t, err)
	defer red.Close()
	prefix := fmt.Sprintf("rlc-node:%d:", time.Now().UnixNano())
	// Two processes on one store: two instances of one limiter.
	urls := []string{startNode(t, red, prefix), startNode(t, red, prefix)}

	target, err := targets.Remote(ctx, urls, 5*time.Second)
	require.NoError(t, err)
	target.Capabilities.StoreInspection = true
	target.NeedsRedis = true // its Redis is ours: the store-outage spec may stop it
	rep, err := suite.Check(ctx, suite.Config{Redis: red, StorePrefix: prefix}, target)
	require.NoError(t, err)
	t.Log("\n" + report.String(rep))
	for _, r := range rep.Results {
		if r.Status == suite.Failed {
			t.Log(r.Message)
		}
	}
	require.NoError(t, rep.Err())
}
