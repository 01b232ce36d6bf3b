package adapters

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParsePolicy(t *testing.T) {
	for in, want := range map[string]Policy{
		"10/1s":   {10, time.Second},
		"100/1m":  {100, time.Minute},
		"1000/1d": {1000, 24 * time.Hour},
		"5/500ms": {5, 500 * time.Millisecond},
		"3/1h30m": {3, 90 * time.Minute},
	} {
		got, err := ParsePolicy(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "10", "x/1s", "10/1x", "0/1s", "10/0s", "10/1.5d"} {
		_, err := ParsePolicy(bad)
		assert.Error(t, err, bad)
	}
}

func TestParseIdentity(t *testing.T) {
	for in, want := range map[string]Identity{
		"header:X-User": {"header", "X-User"},
		"query:user":    {"query", "user"},
		"bearer":        {Kind: "bearer"},
		"none":          {Kind: "none"},
	} {
		got, err := ParseIdentity(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got)
	}
	for _, bad := range []string{"", "header", "header:", "header:a b", "cookie:x", "bearer:x", "query:", "none:x"} {
		_, err := ParseIdentity(bad)
		assert.Error(t, err, bad)
	}
	// Distinct ids stay distinct on the wire, and safe.
	id := Identity{Kind: "header", Name: "X-User"}
	assert.Equal(t, "ab12-09:u", id.value("ab12-09:u"))
	assert.NotEqual(t, id.value("a\nb"), id.value("a b"))
	assert.Regexp(t, `^b64\.[A-Za-z0-9_-]+$`, id.value("a\nb"))
	assert.Regexp(t, `^b64\.[A-Za-z0-9_-]+$`, Identity{Kind: "bearer"}.value("ab12-09:u"))
}

func TestParseFields(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	h := http.Header{}
	h.Set("Retry-After", "7")
	h.Set("RateLimit-Policy", `"default";q=100;w=60`)
	h.Set("RateLimit", `"default";r=50;t=30`)
	f := ParseFields(h, now)
	assert.Empty(t, f.Errs)
	assert.Equal(t, Fields{RetryAfter: 7 * time.Second, HasRetryAfter: true, Remaining: 50, HasRemaining: true, Reset: 30 * time.Second, HasReset: true,
		Form: "draft", PolicyLimit: 100, PolicyWindow: time.Minute, HasPolicy: true}, f)

	h = http.Header{}
	h.Set("Date", now.Format(http.TimeFormat))
	h.Set("Retry-After", now.Add(3*time.Second).Format(http.TimeFormat))
	h.Set("X-RateLimit-Limit", "10")
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset", "1795089603") // an epoch instant
	f = ParseFields(h, time.Unix(1795089600, 0))
	assert.Equal(t, 3*time.Second, f.RetryAfter, "an HTTP-date, from the server's Date")
	assert.Equal(t, "x", f.Form)
	assert.Equal(t, 0, f.Remaining)
	assert.Equal(t, 3*time.Second, f.Reset, "an epoch reset becomes a delay")
	assert.Equal(t, time.Unix(1795089603, 0), f.ResetAt, "and keeps its instant")
	assert.Equal(t, 10, f.PolicyLimit)

	h = http.Header{}
	h.Set("RateLimit-Limit", "5, 5;w=1")
	h.Set("RateLimit-Remaining", "4")
	h.Set("RateLimit-Reset", "1")
	f = ParseFields(h, now)
	assert.Equal(t, "draft-6", f.Form)
	assert.Equal(t, 4, f.Remaining)
	assert.Equal(t, 5, f.PolicyLimit)

	h = http.Header{}
	h.Set("Retry-After", "soon")
	h.Set("RateLimit", `default;r=`)
	assert.Len(t, ParseFields(h, now).Errs, 2, "malformed fields are reported")
}

func TestEndpointDecisions(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		switch r.URL.Query().Get("u") {
		case "ok":
			w.WriteHeader(http.StatusNoContent)
		case "limited":
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			http.Error(w, "boom", http.StatusBadGateway)
		}
	}))
	defer srv.Close()
	e := NewEndpoint(srv.URL+"/api?x=1", EndpointOptions{Method: http.MethodPost, Identity: Identity{Kind: "query", Name: "u"}, Header: http.Header{"Authorization": {"k"}}})
	ok, err := e.AllowRequest(context.Background(), "ok")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, http.MethodPost, got.Method)
	assert.Equal(t, "1", got.URL.Query().Get("x"), "the URL's own query is kept")
	assert.Equal(t, "k", got.Header.Get("Authorization"))
	ok, err = e.AllowRequest(context.Background(), "limited")
	require.NoError(t, err)
	assert.False(t, ok)
	_, err = e.AllowRequest(context.Background(), "other")
	assert.ErrorContains(t, err, "502", "another status is an error, never a decision")
	assert.ErrorContains(t, err, "boom")
	assert.Error(t, e.Reset(context.Background(), "ok"))
}

