package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/internal/redact"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/result"
)

// behind reads the wall clock late by its own amount: a limiter on it
// whose windows open at its whole seconds opens them at that phase of the
// wall clock's.
type behind time.Duration

func (d behind) Now() time.Time { return time.Now().Add(-time.Duration(d)) }

// serveProfile serves a profile's model over protocol v1, with clock
// control or on real time (a first-second window's on a clock 400 ms
// behind the wall clock, as Fiber's cached second may be).
func serveProfile(t *testing.T, spec string, withClock bool) string {
	t.Helper()
	var clock *fakeclock.Fake
	var read fakeclock.Clock = fakeclock.Real{}
	if strings.Contains(spec, "first-second") {
		read = behind(400 * time.Millisecond)
	}
	if withClock {
		clock = fakeclock.New(time.Now())
		read = clock
	}
	p, err := model.MustVariant(spec).New(5, time.Minute)
	require.NoError(t, err)
	srv, err := adapters.NewServer(model.NewProfileLimiter(read, p), clock)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	return srv.URL
}

// identify names a profile model served over protocol v1, in both clock
// modes, with its parameters; JSON says the same.
func TestIdentifyOverTheProtocol(t *testing.T) {
	t.Parallel() // one case is in real time: it mostly waits
	for _, c := range []struct {
		spec      string
		withClock bool
		// shown is the fit as found: "?" for a value no answer decides
		// (the grids of the epoch and of Go's zero time are one for a
		// window of a minute); a fixed window's count-denied is decided
		// by the raised limit, which Configure makes.
		shown string
	}{
		{"gcra:burst=3", true, "gcra:burst=3"},
		// identify/cost tells a weighted request into debt from one
		// decided whole, with the clock and in real time.
		{"gcra:burst=3,cost=debt", true, "gcra:burst=3,cost=debt"},
		{"gcra", false, "gcra:burst=limit"},
		{"gcra:cost=debt", false, "gcra:burst=limit,cost=debt"},
		{"sliding-counter:count-denied=true", true, "sliding-counter:admit=below,align=?,count-denied=true"},
		{"fixed-window:align=first-hit", false, "fixed-window:align=first-hit,count-denied=false,query=read"},
		// Windows on the limiter's own clock of seconds (at a phase of
		// 400 ms here) end before W after the request that opened them:
		// first-hit is ruled out, and first-second, tried when nothing
		// fits, is named.
		{"fixed-window:align=first-second", false, "fixed-window:align=first-second,count-denied=false,query=read"},
	} {
		t.Run(c.spec, func(t *testing.T) {
			if !c.withClock {
				testtier.SkipShort(t, "identifies in real time")
			}
			path := filepath.Join(t.TempDir(), "id.json")
			code, out, errOut := rlconform(t, "identify", "--target", serveProfile(t, c.spec, c.withClock), "--json", path)
			require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
			assert.Contains(t, out, "fits      "+c.shown+":")
			var got struct {
				Outcome string `json:"outcome"`
				Fits    []struct {
					Profile string `json:"profile"`
					Name    string `json:"name"`
				} `json:"fits"`
				RuledOut []struct {
					Profile  string   `json:"profile"`
					Timeline []string `json:"timeline"`
				} `json:"ruled_out"`
			}
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(data, &got))
			assert.NotEmpty(t, got.RuledOut)
			want := model.MustVariant(c.spec)
			if !c.withClock && got.Outcome == "ambiguous" {
				// In real time the probe that tells a query that writes
				// from one that reads (identify/bucket) may decide
				// nothing when its calls are slow: ambiguous between the
				// two readings is honest, anything else is not.
				for _, f := range got.Fits {
					other := model.MustVariant(f.Profile)
					other.Params["query"] = want.Params["query"]
					assert.Equal(t, want.String(), other.String(), "ambiguous beyond the query readings:\n%s", out)
				}
				t.Logf("ambiguous between the query readings in real time on this machine:\n%s", out)
				return
			}
			assert.Contains(t, out, "IDENTIFIED")
			assert.Equal(t, "identified", got.Outcome)
			require.Len(t, got.Fits, 1)
			assert.Equal(t, want.String(), got.Fits[0].Profile)
			assert.Equal(t, c.shown, got.Fits[0].Name)
		})
	}
}

// clockPerUser is a fixed window on a clock of whole seconds whose phase
// differs from user to user: each user's answers are a first-second
// window's, but no one limiter's, which has one clock.
type clockPerUser struct {
	mu    sync.Mutex
	n     int
	w     time.Duration
	users map[string]*model.Limiter
}

