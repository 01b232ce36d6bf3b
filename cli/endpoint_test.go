package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/middleware"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/reference"
)

// serveAPI serves an API behind the middleware over the reference limiter
// (5 per second, on Redis TIME), under prefix; lie, when set, rewrites
// every answer's headers before they are sent.
func serveAPI(t *testing.T, red *redisenv.Redis, prefix string, lie func(http.Header)) string {
	t.Helper()
	return serveKeyed(t, red, prefix, middleware.Header("X-User"), lie)
}

// serveKeyed is serveAPI with clients keyed by key.
func serveKeyed(t *testing.T, red *redisenv.Redis, prefix string, key func(*http.Request) (string, error), lie func(http.Header)) string {
	t.Helper()
	return serveOver(t, reference.New, red, prefix, key, lie)
}

// serveOver is serveKeyed over the limiter newLimiter makes
// (reference.New or reference.NewCompact).
func serveOver(t *testing.T, newLimiter func(redis.UniversalClient, reference.Options) (*reference.Limiter, error),
	red *redisenv.Redis, prefix string, key func(*http.Request) (string, error), lie func(http.Header)) string {
	t.Helper()
	lim, err := newLimiter(red.Client, reference.Options{MaxRequests: 5, Window: time.Second, Prefix: prefix})
	require.NoError(t, err)
	api := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	h := middleware.New(middleware.Reference(lim), middleware.Options{Key: key})(api)
	if lie != nil {
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inner.ServeHTTP(liar{w, lie, false}, r)
		})
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// liar rewrites the headers of an answer before it is written.
type liar struct {
	http.ResponseWriter
	lie  func(http.Header)
	done bool
}

func (l liar) WriteHeader(code int) {
	l.lie(l.Header())
	l.ResponseWriter.WriteHeader(code)
}

func (l liar) Write(b []byte) (int, error) { return l.ResponseWriter.Write(b) }

func endpointRun(t *testing.T, urls []string, extra ...string) (int, string, string) {
	t.Helper()
	args := []string{"run", "--identity", "header:X-User", "--report-dir", t.TempDir()}
	for _, u := range urls {
		args = append(args, "--endpoint", u)
	}
	return rlconform(t, append(args, extra...)...)
}

// A service behind the middleware passes every spec that grades an
// endpoint, its policy read from its own RateLimit-Policy field; two
// replicas on one store share one limit.
func TestEndpointModeGradesAServiceBehindTheMiddleware(t *testing.T) {
	testtier.SkipShort(t, "grades an endpoint in real time")
	t.Parallel()
	red := store
	prefix := fmt.Sprintf("rlc-ep:%d:", time.Now().UnixNano())
	a, b := serveAPI(t, red, prefix, nil), serveAPI(t, red, prefix, nil)
	code, out, errOut := endpointRun(t, []string{a, b}, "--level", "strict")
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, errOut, "policy 5/1s (from the RateLimit-Policy field of its first answer)")
	for _, id := range []string{"http/retry-after", "http/ratelimit-fields", "strict/shared-store", "strict/boundary-burst-first"} {
		assert.Regexp(t, `pass\s+`+id, out)
	}
	assert.Regexp(t, `pass\s+http/retry-after.* 13 phases: 11 spread over the window's phases in 3 windows, one every 91ms from a random offset, 1 just after an epoch-aligned window edge, 1 late in a window its user's first request opened; Retry-After obeyed after 13 refusals`, out)
}

// The compact log (reference.NewCompact) behind the middleware passes every
// spec that grades an endpoint too, two replicas sharing one limit.
func TestEndpointModeGradesTheCompactLogBehindTheMiddleware(t *testing.T) {
	testtier.SkipShort(t, "grades an endpoint in real time")
	t.Parallel()
	red := store
	prefix := fmt.Sprintf("rlc-ep-compact:%d:", time.Now().UnixNano())
	key := middleware.Header("X-User")
	a, b := serveOver(t, reference.NewCompact, red, prefix, key, nil), serveOver(t, reference.NewCompact, red, prefix, key, nil)
	code, out, errOut := endpointRun(t, []string{a, b}, "--level", "strict")
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	for _, id := range []string{"http/retry-after", "http/ratelimit-fields", "strict/shared-store", "strict/boundary-burst-first"} {
		assert.Regexp(t, `pass\s+`+id, out)
	}
}

