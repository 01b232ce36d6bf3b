package adapters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/internal/testaddr"
	"github.com/rlconform/rlconform/model"
)

func TestRoundTripHonoursTheClockHeader(t *testing.T) {
	ctx := context.Background()
	serverClock := fakeclock.New(time.UnixMilli(0))
	lim, err := model.NewLimiter(serverClock, 2, time.Minute)
	require.NoError(t, err)
	srv, err := NewServer(lim, serverClock)
	require.NoError(t, err)
	defer srv.Close()

	suiteClock := fakeclock.New(time.UnixMilli(1_767_225_600_000))
	c := NewClient(srv.URL, ClientOptions{Clock: suiteClock})
	caps, err := c.Capabilities(ctx)
	require.NoError(t, err)
	assert.Equal(t, contract.Capabilities{Clock: true, Configure: true, Remaining: true, Reset: true, Cost: true}, caps, "the model's limiter takes a cost")

	for _, want := range []bool{true, true, false} {
		ok, err := c.AllowRequest(ctx, "u")
		require.NoError(t, err)
		assert.Equal(t, want, ok)
	}
	assert.Equal(t, suiteClock.Now(), serverClock.Now(), "the server took now from X-Rlc-Now-Ms")
	suiteClock.Advance(time.Minute)
	n, err := c.GetRemainingRequests(ctx, "u")
	require.NoError(t, err)
	assert.Equal(t, 2, n, "a minute later on the suite's clock, both entries expired")
	require.NoError(t, c.Reset(ctx, "u"))
	require.NoError(t, c.Configure(ctx, 3, time.Second))

	err = c.Configure(ctx, 0, time.Second)
	assert.ErrorIs(t, err, contract.ErrInvalidConfig)
	_, err = c.AllowRequest(ctx, "")
	assert.ErrorIs(t, err, contract.ErrInvalidUserID)
}

// A weighted request crosses the protocol whole: the server declares the
// capability for a limiter that takes a cost, forwards the cost, answers
// a negative one 400, and the client maps that to ErrInvalidCost.
func TestCostCrossesTheProtocol(t *testing.T) {
	ctx := context.Background()
	clock := fakeclock.New(time.UnixMilli(0))
	lim, err := model.NewLimiter(clock, 5, time.Minute)
	require.NoError(t, err)
	srv, err := NewServer(lim, clock)
	require.NoError(t, err)
	defer srv.Close()
	c := NewClient(srv.URL, ClientOptions{Clock: clock})

	ok, err := c.AllowRequestN(ctx, "u", 4)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = c.AllowRequestN(ctx, "u", 2)
	require.NoError(t, err)
	assert.False(t, ok, "one left: a request of 2 is refused whole")
	n, err := c.GetRemainingRequests(ctx, "u")
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the server counted the cost of 4, and nothing of the refused 2")
	_, err = c.AllowRequestN(ctx, "u", -1)
	assert.ErrorIs(t, err, contract.ErrInvalidCost)
	ok, err = c.AllowRequest(ctx, "u")
	require.NoError(t, err)
	assert.True(t, ok, "the negative cost changed nothing")
}

// A limiter without AllowRequestN is served without the capability: an
// allow without a cost works, one with a cost other than 1 is refused as
// invalid, and a client reads an answer without "cost" as no capability.
func TestCostWithoutTheCapability(t *testing.T) {
	ctx := context.Background()
	clock := fakeclock.New(time.UnixMilli(0))
	lim, err := model.NewLimiter(clock, 5, time.Minute)
	require.NoError(t, err)
	srv, err := NewServer(unitOnly{lim}, clock)
	require.NoError(t, err)
	defer srv.Close()
	c := NewClient(srv.URL, ClientOptions{Clock: clock})
	caps, err := c.Capabilities(ctx)
	require.NoError(t, err)
	assert.False(t, caps.Cost)
	ok, err := c.AllowRequestN(ctx, "u", 1)
	require.NoError(t, err)
	assert.True(t, ok, "a cost of 1 is a unit request")
	_, err = c.AllowRequestN(ctx, "u", 3)
	assert.ErrorIs(t, err, contract.ErrInvalidCost)
	assert.ErrorContains(t, err, "takes no cost")
	n, err := c.GetRemainingRequests(ctx, "u")
	require.NoError(t, err)
	assert.Equal(t, 4, n)
}

