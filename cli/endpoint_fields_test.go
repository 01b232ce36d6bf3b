package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/middleware"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/reference"
)

// envoyStatus is one descriptor's status in Envoy's ratelimit /json
// answer, as protojson writes it: a zero limitRemaining left out.
type envoyStatus struct {
	Code         string `json:"code"`
	CurrentLimit struct {
		RequestsPerUnit int    `json:"requestsPerUnit"`
		Unit            string `json:"unit"`
	} `json:"currentLimit"`
	LimitRemaining     int    `json:"limitRemaining,omitempty"`
	DurationUntilReset string `json:"durationUntilReset"`
}

// serveEnvoy serves an Envoy-shaped ratelimit /json endpoint over the
// reference limiter (5 per second, on Redis TIME): the user is the first
// descriptor entry's value of the request body, the decision the status
// (200 or 429), and the state in the answer's body only (no header);
// lie, when set, rewrites the status before it is sent.
func serveEnvoy(t *testing.T, red *redisenv.Redis, lie func(*envoyStatus)) string {
	t.Helper()
	lim, err := reference.New(red.Client, reference.Options{MaxRequests: 5, Window: time.Second, Prefix: fmt.Sprintf("rlc-envoy:%d:", time.Now().UnixNano())})
	require.NoError(t, err)
	decide := middleware.Reference(lim)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Descriptors []struct {
				Entries []struct{ Value string } `json:"entries"`
			} `json:"descriptors"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Descriptors) == 0 || len(req.Descriptors[0].Entries) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		d, err := decide(r.Context(), req.Descriptors[0].Entries[0].Value)
		if err != nil {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		reset := d.Reset
		if !d.Allowed || d.Remaining == 0 {
			reset = max(reset, d.RetryAfter)
		}
		st := envoyStatus{Code: "OK", LimitRemaining: d.Remaining, DurationUntilReset: fmt.Sprintf("%ds", (reset+time.Second-1)/time.Second)}
		st.CurrentLimit.RequestsPerUnit, st.CurrentLimit.Unit = d.Limit, "SECOND"
		if !d.Allowed {
			st.Code = "OVER_LIMIT"
		}
		if lie != nil {
			lie(&st)
		}
		w.Header().Set("Content-Type", "application/json")
		if !d.Allowed {
			w.WriteHeader(http.StatusTooManyRequests)
		}
		json.NewEncoder(w).Encode(map[string]any{"overallCode": st.Code, "statuses": []envoyStatus{st}}) //nolint:errcheck // the client sees
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// envoyRun grades an Envoy-shaped endpoint with its fields read from the
// body, the user in the request body as Envoy reads it.
func envoyRun(t *testing.T, url string, extra ...string) (int, string, string) {
	t.Helper()
	body := filepath.Join(t.TempDir(), "ratelimit.json")
	require.NoError(t, os.WriteFile(body, []byte(`{"domain":"rl","descriptors":[{"entries":[{"key":"user","value":"x"}]}]}`), 0o600))
	args := []string{"run", "--endpoint", url, "--body", body, "--identity", "json:/descriptors/0/entries/0/value",
		"--fields", "json:/statuses/0/limitRemaining,/statuses/0/durationUntilReset,/statuses/0/currentLimit",
		"--report-dir", t.TempDir(), "--id", "http/ratelimit-fields"}
	return rlconform(t, append(args, extra...)...)
}

// A service that reports its state in its JSON body as Envoy's ratelimit
// does is graded by http/ratelimit-fields: its policy read from
// currentLimit, a truthful one passes (its refusals' left-out
// limitRemaining read as 0, and the reset obeyed), and lies fail, named.
func TestEndpointGradesEnvoyJSONFields(t *testing.T) {
	testtier.SkipShort(t, "grades an endpoint in real time")
	t.Parallel()
	red := store
	t.Run("truthful", func(t *testing.T) {
		t.Parallel()
		code, out, errOut := envoyRun(t, serveEnvoy(t, red, nil))
		require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
		assert.Contains(t, errOut, "policy 5/1s (from the LIMIT member /statuses/0/currentLimit of its first answer's body)")
		assert.Contains(t, errOut, "fields from json:/statuses/0/limitRemaining,")
		assert.Regexp(t, `pass\s+http/ratelimit-fields.*; t obeyed after [1-9]\d* answers with no quota left`, out)
	})
	for _, c := range []struct {
		name string
		lie  func(*envoyStatus)
		says string
	}{
		{"remaining off by one", func(s *envoyStatus) { s.LimitRemaining++ }, "the json fields say 5 left"},
		{"reset too short", func(s *envoyStatus) {
			if s.LimitRemaining == 0 {
				s.DurationUntilReset = "0s"
			}
		}, "a client that waits t is refused again"},
		{"limit says a minute", func(s *envoyStatus) { s.CurrentLimit.Unit = "MINUTE" }, "the json limit says a window of 1m0s"},
		{"reset not a duration", func(s *envoyStatus) { s.DurationUntilReset = "soon" }, `malformed: json reset /statuses/0/durationUntilReset "\"soon\"": a string that is not a protobuf JSON Duration`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := envoyRun(t, serveEnvoy(t, red, c.lie), "--policy", "5/1s")
			assert.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)
			assert.Contains(t, out, c.says)
		})
	}
}

// --fields is checked when the flags are read: exit 2 with the reason,
// before any request.
func TestEndpointFieldsFlagRefusals(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--fields", "json:/r"}, "--fields: fields \"json:/r\": want json:REMAINING,RESET[,LIMIT], two or three JSON Pointers, not 1"},
		{[]string{"--fields", "json:r,/t"}, `REMAINING: JSON Pointer "r" does not start with /`},
		{[]string{"--fields", "json:/r,/t~2"}, "RESET: JSON Pointer"},
		{[]string{"--fields", "xml:/r,/t"}, "want headers, or json:REMAINING,RESET[,LIMIT]"},
	} {
		args := append([]string{"run", "--endpoint", srv.URL, "--identity", "header:X-User", "--policy", "5/1s"}, c.args...)
		code, _, errOut := rlconform(t, args...)
		assert.Equal(t, ExitCannotRun, code, "%v: %s", c.args, errOut)
		assert.Contains(t, errOut, c.says, "%v", c.args)
	}
	code, _, errOut := rlconform(t, "run", "--fields", "json:/r,/t")
	assert.Equal(t, ExitCannotRun, code)
	assert.Contains(t, errOut, "--fields and --max-rps go with --endpoint")
	assert.Zero(t, hits.Load(), "refused before any request")
}