// Services that lie are failed, with the lie named: a Retry-After too
// short to obey, a remaining count off by one, a policy other than the one
// enforced, replicas that keep their own limits.
func TestEndpointModeFailsLyingServices(t *testing.T) {
	testtier.SkipShort(t, "grades an endpoint in real time")
	t.Parallel()
	red := store
	for _, c := range []struct {
		name string
		lie  func(http.Header)
		id   string
		says string
	}{
		{"retry-after too short", func(h http.Header) {
			if h.Get("Retry-After") != "" {
				h.Set("Retry-After", "0")
			}
		}, "http/retry-after", "a client that obeys it is refused again"},
		{"remaining off by one", func(h http.Header) {
			h.Del("RateLimit")
			h.Set("X-RateLimit-Remaining", strconv.Itoa(3))
		}, "http/ratelimit-fields", "fields say 3 left"},
		{"policy says 10", func(h http.Header) { h.Set("RateLimit-Policy", `"default";q=10;w=1`) }, "http/ratelimit-fields", "a limit of 10"},
		{"reset too short", func(h http.Header) {
			if v := h.Get("RateLimit"); strings.Contains(v, "r=0") {
				h.Set("RateLimit", `"default";r=0;t=0`)
			}
		}, "http/ratelimit-fields", "a client that waits t is refused again"},
		{"reset past the whole quota", func(h http.Header) {
			if v := h.Get("RateLimit"); v != "" {
				h.Set("RateLimit", v[:strings.Index(v, ";t=")]+";t=60")
			}
		}, "http/ratelimit-fields", "gives the whole quota back within 1s"},
		// 18446744074 s is 2^64 ns and 290 ms: malformed, never wrapped.
		{"retry-after out of range", func(h http.Header) {
			if h.Get("Retry-After") != "" {
				h.Set("Retry-After", "18446744074")
			}
		}, "http/retry-after", `malformed: Retry-After "18446744074": more than 3153600000s`},
		{"remaining negative", func(h http.Header) {
			h.Del("RateLimit")
			h.Set("X-RateLimit-Remaining", "-1")
		}, "http/ratelimit-fields", `malformed: X-RateLimit-Remaining "-1": not a non-negative integer`},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := serveAPI(t, red, fmt.Sprintf("rlc-ep:%d:", time.Now().UnixNano()), c.lie)
			code, out, errOut := endpointRun(t, []string{url}, "--policy", "5/1s", "--id", c.id)
			assert.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)
			assert.Contains(t, out, c.says)
		})
	}
	t.Run("replicas with their own limits", func(t *testing.T) {
		a := serveAPI(t, red, fmt.Sprintf("rlc-ep-a:%d:", time.Now().UnixNano()), nil)
		b := serveAPI(t, red, fmt.Sprintf("rlc-ep-b:%d:", time.Now().UnixNano()), nil)
		code, out, _ := endpointRun(t, []string{a, b}, "--policy", "5/1s", "--id", "strict/shared-store")
		assert.Equal(t, ExitNotConformant, code, out)
		assert.Contains(t, out, "instances that each keep their own log")
	})
}

// Each http/ spec fails what it grades: a service whose remaining count
// is malformed, its Retry-After truthful, fails http/ratelimit-fields
// (naming the field) and passes http/retry-after, which grades the
// Retry-After it was sent. It used to fail there too, on the other
// field, so that slowapi's failure of its own Retry-After was hidden
// (issue 64).
func TestRetryAfterIsGradedWhateverTheOtherFields(t *testing.T) {
	testtier.SkipShort(t, "grades an endpoint in real time")
	t.Parallel()
	url := serveAPI(t, store, fmt.Sprintf("rlc-ep-mal:%d:", time.Now().UnixNano()), func(h http.Header) {
		h.Del("RateLimit")
		h.Set("X-RateLimit-Remaining", "-1")
	})
	code, out, errOut := endpointRun(t, []string{url}, "--policy", "5/1s", "--id", "http/retry-after,http/ratelimit-fields")
	assert.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)
	assert.Regexp(t, `pass\s+http/retry-after`, out)
	assert.Regexp(t, `fail\s+http/ratelimit-fields`, out)
}

func TestEndpointModeCannotRun(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }))
	defer plain.Close()
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"run", "--endpoint", plain.URL}, "needs --identity"},
		{[]string{"run", "--endpoint", plain.URL, "--identity", "header:X-User"}, "give --policy N/W"},
		{[]string{"run", "--endpoint", plain.URL, "--target", plain.URL, "--identity", "bearer"}, "exclude each other"},
		{[]string{"run", "--policy", "5/1s"}, "go with --endpoint"},
		{[]string{"run", "--endpoint", plain.URL, "--identity", "cookie:x"}, "want header:NAME"},
		{[]string{"run", "--endpoint", plain.URL, "--identity", "bearer", "--policy", "5/1x"}, "policy"},
	} {
		code, _, errOut := rlconform(t, c.args...)
		assert.Equal(t, ExitCannotRun, code, "%v: %s", c.args, errOut)
		assert.Contains(t, errOut, c.says, "%v", c.args)
	}
}

