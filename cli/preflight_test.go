package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/adapters/rls"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/suite"
)

// counting serves a limiter that never forgets: each key gets limit
// requests, ever, then 429. key names the client of a request; a
// constant one ignores the identity. Time plays no part, so what the
// pre-flight sees does not depend on the machine's speed.
func counting(t *testing.T, limit int, key func(*http.Request) string) string {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := key(r)
		mu.Lock()
		seen[k]++
		over := seen[k] > limit
		mu.Unlock()
		if over {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func everyone(*http.Request) string { return "everyone" }

// A service that ignores the identity makes every spec "fail": the
// pre-flight stops run, identify and bench before any of that, exit 2,
// with the reason and the flag.
func TestPreflightStopsAnIdentityThatDoesNotReachTheService(t *testing.T) {
	t.Parallel()
	for _, cmd := range [][]string{{"run", "--report-dir", t.TempDir()}, {"identify"}, {"bench", "--duration", "1s"}} {
		url := counting(t, 5, everyone) // the probe spends one: the check's fifth request is refused
		args := append(cmd, "--endpoint", url, "--identity", "header:X-User", "--policy", "5/1s")
		code, out, errOut := rlconform(t, args...)
		assert.Equal(t, ExitCannotRun, code, "%v\n%s\n%s", cmd, out, errOut)
		assert.Contains(t, errOut, "the identity does not reach the service: after 5 requests of one identity (4 admitted), a request of a fresh one was refused (--identity header:X-User)", cmd)
		assert.Contains(t, errOut, "check --identity")
		assert.NotContains(t, errOut, "grading", "%v: no spec ran", cmd)
		assert.NotContains(t, errOut, "probing", cmd)
	}
	// A limit already spent when the check begins: the first request of
	// a fresh identity is refused.
	code, _, errOut := rlconform(t, "run", "--endpoint", counting(t, 1, everyone), "--identity", "query:u", "--policy", "5/1s", "--report-dir", t.TempDir())
	assert.Equal(t, ExitCannotRun, code, errOut)
	assert.Contains(t, errOut, "the first request of a fresh identity was refused (--identity query:u)")
	// With one shared limit by design there is nothing to check.
	var said bytes.Buffer
	require.NoError(t, preflight(t.Context(), suite.Target{SharedLimit: true}, adapters.Policy{Limit: 5, Window: time.Second}, "none", "", &said))
	assert.Empty(t, said.String())
}

// The report written when the pre-flight stops the run says why.
func TestPreflightReasonIsInTheReport(t *testing.T) {
	t.Parallel()
	code, out, errOut := rlconform(t, "run", "--endpoint", counting(t, 5, everyone), "--identity", "bearer", "--policy", "5/1s", "--json", "-")
	require.Equal(t, ExitCannotRun, code, errOut)
	var rep struct{ Aborted string }
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.Contains(t, rep.Aborted, "the identity does not reach the service")
}

// The pre-flight's judgement of what it saw: it errs only when a fresh
// identity was refused; a fresh one admitted after a window is undecided,
// never an error.
func TestPreflightJudge(t *testing.T) {
	p := adapters.Policy{Limit: 5, Window: time.Second}
	for _, c := range []struct {
		name    string
		s       spent
		decided bool
		says    string
	}{
		{"honoured", spent{sent: 5, admitted: 5, fresh: true, took: 10 * time.Millisecond}, true, ""},
		{"fewer admitted, fresh admitted", spent{sent: 3, admitted: 2, fresh: true, took: 10 * time.Millisecond}, true, ""},
		{"fresh refused", spent{sent: 5, admitted: 5}, false, "after 5 requests of one identity (5 admitted), a request of a fresh one was refused (--identity header:X)"},
		{"first refused", spent{sent: 1}, false, "the first request of a fresh identity was refused"},
		{"a window passed", spent{sent: 5, admitted: 5, fresh: true, took: 2 * time.Second}, false, ""},
	} {
		decided, err := c.s.judge(p, "header:X")
		assert.Equal(t, c.decided, decided, c.name)
		if c.says == "" {
			assert.NoError(t, err, c.name)
		} else {
			assert.ErrorContains(t, err, c.says, c.name)
		}
	}
}

// jsonUser is the middleware's key of an Envoy ratelimit request body:
// the value of its first descriptor's first entry.
func jsonUser(r *http.Request) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err != nil {
		return "", err
	}
	var req struct {
		Descriptors []struct {
			Entries []struct{ Key, Value string }
		}
	}
	if err := json.Unmarshal(b, &req); err != nil || len(req.Descriptors) == 0 || len(req.Descriptors[0].Entries) == 0 {
		return "", fmt.Errorf("not a ratelimit request: %s", b)
	}
	return req.Descriptors[0].Entries[0].Value, nil
}

func writeBody(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "body.json")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	return path
}

