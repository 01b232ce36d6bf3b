package repro

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nodeDir is cards/node, where the Node.js cards and their npm packages
// (npm ci, from its package-lock.json) live.
func nodeDir(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not installed: the Node.js cards need Node.js 20 or later (make cards-deps says how)")
	}
	dir, err := filepath.Abs("../node")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		t.Fatal("cards/node has no npm packages: make cards-deps (scripts/ensure-cards) runs npm ci there")
	}
	return dir
}

// serveNode starts the card cards/node/script with env (and PORT, the
// Redis URL and the prefix repro:) and returns its base URL once ready
// answers 200 (ready is a path; an X-User is sent, as the endpoints want).
func serveNode(t *testing.T, script, redisURL, ready string, env ...string) string {
	t.Helper()
	dir := nodeDir(t)
	cmd := exec.Command("node", filepath.Join(dir, script))
	cmd.Env = append(os.Environ(), append(env, "RLCONFORM_REDIS_URL="+redisURL, "RLCONFORM_KEY_PREFIX=repro:")...)
	return serveCard(t, script, cmd, syscall.SIGKILL, 30*time.Second, func(base string) error {
		req, err := http.NewRequest(http.MethodGet, base+ready, nil)
		if err != nil {
			return err
		}
		req.Header.Set("X-User", "repro-ready")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", ready, resp.Status)
		}
		return nil
	})
}

// runNode runs a Node.js program (src, in cards/repro/testdata) with the
// cards' npm packages and returns what it prints.
func runNode(t *testing.T, src string) string {
	t.Helper()
	dir := nodeDir(t)
	cmd := exec.Command("node", filepath.Join("testdata", src))
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", src, err, out)
	}
	return strings.TrimSpace(string(out))
}

// get sends GET base as user and returns the status and the headers.
func get(t *testing.T, base, user string) (int, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
	req.Header.Set("X-User", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}

// rate-limiter-flexible's RateLimiterMemory forgets a window longer than
// about 24.8 days at once: MemoryStorage.set deletes the record with
// setTimeout(durationMs) (lib/component/MemoryStorage/MemoryStorage.js:31-48),
// and Node runs a delay above 2^31-1 ms after 1 ms. With a limit of 1 a
// year, a second consume 20 ms after the first is allowed
// (rate-limiter-flexible-memory: strict/config-range).
func TestFlexibleMemoryForgetsLongWindows(t *testing.T) {
	out := runNode(t, "flexible_memory_year.js")
	if out != `{"first":true,"second":true}` {
		t.Errorf("node printed %s, want the second consume allowed too (the window forgotten)", out)
	}
}
