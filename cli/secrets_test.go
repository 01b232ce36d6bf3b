package cli

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/internal/testaddr"
	"github.com/rlconform/rlconform/middleware"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/reference"
)

// runShowing runs the command with a JSON, a JUnit, a Markdown and an
// HTML report and returns its exit code and everything it showed: stdout,
// stderr and the four reports.
func runShowing(t *testing.T, args ...string) (int, string) {
	t.Helper()
	dir := t.TempDir()
	files := []string{filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml"), filepath.Join(dir, "r.md"), filepath.Join(dir, "r.html")}
	code, out, errOut := rlconform(t, append(args, "--json", files[0], "--junit", files[1], "--summary", files[2], "--html", files[3], "--report-dir", dir)...)
	shown := "stdout:\n" + out + "\nstderr:\n" + errOut
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if strings.Contains(errOut, "invalid value") && os.IsNotExist(err) {
			continue // flags refused: no report was opened
		}
		require.NoError(t, err, "%s is written on every exit\n%s", f, shown)
		shown += "\n" + f + ":\n" + string(raw)
	}
	return code, shown
}

// noSecret asserts that nothing shown holds any of the secrets the tests
// give (each has SECRET in it; what replaces them is REDACTED).
func noSecret(t *testing.T, shown string) {
	t.Helper()
	if i := strings.Index(shown, "SECRET"); i >= 0 {
		t.Errorf("a secret is shown at %q\n%s", shown[max(0, i-80):min(len(shown), i+40)], shown)
	}
}

// echoKeys is a service that answers 401 with everything it was sent, as
// a careless service does: the grader's error then quotes its body.
func echoKeys(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, fmt.Sprintf("invalid key in %s, %s", r.URL.RawQuery, r.Header.Get("Authorization")), http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A query secret, a password, a --header value and a token are shown in
// no line printed, no error and no report, whether the run grades, cannot
// reach the target, is answered with the secret echoed, or is refused
// its flags.
func TestSecretsAreNeverShown(t *testing.T) {
	t.Parallel()
	refused := testaddr.Refused(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("SECRET-TOKEN-3\n"), 0o600))
	header := []string{"--header", "Authorization: Bearer SECRET2"}
	endpoint := []string{"run", "--identity", "header:X-User", "--policy", "5/1s"}
	for _, tt := range []struct {
		name string
		args []string
		code int
	}{
		{"unreachable endpoint", append(append(endpoint, header...), "--endpoint", "http://"+refused+"/x?api_key=SECRETVALUE&user=ok"), ExitCannotRun},
		{"unreachable target", []string{"run", "--target", "http://u:SECRETPASS@" + refused + "/?token=SECRETVALUE", "--target-token-file", tokenFile}, ExitCannotRun},
		{"echoing endpoint", append(append(endpoint, header...), "--endpoint", echoKeys(t)+"/x?api_key=SECRETVALUE&user=ok"), ExitCannotRun},
		{"echoing target", []string{"run", "--target", echoKeys(t) + "/?access_token=SECRETVALUE", "--target-token-file", tokenFile}, ExitCannotRun},
		{"refused header", append(endpoint, "--endpoint", "http://"+refused, "--header", "Bearer SECRET2"), ExitCannotRun},
		{"target that is no URL", []string{"run", "--target", "ftp://u:SECRETPASS@h/?key=SECRETVALUE"}, ExitCannotRun},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, shown := runShowing(t, tt.args...)
			assert.Equal(t, tt.code, code, shown)
			noSecret(t, shown)
		})
	}
}

// A run of a service with a key in its query and an Authorization header
// sends both, grades it, and shows neither; the report says where to put
// the key back to run it again.
func TestSecretsOfAGradedEndpointAreNeverShown(t *testing.T) {
	t.Parallel()
	lim, err := reference.New(store.Client, reference.Options{MaxRequests: 5, Window: time.Second, Prefix: fmt.Sprintf("rlc-secrets:%d:", time.Now().UnixNano())})
	require.NoError(t, err)
	var mu sync.Mutex
	var keys, auths []string
	api := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	h := middleware.New(middleware.Reference(lim), middleware.Options{Key: middleware.Header("X-User")})(api)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys, auths = append(keys, r.URL.Query().Get("api_key")), append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	code, shown := runShowing(t, "run", "--endpoint", srv.URL+"/x?api_key=SECRETVALUE&user=ok", "--identity", "header:X-User",
		"--header", "Authorization: Bearer SECRET2", "--id", "core/allow-within-limit")
	require.Equal(t, ExitConformant, code, shown)
	noSecret(t, shown)
	assert.Contains(t, shown, "/x?api_key=REDACTED&user=ok")
	assert.Contains(t, shown, "the value of api_key): to run this again, put each back in place of REDACTED")
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, keys)
	for i := range keys {
		assert.Equal(t, "SECRETVALUE", keys[i], "the key is sent")
		assert.Equal(t, "Bearer SECRET2", auths[i], "the header is sent")
	}
}

// A protocol server that asks for a token, its address holding a key in
// its query, is graded with the token of --target-token-file, and neither
// is shown.
func TestSecretsOfAGradedTargetAreNeverShown(t *testing.T) {
	t.Parallel()
	clock := fakeclock.New(time.Now())
	lim, err := model.NewLimiter(clock, 5, time.Minute)
	require.NoError(t, err)
	srv, err := adapters.ListenWith("127.0.0.1:0", lim, clock, adapters.ServerOptions{Token: "SECRET-TOKEN-3"})
	require.NoError(t, err)
	defer srv.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("SECRET-TOKEN-3\n"), 0o600))
	target := srv.URL + "/?token=SECRETVALUE"
	code, shown := runShowing(t, "run", "--target", target, "--target-token-file", tokenFile, "--id", "core/allow-within-limit")
	require.Equal(t, ExitConformant, code, shown)
	noSecret(t, shown)
	assert.Contains(t, shown, "the value of token")

	code, shown = runShowing(t, "run", "--target", target, "--id", "core/allow-within-limit")
	assert.Equal(t, ExitCannotRun, code, "without the token: 401\n%s", shown)
	assert.Contains(t, shown, "status 401")
	noSecret(t, shown)
}