// announcing serves 200 with a RateLimit-Policy field of policy.
func announcing(t *testing.T, policy string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("RateLimit-Policy", policy)
		fmt.Fprintln(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A policy that cannot be graded, from a service's field or a flag, ends
// the run before it starts (exit 2) with the reason and the source: no
// allocation by its size (a pacer of 2q+8 instants died of out of memory
// at q=2e9), no limit of 0 graded as the default, no window wrapped, no
// pace that could never exceed the limit.
func TestEndpointRefusesPoliciesItCannotGrade(t *testing.T) {
	t.Parallel()
	first := "the RateLimit-Policy field of its first answer"
	for _, c := range []struct {
		name   string
		policy string // the field the service sends
		args   []string
		says   []string
	}{
		{"q of two billion", `"p";q=2000000000;w=1`, nil,
			[]string{"policy 2000000000/1s (from " + first + ") cannot be graded", "keep it at most 10000"}},
		{"q of 0", `"p";q=0;w=1`, nil, []string{first + " says q=0: nothing can be graded against a limit of 0"}},
		{"q negative", `"p";q=-1;w=1`, nil, []string{first + " is malformed", "q=-1: less than 0"}},
		{"w of 0", `"p";q=5;w=0`, nil, []string{first + " is malformed", "w=0: less than 1"}},
		{"w of 10^15 s", `"p";q=5;w=999999999999999`, nil, []string{first + " is malformed", "more than 3153600000"}},
		{"w of 100 years", `"p";q=5;w=3153600000`, nil, []string{"(from " + first + ") cannot be graded", "RealTimeWindow 876000h0m0s: want 10ms to 24h"}},
		{"--policy of two billion", `"p";q=5;w=1`, []string{"--policy", "2000000000/1s"},
			[]string{"policy 2000000000/1s (from --policy) cannot be graded", "keep it at most 10000"}},
		{"--policy of 2^64 ns", `"p";q=5;w=1`, []string{"--policy", "5/213504d"}, []string{"more than 36500d"}},
		{"the default cap", `"p";q=5000;w=1`, nil,
			[]string{"at the default cap of 1000 requests a second (--max-rps raises it) a window of 1s holds at most 1000 × 1 s = 1000 requests, fewer than the N+1 = 5001", "give --max-rps 5001 or more"}},
		{"--max-rps too low", `"p";q=5;w=1`, []string{"--max-rps", "5"}, []string{"at --max-rps 5 a window of 1s holds at most 5 × 1 s = 5 requests, fewer than the N+1 = 6"}},
		{"--max-duration too short", `"p";q=10000;w=3600`, []string{"--max-rps", "5", "--max-duration", "15m"},
			[]string{"at --max-rps 5, sending the N+1 = 10001 requests that exceed the limit takes at least ⌊10000/5⌋ s = 33m20s, more than --max-duration 15m0s"}},
		{"--max-rps out of range", `"p";q=5;w=1`, []string{"--max-rps", "10000001"}, []string{"--max-rps 10000001: more than 10000000 requests a second"}},
		{"--limited-status 2xx", `"p";q=5;w=1`, []string{"--limited-status", "204"}, []string{"--limited-status 204: want a status from 300 to 599"}},
		// 2562047h is the longest time.Duration: 3 × --timeout wrapped.
		{"--timeout of 2562047h", `"p";q=5;w=1`, []string{"--timeout", "2562047h"}, []string{"--timeout 2562047h0m0s: want more than 0, at most 1h0m0s"}},
		{"--spec-timeout of 2562047h", `"p";q=5;w=1`, []string{"--spec-timeout", "2562047h"}, []string{"--spec-timeout 2562047h0m0s: want more than 0, at most 168h0m0s"}},
		{"--max-duration of 2562047h", `"p";q=5;w=1`, []string{"--max-duration", "2562047h"}, []string{"--max-duration 2562047h0m0s: want more than 0, at most 8784h0m0s"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := endpointRun(t, []string{announcing(t, c.policy)}, c.args...)
			assert.Equal(t, ExitCannotRun, code, "%s\n%s", out, errOut)
			for _, says := range c.says {
				assert.Contains(t, errOut, says)
			}
			assert.NotContains(t, errOut, "grading", "refused before grading")
		})
	}
	// identify and bench refuse them too.
	code, _, errOut := rlconform(t, "identify", "--endpoint", announcing(t, `"p";q=2000000000;w=1`), "--identity", "header:X-User")
	assert.Equal(t, ExitCannotRun, code, errOut)
	assert.Contains(t, errOut, "keep it at most 10000")
	code, _, errOut = rlconform(t, "bench", "--endpoint", announcing(t, `"p";q=0;w=1`), "--identity", "header:X-User", "--duration", "1s")
	assert.Equal(t, ExitCannotRun, code, errOut)
	assert.Contains(t, errOut, "nothing can be graded against a limit of 0")
	code, _, errOut = rlconform(t, "bench", "--endpoint", announcing(t, `"p";q=5;w=1`), "--identity", "header:X-User", "--duration", "2562047h")
	assert.Equal(t, ExitCannotRun, code, errOut)
	assert.Contains(t, errOut, "--duration 2562047h0m0s: want more than 0, at most 168h0m0s")
	code, _, errOut = rlconform(t, "identify", "--endpoint", announcing(t, `"p";q=5;w=1`), "--identity", "header:X-User", "--timeout", "2562047h")
	assert.Equal(t, ExitCannotRun, code, errOut)
	assert.Contains(t, errOut, "--timeout 2562047h0m0s: want more than 0, at most 1h0m0s")
}

// The grader never sends more than --max-rps in any one second, over
// every replica (the http/ specs probe fewer phases to keep to it), and
// identify names a service behind the middleware a
// sliding log.
func TestEndpointModeKeepsToMaxRPSAndIdentifies(t *testing.T) {
	testtier.SkipShort(t, "grades an endpoint in real time")
	t.Parallel()
	url, keptTo := servePaced(t)
	code, out, errOut := endpointRun(t, []string{url}, "--policy", "5/1s", "--max-rps", "20", "--id", "strict/same-millisecond-burst,core/block-over-limit,http/retry-after")
	assert.NotEqual(t, ExitNotConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "5 phases: 4 spread over the window's phases in 4 windows, one every 250ms from a random offset, 1 just after an epoch-aligned window edge (not 13: --max-rps 20 fits no more; a lie confined to less than 250ms of the window can be missed)")
	keptTo(20)

	code, out, errOut = rlconform(t, "identify", "--endpoint", url, "--identity", "header:X-User", "--policy", "5/1s")
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "fits      sliding-log")
}

// Specs side by side share one pacing: --max-rps holds over all of them,
// and no verdict is wrong (a paced request is only undecided).
func TestEndpointSpecsSideBySideKeepToMaxRPS(t *testing.T) {
	testtier.SkipShort(t, "grades an endpoint in real time")
	t.Parallel()
	url, keptTo := servePaced(t)
	code, out, errOut := endpointRun(t, []string{url}, "--policy", "5/1s", "--max-rps", "20", "--parallel", "3",
		"--id", "core/allow-within-limit,core/block-over-limit,core/multi-user,strict/same-millisecond-burst")
	assert.NotEqual(t, ExitNotConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "up to 3 specs ran side by side after the first (--parallel 3")
	// The report's table lists the specs in the catalogue's order, side
	// by side or not (a spec may also be named earlier, in a summary).
	rows := regexp.MustCompile(`(?m)^  [a-z]+ +(core/allow-within-limit|strict/same-millisecond-burst) `).FindAllStringSubmatch(out, -1)
	if assert.Len(t, rows, 2, out) {
		assert.Equal(t, "core/allow-within-limit", rows[0][1], "catalogue order:\n%s", out)
	}
	keptTo(20)
}

// servePaced serves the demo API and returns its URL and a check that
// it received at most rps requests in any one second.
func servePaced(t *testing.T) (string, func(rps int)) {
	t.Helper()
	var mu sync.Mutex
	var arrivals []time.Time
	url := serveAPI(t, store, fmt.Sprintf("rlc-ep:%d:", time.Now().UnixNano()), func(http.Header) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
	})
	return url, func(rps int) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		for i := rps; i < len(arrivals); i++ {
			// Arrivals trail the sending by the round trip: allow for it.
			assert.Greater(t, arrivals[i].Sub(arrivals[i-rps]), 900*time.Millisecond, "answer %d and the one %d before it", i, rps)
		}
	}
}

// With --identity none every request shares one limit: the specs that need
// several users are skipped, and the others wait the window out first.
func TestEndpointModeWithOneSharedLimit(t *testing.T) {
	testtier.SkipShort(t, "grades an endpoint in real time")
	t.Parallel()
	red := store
	one := func(*http.Request) (string, error) { return "everyone", nil }
	url := serveKeyed(t, red, fmt.Sprintf("rlc-ep:%d:", time.Now().UnixNano()), one, nil)
	code, out, errOut := rlconform(t, "run", "--endpoint", url, "--identity", "none", "--policy", "5/1s",
		"--id", "core/block-over-limit,core/sliding-expiry,core/multi-user,http/retry-after")
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, errOut, "one limit shared by every request")
	assert.Regexp(t, `pass\s+core/block-over-limit`, out)
	assert.Regexp(t, `pass\s+core/sliding-expiry`, out)
	assert.Regexp(t, `pass\s+http/retry-after.*1 phase, just after an epoch-aligned window edge`, out)
	assert.Contains(t, out, "needs several users with limits of their own")
}
