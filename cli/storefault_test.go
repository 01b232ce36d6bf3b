package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/internal/freeport"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/reference"
)

// ownRedis starts a redis-server of the test's own, daemonized with a pid
// file, and returns its URL and a --store-fault command that stops,
// freezes and resumes it: examples/store-fault/redis-pidfile.sh, by a
// script that sets its environment. The server is killed when the test
// ends, frozen or not.
func ownRedis(t *testing.T) (url, fault string) {
	t.Helper()
	port, err := freeport.Loopback()
	require.NoError(t, err)
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "redis.pid")
	start := fmt.Sprintf("redis-server --port %d --bind 127.0.0.1 --save '' --appendonly no --dir %s --pidfile %s --daemonize yes --loglevel warning",
		port, dir, pidfile)
	example, err := filepath.Abs("../examples/store-fault/redis-pidfile.sh")
	require.NoError(t, err)
	script := filepath.Join(dir, "fault.sh")
	require.NoError(t, os.WriteFile(script, []byte(fmt.Sprintf("#!/bin/sh\nexport REDIS_PIDFILE=%q REDIS_START=%q REDIS_PING=%q\nexec sh %q \"$@\"\n",
		pidfile, start, fmt.Sprintf("redis-cli -p %d ping", port), example)), 0o755))
	t.Cleanup(func() {
		if raw, err := os.ReadFile(pidfile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil {
				exec.Command("kill", "-CONT", strconv.Itoa(pid)).Run()
				exec.Command("kill", "-KILL", strconv.Itoa(pid)).Run()
			}
		}
	})
	out, err := exec.Command("sh", "-c", "sh "+script+" resume").CombinedOutput() // not running: resume starts it
	require.NoError(t, err, "%s", out)
	return fmt.Sprintf("redis://127.0.0.1:%d", port), "sh " + script
}

// TestEndpointStoreFailurePolicies: the middleware serves each policy
// while its store is stopped and frozen (serve --endpoint-mode
// --store-failure P), and run --endpoint --store-fault grades it: passed
// when the policy declared is the one served, failed (exit 1) when not.
func TestEndpointStoreFailurePolicies(t *testing.T) {
	testtier.SkipShort(t, "stops and freezes a Redis of its own under a served middleware")
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("no redis-cli on PATH (the example fault script pings with it)")
	}
	t.Parallel()
	var mu sync.Mutex // one Redis each, graded one at a time: the phases are timed
	for _, tt := range []struct{ served, declared string }{
		{"error", ""}, {"allow", "allow"}, {"deny", "deny"}, {"allow", "deny"},
	} {
		t.Run(tt.served+" declared "+tt.declared, func(t *testing.T) {
			url, fault := ownRedis(t)
			base, stop := serveProcessOn(t, url, "serve", "--endpoint-mode", "--addr", "127.0.0.1:0", "--limit", "3", "--window", "2s",
				"--store-failure", tt.served, "--store-timeout", "300ms", "--prefix", fmt.Sprintf("rlc-storefail:%d:", time.Now().UnixNano()))
			defer stop()
			args := []string{"run", "--endpoint", base + "/", "--identity", "header:X-User", "--id", "robust/store-outage", "--store-fault", fault}
			if tt.declared != "" {
				args = append(args, "--store-failure", tt.declared)
			}
			mu.Lock()
			code, out, errOut := rlconform(t, args...)
			mu.Unlock()
			if tt.served == tt.declared || tt.declared == "" && tt.served == "error" {
				assert.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
				assert.Regexp(t, `pass\s+robust/store-outage`, out)
				return
			}
			assert.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)
			assert.Regexp(t, `fail\s+robust/store-outage`, out)
			assert.Contains(t, out, "the policy declared is "+tt.declared)
		})
	}
}

// TestTargetStoreFault: a protocol target whose store the run does not
// own is graded through --store-fault, against the policy its
// capabilities declare: the reference on a client that gives up within
// the store timeout passes under error (no "store_failure"), and is failed
// when it declares allow.
func TestTargetStoreFault(t *testing.T) {
	testtier.SkipShort(t, "stops and freezes a Redis of its own under a protocol server")
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("no redis-cli on PATH (the example fault script pings with it)")
	}
	t.Parallel()
	url, fault := ownRedis(t)
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout, opts.MaxRetries, opts.DialerRetries = 300*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond, -1, 1
	client := redis.NewClient(opts)
	t.Cleanup(func() { client.Close() })
	clock := fakeclock.New(time.Now())
	lim, err := reference.New(client, reference.Options{MaxRequests: 5, Window: time.Minute, Prefix: fmt.Sprintf("rlc-target-fault:%d:", time.Now().UnixNano()), Clock: clock})
	require.NoError(t, err)
	for _, declared := range []string{"", "allow"} {
		h := adapters.Handler(lim, clock)
		if declared != "" {
			h = declaring(h, declared)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		code, out, errOut := rlconform(t, "run", "--target", srv.URL, "--id", "robust/store-outage", "--store-fault", fault)
		if declared == "" {
			assert.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
			continue
		}
		assert.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)
		assert.Contains(t, out, "the policy declared is allow (fail open)")
		assert.Contains(t, out, "status 503")
	}
}

// declaring serves h, its capabilities declaring the store-failure policy
// p.
func declaring(h http.Handler, p string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != adapters.PathCapabilities {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var caps map[string]any
		json.Unmarshal(rec.Body.Bytes(), &caps)
		caps["store_failure"] = p
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(caps)
	})
}

// Store flags that do not go together are refused, saying why.
func TestStoreFlagsAreChecked(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--store-failure", "allow"}, "--store-failure goes with --endpoint"},
		{[]string{"--target", "http://127.0.0.1:1", "--store-failure", "deny"}, "--store-failure goes with --endpoint"},
		{[]string{"--endpoint", "http://127.0.0.1:1/", "--identity", "none", "--store-failure", "open"}, `store failure policy "open": want error, allow or deny`},
		{[]string{"--store-fault", "true"}, "--store-fault goes with --target or --endpoint"},
		{[]string{"--exec", "true", "--store-fault", "true"}, "with --exec the run starts the service on a Redis of its own"},
		{[]string{"--target", "http://127.0.0.1:1", "--store-timeout", "5s"}, "--store-timeout 5s: want less than --timeout 5s"},
		{[]string{"--store-timeout", "1ms"}, "--store-timeout 1ms: want 10ms to 10s"},
	} {
		code, _, errOut := rlconform(t, append([]string{"run"}, tt.args...)...)
		assert.Equal(t, ExitCannotRun, code, "%v: %s", tt.args, errOut)
		assert.Contains(t, errOut, tt.want, tt.args)
	}
	code, _, errOut := rlconform(t, "serve", "--store-failure", "allow")
	assert.Equal(t, ExitCannotRun, code)
	assert.Contains(t, errOut, "go with --endpoint-mode")

	// A policy the protocol does not know is the target's error: exit 2.
	srv := httptest.NewServer(declaring(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"clock":false,"configure":true,"remaining":true,"reset":true}`))
	}), "sometimes"))
	t.Cleanup(srv.Close)
	code, _, errOut = rlconform(t, "run", "--target", srv.URL)
	assert.Equal(t, ExitCannotRun, code, errOut)
	assert.Contains(t, errOut, `store_failure "sometimes": want "error", "allow" or "deny"`)
}