// Token files: one line of visible ASCII, a trailing newline dropped, at
// most 4096 bytes, not empty; the flag goes with --target alone.
func TestTokenFilesAreChecked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	for _, tt := range []struct{ file, want string }{
		{write("empty", "\n"), "is empty"},
		{write("big", strings.Repeat("x", 5000)), "over 4096 bytes"},
		{write("space", "SECRET tok\n"), "holds a space"},
		{write("lines", "SECRETtok\nmore\n"), "more than one line"},
		{filepath.Join(dir, "missing"), "no such file"},
	} {
		code, shown := runShowing(t, "run", "--target", "http://"+testaddr.Refused(t), "--target-token-file", tt.file)
		assert.Equal(t, ExitCannotRun, code, shown)
		assert.Contains(t, shown, tt.want)
		noSecret(t, shown)
		code, _, errOut := rlconform(t, "serve", "--token-file", tt.file)
		assert.Equal(t, ExitCannotRun, code, errOut)
		assert.Contains(t, errOut, tt.want)
	}
	code, _, errOut := rlconform(t, "run", "--target-token-file", write("ok", "tok\n"))
	assert.Equal(t, ExitCannotRun, code)
	assert.Contains(t, errOut, "--target-token-file goes with --target")
}

// serve refuses to listen beyond loopback without a token, saying why and
// how.
func TestServeOffLoopbackNeedsAToken(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "example.com:0"} {
		for _, mode := range [][]string{nil, {"--endpoint-mode"}} {
			code, out, errOut := rlconform(t, append([]string{"serve", "--addr", addr}, mode...)...)
			assert.Equal(t, ExitCannotRun, code, "%s %v: %s%s", addr, mode, out, errOut)
			assert.Contains(t, errOut, "listens beyond this machine", addr)
			assert.Contains(t, errOut, "--token-file FILE", addr)
		}
	}
	for addr, want := range map[string]bool{"127.0.0.1:8080": true, "127.1.2.3:1": true, "[::1]:80": true, "localhost:80": true,
		":8080": false, "0.0.0.0:80": false, "[::]:80": false, "10.0.0.1:80": false, "host:80": false, "8080": false} {
		assert.Equal(t, want, loopback(addr), addr)
	}
}

// serve on every interface with a token answers 401 to a request without
// it, in both modes, and serves one with it.
func TestServeWithATokenAsksEveryRequestForIt(t *testing.T) {
	t.Parallel()
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("SECRET-TOKEN-3\n"), 0o600))
	for _, tt := range []struct {
		mode []string
		req  func(base string) *http.Request
	}{
		{nil, func(base string) *http.Request {
			r, _ := http.NewRequest(http.MethodPost, base+adapters.PathAllow, strings.NewReader(`{"user_id":"u"}`))
			r.Header.Set("Content-Type", "application/json")
			return r
		}},
		{[]string{"--endpoint-mode"}, func(base string) *http.Request {
			r, _ := http.NewRequest(http.MethodGet, base+"/", nil)
			r.Header.Set("X-User", "u")
			return r
		}},
	} {
		base, stop := serveProcess(t, append([]string{"serve", "--impl", "reference", "--addr", "0.0.0.0:0", "--token-file", tokenFile,
			"--prefix", fmt.Sprintf("rlc-serve-token:%d:", time.Now().UnixNano())}, tt.mode...)...)
		for auth, want := range map[string]int{"": 401, "Bearer wrong": 401, "Bearer SECRET-TOKEN-3": 200} {
			r := tt.req(base)
			if auth != "" {
				r.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(r)
			require.NoError(t, err)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			assert.Equal(t, want, resp.StatusCode, "%v %q", tt.mode, auth)
		}
		noSecret(t, stop())
	}
}

var servingAt = regexp.MustCompile(`at http://[^ ]*:(\d+)/?`)

// serveProcess starts this test binary as rlconform with args (a serve
// command), on the tests' Redis, and returns the loopback URL it serves
// at and a func that stops it and returns all it printed.
func serveProcess(t *testing.T, args ...string) (string, func() string) {
	t.Helper()
	return serveProcessOn(t, store.URL, args...)
}

// serveProcessOn is serveProcess on the Redis at redisURL.
func serveProcessOn(t *testing.T, redisURL string, args ...string) (string, func() string) {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), asCommand+"=1", "REDIS_URL="+redisURL)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var errOut strings.Builder
	cmd.Stderr = &errOut
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	m := servingAt.FindStringSubmatch(line)
	if err != nil || m == nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("serve did not say where it serves: %q, %v\n%s", line, err, errOut.String())
	}
	stop := func() string {
		cmd.Process.Signal(syscall.SIGINT)
		rest, _ := io.ReadAll(stdout)
		cmd.Wait()
		return line + string(rest) + errOut.String()
	}
	return "http://127.0.0.1:" + m[1], stop
}

// The demo API's server bounds what a client can make it hold.
func TestDemoServerIsBounded(t *testing.T) {
	srv := demoServer(http.NotFoundHandler(), nil)
	assert.Positive(t, srv.ReadHeaderTimeout)
	assert.Positive(t, srv.ReadTimeout)
	assert.Positive(t, srv.WriteTimeout)
	assert.Positive(t, srv.IdleTimeout)
	assert.Positive(t, srv.MaxHeaderBytes)
}