// unitOnly hides a limiter's AllowRequestN.
type unitOnly struct{ contract.RateLimiterContract }

// answer serves one fixed answer for every path.
func answer(t *testing.T, status int, body string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestClientErrorsSayWhatWentWrong(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, body string
		status     int
		want       string
	}{
		{"non-2xx shows status and body", `{"error":"boom"}`, 500, `POST /rlc/v1/allow: status 500 (body "{\"error\":\"boom\"}")`},
		{"malformed JSON", `allowed`, 200, "malformed answer"},
		{"wrong type", `{"allowed":"yes"}`, 200, "malformed answer"},
		{"missing field", `{"ok":true}`, 200, `answer lacks "allowed"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewClient(answer(t, tt.status, tt.body), ClientOptions{}).AllowRequest(ctx, "u")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			var pe *Error
			assert.True(t, errors.As(err, &pe))
		})
	}
}

func TestCapabilities404MeansNoClock(t *testing.T) {
	caps, err := NewClient(answer(t, 404, "not found"), ClientOptions{}).Capabilities(context.Background())
	require.NoError(t, err)
	assert.Equal(t, contract.Capabilities{Configure: true, Remaining: true, Reset: true}, caps)

	_, err = NewClient(answer(t, 200, `{"clock":true}`), ClientOptions{}).Capabilities(context.Background())
	assert.ErrorContains(t, err, "answer lacks configure, remaining, reset")
}

// store_failure declares the policy while the store fails: absent is
// error, an unknown value a fault of the target's.
func TestCapabilitiesStoreFailure(t *testing.T) {
	const four = `"clock":false,"configure":true,"remaining":true,"reset":true`
	for body, want := range map[string]contract.StoreFailure{
		`{` + four + `}`:                         "",
		`{` + four + `,"store_failure":"error"}`: contract.StoreFailureError,
		`{` + four + `,"store_failure":"allow"}`: contract.StoreFailureAllow,
		`{` + four + `,"store_failure":"deny"}`:  contract.StoreFailureDeny,
	} {
		caps, err := NewClient(answer(t, 200, body), ClientOptions{}).Capabilities(context.Background())
		require.NoError(t, err, body)
		assert.Equal(t, want, caps.StoreFailure, body)
		if want == "" {
			assert.Equal(t, contract.StoreFailureError, caps.OnStoreFailure(), "absent means error")
		}
	}
	for _, bad := range []string{`"open"`, `""`, `"ALLOW"`, `true`} {
		_, err := NewClient(answer(t, 200, `{`+four+`,"store_failure":`+bad+`}`), ClientOptions{}).Capabilities(context.Background())
		require.Error(t, err, bad)
		var pe *Error
		assert.True(t, errors.As(err, &pe), "a protocol error of the target: %v", err)
	}
}

func TestClientBoundsHangsAndRefusals(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so that the server notices the client leaving
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer hang.Close()
	start := time.Now()
	_, err := NewClient(hang.URL, ClientOptions{Timeout: 200 * time.Millisecond}).AllowRequest(context.Background(), "u")
	assert.ErrorContains(t, err, "no answer within 200ms")
	assert.Less(t, time.Since(start), 5*time.Second)

	_, err = NewClient("http://"+testaddr.Refused(t), ClientOptions{}).AllowRequest(context.Background(), "u")
	assert.ErrorContains(t, err, "refused")
}

func TestServerRejectsBadRequests(t *testing.T) {
	lim, _ := model.NewLimiter(fakeclock.Real{}, 1, time.Minute)
	clock := fakeclock.New(time.UnixMilli(0))
	srv, err := NewServer(lim, clock)
	require.NoError(t, err)
	defer srv.Close()
	for _, tc := range []struct {
		path, body, header, origin, ctype string
		want                              int
	}{
		{PathAllow, "{", "", "", "", 400},
		{PathAllow, `{"user_id":"u"}`, "soon", "", "", 400},
		{PathAllow, `{"user_id":"u","extra":1}`, "", "", "", 400},
		{PathAllow, `{"user_id":"u"} {"user_id":"v"}`, "", "", "", 400},
		{PathAllow, "{\"user_id\":\"inv\xff\"}", "", "", "", 400},
		{PathAllow, `{"user_id":"` + strings.Repeat("x", 5000) + `"}`, "", "", "", 400},
		{PathAllow, `{"user_id":"u"}`, "", "", "text/plain", 415},
		{PathReset, `{"user_id":"u"}`, "", "http://evil.example", "", 403},
		{PathConfigure, `{"max_requests":5,"window_ms":288230376151771744}`, "", "", "", 400},
		{PathConfigure, `{"max_requests":9223372036854775807,"window_ms":60000}`, "", "", "", 400},
		{PathConfigure, `{"max_requests":5,"window_ms":60000}`, "", "", "", 204},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+tc.path, stringsReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		if tc.ctype != "" {
			req.Header.Set("Content-Type", tc.ctype)
		}
		if tc.header != "" {
			req.Header.Set(HeaderNow, tc.header)
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, tc.want, resp.StatusCode, "%s %.80q %q", tc.path, tc.body, tc.header)
	}
	// A loopback server answers loopback names only (DNS rebinding).
	req, _ := http.NewRequest(http.MethodGet, srv.URL+PathCapabilities, nil)
	req.Host = "rebound.example:80"
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode)
}

func stringsReader(s string) *stringReader { return &stringReader{s: s} }

type stringReader struct{ s string }

func (r *stringReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p, r.s)
	r.s = r.s[n:]
	return n, nil
}

func TestClientMapsStatusesToTheContractsErrors(t *testing.T) {
	ctx := context.Background()
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"allowed":true}`))
	}))
	defer elsewhere.Close()
	status := map[string]int{PathAllow: 503, PathRemaining: 400, PathConfigure: 400, PathReset: 307}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == PathReset {
			http.Redirect(w, r, elsewhere.URL+PathAllow, http.StatusTemporaryRedirect)
			return
		}
		w.WriteHeader(status[r.URL.Path])
		w.Write([]byte(`{"error":"the target's own words"}`))
	}))
	defer srv.Close()
	c := NewClient(srv.URL, ClientOptions{})

	_, err := c.AllowRequest(ctx, "u")
	assert.ErrorIs(t, err, contract.ErrStore)
	assert.Contains(t, err.Error(), "the target's own words")
	_, err = c.GetRemainingRequests(ctx, "u")
	assert.ErrorIs(t, err, contract.ErrInvalidUserID)
	assert.Contains(t, err.Error(), "the target's own words")
	err = c.Configure(ctx, 1, time.Second)
	assert.ErrorIs(t, err, contract.ErrInvalidConfig)
	err = c.Reset(ctx, "u")
	require.Error(t, err, "a redirect is refused, not followed")
	assert.Contains(t, err.Error(), "does not follow redirects")
	var pe *Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, http.StatusTemporaryRedirect, pe.Status)
}

