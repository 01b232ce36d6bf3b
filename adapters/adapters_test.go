package adapters

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
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
	assert.Equal(t, contract.Capabilities{Clock: true, Configure: true, Remaining: true, Reset: true}, caps)

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

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	_, err = NewClient("http://"+addr, ClientOptions{}).AllowRequest(context.Background(), "u")
	assert.ErrorContains(t, err, "refused")
}

func TestServerRejectsBadRequests(t *testing.T) {
	lim, _ := model.NewLimiter(fakeclock.Real{}, 1, time.Minute)
	clock := fakeclock.New(time.UnixMilli(0))
	srv, err := NewServer(lim, clock)
	require.NoError(t, err)
	defer srv.Close()
	for _, tc := range []struct {
		body, header string
	}{{"{", ""}, {`{"user_id":"u"}`, "soon"}} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+PathAllow, stringsReader(tc.body))
		if tc.header != "" {
			req.Header.Set(HeaderNow, tc.header)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%q %q", tc.body, tc.header)
	}
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