const envoyBody = `{"domain":"rl","descriptors":[{"entries":[{"key":"user","value":"x"}]}]}`

// A service that reads the user from the JSON body, graded with
// --identity json:POINTER: the pre-flight passes and the run grades it.
func TestPreflightPassesAJSONBodyIdentity(t *testing.T) {
	testtier.SkipShort(t, "grades an endpoint in real time")
	t.Parallel()
	url := serveKeyed(t, store, fmt.Sprintf("rlc-ep-json:%d:", time.Now().UnixNano()), jsonUser, nil)
	code, out, errOut := rlconform(t, "run", "--endpoint", url, "--method", "POST", "--identity", "json:/descriptors/0/entries/0/value",
		"--body", writeBody(t, envoyBody), "--policy", "5/1s", "--id", "core/block-over-limit,core/multi-user", "--report-dir", t.TempDir())
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Regexp(t, `pre-flight: 5 request\(s\) of one identity \(5 admitted\), then a fresh one's admitted|pre-flight: undecided`, errOut)
	assert.Regexp(t, `pass\s+core/multi-user`, out)
}

// A service that reads the user from the body, graded with the user in a
// header it does not read: every request is one user's, and the
// pre-flight says so.
func TestPreflightFailsAJSONServiceGradedByHeader(t *testing.T) {
	t.Parallel()
	url := counting(t, 5, func(r *http.Request) string {
		k, err := jsonUser(r)
		if err != nil {
			return "unreadable"
		}
		return k
	})
	code, _, errOut := rlconform(t, "run", "--endpoint", url, "--method", "POST", "--identity", "header:X-User",
		"--body", writeBody(t, envoyBody), "--policy", "5/1s", "--report-dir", t.TempDir())
	assert.Equal(t, ExitCannotRun, code, errOut)
	assert.Contains(t, errOut, "the identity does not reach the service")
}

// A body identity is checked when the flags are read: exit 2 with the
// reason, for run, identify and bench, before any request.
func TestEndpointBodyIdentityRefusals(t *testing.T) {
	t.Parallel()
	var hits int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { mu.Lock(); hits++; mu.Unlock() }))
	defer srv.Close()
	good := writeBody(t, envoyBody)
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--identity", "json:/descriptors/0/entries/0/value"}, "json: needs --body"},
		{[]string{"--identity", "json:descriptors", "--body", good}, "does not start with /"},
		{[]string{"--identity", "json:/a~2", "--body", good}, "~ not followed by 0 or 1"},
		{[]string{"--identity", "json:/descriptors/0/entries/0/nope", "--body", good}, `at /descriptors/0/entries/0: the object has no member "nope"`},
		{[]string{"--identity", "json:/descriptors/0/entries", "--body", good}, "is an array, not a string"},
		{[]string{"--identity", "json:/domain", "--body", writeBody(t, "domain=rl")}, "the body is not JSON"},
		{[]string{"--identity", "form:user", "--body", writeBody(t, "a=%zz")}, "not application/x-www-form-urlencoded"},
		{[]string{"--identity", "json:/domain", "--body", filepath.Join(t.TempDir(), "missing")}, "--body: open"},
	} {
		for _, cmd := range []string{"run", "identify", "bench"} {
			args := append([]string{cmd, "--endpoint", srv.URL, "--policy", "5/1s"}, c.args...)
			code, _, errOut := rlconform(t, args...)
			assert.Equal(t, ExitCannotRun, code, "%v: %s", args, errOut)
			assert.Contains(t, errOut, c.says, args)
		}
	}
	mu.Lock()
	assert.Zero(t, hits, "refused before any request")
	mu.Unlock()
}

// An RLS server that admits again and again while saying none remained
// is in shadow mode only when the admissions come too soon for any quota
// to come back (less than W/N apart): a bucket paced at its rate answers
// so honestly, and is graded.
func TestShadowNeedsAdmissionsTooSoonForQuota(t *testing.T) {
	p := adapters.Policy{Limit: 5, Window: time.Second}
	zero := 0
	at := func(base time.Time, ms int) suite.HTTPAnswer {
		sent := base.Add(time.Duration(ms) * time.Millisecond)
		return suite.HTTPAnswer{Allowed: true, Remaining: &zero, Sent: sent, Returned: sent.Add(time.Millisecond), Form: rls.Form}
	}
	t0 := time.Now()
	for _, c := range []struct {
		name   string
		ms     []int
		shadow bool
	}{
		{"paced at the rate", []int{0, 250, 500, 750}, false},
		{"2 ms apart", []int{0, 2, 4, 6}, true},
	} {
		s := spent{rls: true, limited: true}
		for _, ms := range c.ms {
			s.saw(at(t0, ms), p)
		}
		err := s.unenforced(p, "sent: x")
		assert.Equal(t, c.shadow, err != nil, "%s: %v", c.name, err)
	}
}