func TestClientMeasuresTheTargetsClockFromNowMs(t *testing.T) {
	ahead := 400 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(fmt.Sprintf(`{"allowed":true,"remaining":1,"now_ms":%d}`, time.Now().Add(ahead).UnixMilli())))
	}))
	defer srv.Close()
	c := NewClient(srv.URL, ClientOptions{})
	_, _, ok := c.ClockOffset()
	assert.False(t, ok, "no answer yet")
	for range 3 {
		_, err := c.AllowRequest(context.Background(), "u")
		require.NoError(t, err)
	}
	off, unc, ok := c.ClockOffset()
	require.True(t, ok)
	assert.InDelta(t, ahead.Seconds(), off.Seconds(), (unc + time.Millisecond).Seconds())
	// Copies with a clock share the estimate.
	_, _, ok = c.WithClock(fakeclock.Real{}).ClockOffset()
	assert.True(t, ok)
}

// A server declares the window granularity it is given, and refuses one
// the protocol cannot say.
func TestServerDeclaresItsWindowGranularity(t *testing.T) {
	lim, err := model.NewLimiter(fakeclock.Real{}, 5, time.Minute)
	require.NoError(t, err)
	srv, err := ListenWith("127.0.0.1:0", lim, nil, ServerOptions{WindowGranularity: time.Millisecond})
	require.NoError(t, err)
	defer srv.Close()
	caps, err := NewClient(srv.URL, ClientOptions{}).Capabilities(context.Background())
	require.NoError(t, err)
	assert.Equal(t, time.Millisecond, caps.WindowGranularity)
	_, err = ListenWith("127.0.0.1:0", lim, nil, ServerOptions{WindowGranularity: 1500 * time.Microsecond})
	assert.ErrorContains(t, err, "want 0 (not declared) or whole milliseconds")
}