func (c *clockPerUser) user(id string) (*model.Limiter, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.users[id]; l != nil {
		return l, nil
	}
	p, err := model.MustVariant("fixed-window:align=first-second").New(c.n, c.w)
	if err != nil {
		return nil, err
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	l := model.NewProfileLimiter(behind(time.Duration(h.Sum32()%1000)*time.Millisecond), p)
	c.users[id] = l
	return l, nil
}

func (c *clockPerUser) AllowRequest(ctx context.Context, id string) (bool, error) {
	l, err := c.user(id)
	if err != nil {
		return false, err
	}
	return l.AllowRequest(ctx, id)
}

func (c *clockPerUser) GetRemainingRequests(ctx context.Context, id string) (int, error) {
	l, err := c.user(id)
	if err != nil {
		return 0, err
	}
	return l.GetRemainingRequests(ctx, id)
}

func (c *clockPerUser) Reset(ctx context.Context, id string) error {
	l, err := c.user(id)
	if err != nil {
		return err
	}
	return l.Reset(ctx, id)
}

// Configure starts afresh: every user forgotten.
func (c *clockPerUser) Configure(_ context.Context, n int, w time.Duration) error {
	if _, err := model.MustVariant("fixed-window:align=first-second").New(n, w); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n, c.w, c.users = n, w, map[string]*model.Limiter{}
	return nil
}

// A clock of whole seconds at a phase of each user's own is no limiter's:
// identify, which follows each user at every phase, must not name
// first-second for it (it did, for libraries that lose races on a loaded
// machine: nestjs-throttler's and Fiber's sliding window's cards).
func TestIdentifyWantsOneClockForEveryUser(t *testing.T) {
	testtier.SkipShort(t, "identifies in real time")
	t.Parallel() // in real time: it mostly waits
	lim := &clockPerUser{n: 5, w: time.Minute, users: map[string]*model.Limiter{}}
	srv, err := adapters.NewServer(lim, nil)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	code, out, errOut := rlconform(t, "identify", "--target", srv.URL)
	assert.NotContains(t, out, "fits      fixed-window:align=first-second", "%s\n%s", out, errOut)
	assert.Contains(t, out, "no phase, up to 25ms late, fits every user", "%s\n%s", out, errOut)
	assert.NotEqual(t, ExitCannotRun, code, errOut)
}

func TestIdentifyCannotRun(t *testing.T) {
	code, _, errOut := rlconform(t, "identify")
	assert.Equal(t, ExitCannotRun, code)
	assert.Contains(t, errOut, "--target")
	code, _, errOut = rlconform(t, "identify", "--target", "http://127.0.0.1:1")
	assert.Equal(t, ExitCannotRun, code, errOut)
}

// An identification with no fit whose unjudged profiles might fit is
// no verdict: exit 2, naming them, never 1 ("none fits").
func TestIdentifyUndecidedExitsTwo(t *testing.T) {
	id := &result.Identification{Target: "t", Limit: 5, Window: time.Second, Mode: result.RealTime,
		Unjudged: []string{"fixed-window:align=first-second,count-denied=false,query=read"}}
	var text, out, errOut strings.Builder
	assert.Equal(t, ExitCannotRun, reportIdentification(id, &text, &out, &errOut, redact.NewSecrets(8)))
	assert.Contains(t, errOut.String(), "undecided: no profile judged fits, and fixed-window:align=first-second,count-denied=false,query=read could not be judged")
	assert.Contains(t, out.String(), `"outcome": "undecided"`)

	id.Unjudged = nil
	errOut.Reset()
	assert.Equal(t, ExitNotConformant, reportIdentification(id, &text, &out, &errOut, redact.NewSecrets(8)), "none fits, every profile judged")
}

// hourOnly takes no window but one hour, as a limiter configured in
// whole units of its own might.
type hourOnly struct{ contract.RateLimiterContract }

func (l hourOnly) Configure(ctx context.Context, n int, w time.Duration) error {
	if w != time.Hour {
		return fmt.Errorf("%w: window %v: only 1h", contract.ErrInvalidConfig, w)
	}
	return l.RateLimiterContract.Configure(ctx, n, w)
}

// A target that refuses the windows identify configures, whole seconds
// too, makes identify exit 2 with the configuration refused and the
// target's own error, not only the probe's title.
func TestIdentifySaysWhichWindowTheTargetRefused(t *testing.T) {
	clock := fakeclock.New(time.Now())
	p, err := model.MustVariant("gcra").New(5, time.Hour)
	require.NoError(t, err)
	srv, err := adapters.NewServer(hourOnly{model.NewProfileLimiter(clock, p)}, clock)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	code, out, errOut := rlconform(t, "identify", "--target", srv.URL, "--window", "1500ms")
	assert.Equal(t, ExitCannotRun, code, "%s\n%s", out, errOut)
	assert.Contains(t, errOut, "the target refused Configure(5, 2s)")
	assert.Contains(t, errOut, "only 1h")
	t.Log(errOut)
}

// run --profile grades a served profile model against its profile, and
// fails it against another; list --profile says what is not graded.
func TestRunAndListWithAProfile(t *testing.T) {
	t.Parallel() // its own servers: nothing shared
	url := serveProfile(t, "gcra", true)
	code, out, errOut := rlconform(t, "run", "--target", url, "--profile", "gcra", "--level", "strict")
	assert.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "profile gcra:burst=limit")
	code, out, _ = rlconform(t, "run", "--target", url, "--profile", "fixed-window", "--level", "strict")
	assert.Equal(t, ExitNotConformant, code, out)
	code, _, errOut = rlconform(t, "run", "--target", url, "--profile", "fixed-window:align=sideways")
	assert.Equal(t, ExitCannotRun, code)
	assert.Contains(t, errOut, "want one of epoch, go-zero, first-grid, first-hit")
	code, out, _ = rlconform(t, "list", "--profile", "gcra")
	assert.Equal(t, ExitConformant, code)
	assert.Contains(t, out, "strict/clock-step-back")
	assert.Contains(t, out, "NOT GRADED: not part of profile gcra")
}
