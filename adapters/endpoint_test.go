package adapters

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
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
	// 213504 days are 2^64 ns and 25 minutes: a window that wraps.
	for _, bad := range []string{"", "10", "x/1s", "10/1x", "0/1s", "10/0s", "10/1.5d", "-1/1s", "1/-1s", "1/213504d", "1/36501d",
		"9007199254740992/1s", "1/2562048h", "99999999999999999999/1s"} {
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
		"json:/a/0/~1b": {"json", "/a/0/~1b"},
		"form:user":     {"form", "user"},
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
		case "teapot":
			w.WriteHeader(http.StatusTeapot)
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
	assert.ErrorIs(t, err, contract.ErrStore, "a 5xx is a failure of the service or its store")
	_, err = e.AllowRequest(context.Background(), "teapot")
	assert.ErrorContains(t, err, "418")
	assert.NotErrorIs(t, err, contract.ErrStore, "a 4xx is not")
	assert.Error(t, e.Reset(context.Background(), "ok"))
}

// The RateLimit fields of the drafts before -08, as express-rate-limit
// writes them: draft-6 and draft-7's RateLimit-Policy carries the quota as
// the item ("5;w=1"), and draft-7's RateLimit is a dictionary.
func TestParseFieldsEarlierDrafts(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	h := http.Header{}
	h.Set("RateLimit-Policy", "5;w=1")
	h.Set("RateLimit", "limit=5, remaining=4, reset=1")
	f := ParseFields(h, now)
	require.Empty(t, f.Errs)
	assert.Equal(t, "draft-7", f.Form)
	assert.True(t, f.HasPolicy && f.HasRemaining && f.HasReset)
	assert.Equal(t, 5, f.PolicyLimit)
	assert.Equal(t, time.Second, f.PolicyWindow)
	assert.Equal(t, 4, f.Remaining)
	assert.Equal(t, time.Second, f.Reset)

	h = http.Header{}
	h.Set("RateLimit-Policy", "5;w=1")
	h.Set("RateLimit-Limit", "5")
	h.Set("RateLimit-Remaining", "0")
	h.Set("RateLimit-Reset", "1")
	f = ParseFields(h, now)
	require.Empty(t, f.Errs)
	assert.Equal(t, "draft-6", f.Form)
	assert.Equal(t, 5, f.PolicyLimit)
	assert.Equal(t, time.Second, f.PolicyWindow)
	assert.True(t, f.HasRemaining)
	assert.Zero(t, f.Remaining)

	// A dictionary that names no state is no RateLimit field at all.
	h = http.Header{}
	h.Set("RateLimit", "limit=5")
	f = ParseFields(h, now)
	require.Len(t, f.Errs, 1)
	assert.ErrorContains(t, f.Errs[0], "not a structured list")
}

// A number out of range in a field is malformed, named in Errs, and sets
// nothing: never wrapped (18446744074 s is 2^64 ns and 290 ms), never
// negative.
func TestParseFieldsOutOfRange(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, value, err string
	}{
		{"Retry-After", "18446744074", "Retry-After \"18446744074\": more than 3153600000s"},
		{"Retry-After", "-5", "neither delta-seconds"},
		{"Retry-After", "+5", "neither delta-seconds"},
		{"Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT", "more than 876000h"},
		{"RateLimit", `"p";r=-1;t=1`, "r=-1: less than 0"},
		{"RateLimit", `"p";r=1;t=999999999999999`, "t=999999999999999: more than 3153600000"},
		{"RateLimit", `"p";r=1.5;t=1`, "r=1.5 is not an integer"},
		{"RateLimit", `("a" "b");r=1`, "inner list"},
		{"RateLimit-Policy", `"p";q=-3;w=1`, "q=-3: less than 0"},
		{"RateLimit-Policy", `"p";q=3;w=0`, "w=0: less than 1"},
		{"RateLimit-Policy", `"p";q=3;w=999999999999999`, "more than 3153600000"},
		{"RateLimit-Policy", `"p";q=1000000000000000;w=1`, "not a structured list"},
		{"X-RateLimit-Remaining", "-1", "X-RateLimit-Remaining \"-1\": not a non-negative integer"},
		{"X-RateLimit-Remaining", "many", "not a non-negative integer"},
		{"X-RateLimit-Reset", "9223372036854775807", "more than 253402300799"},
		{"X-RateLimit-Reset", "253402300799", "an epoch instant"},
		{"RateLimit-Limit", "18446744073709551617", "more than 9007199254740991"},
		{"RateLimit-Policy", `-5;w=1`, "the quota -5: less than 0"},
		{"RateLimit-Policy", `"p";w=1`, `the quota p is not an integer`},
		{"RateLimit", `limit=5, remaining=-1, reset=1`, "remaining=-1: less than 0"},
		{"RateLimit", `limit=5, remaining=4, reset=99999999999`, "reset=99999999999: more than 3153600000"},
		{"RateLimit", `limit=5, remaining=(1 2), reset=1`, "remaining is an inner list"},
	} {
		h := http.Header{}
		h.Set(tc.name, tc.value)
		f := ParseFields(h, now)
		require.Len(t, f.Errs, 1, "%s: %s", tc.name, tc.value)
		assert.ErrorContains(t, f.Errs[0], tc.err, "%s: %s", tc.name, tc.value)
		assert.True(t, strings.HasPrefix(f.Errs[0].Error(), tc.name+" "), "the error starts with the field's name: %v", f.Errs[0])
		assert.False(t, f.HasRetryAfter || f.HasPolicy || f.HasRemaining || f.HasReset, "%s: %s sets nothing", tc.name, tc.value)
	}
	// The largest values in range are read as they are.
	h := http.Header{}
	h.Set("Retry-After", "3153600000")
	h.Set("RateLimit-Policy", `"p";q=999999999999999;w=3153600000`)
	h.Set("RateLimit", `"p";r=0;t=3153600000`)
	f := ParseFields(h, now)
	require.Empty(t, f.Errs)
	assert.Equal(t, contract.MaxWindow, f.RetryAfter)
	assert.Equal(t, contract.MaxWindow, f.Reset)
	assert.Equal(t, contract.MaxWindow, f.PolicyWindow)
	assert.Equal(t, 999_999_999_999_999, f.PolicyLimit, "a structured field's largest integer")
	h = http.Header{}
	h.Set("X-RateLimit-Limit", "9007199254740991")
	h.Set("X-RateLimit-Remaining", "9007199254740991")
	f = ParseFields(h, now)
	require.Empty(t, f.Errs)
	assert.Equal(t, contract.MaxLimit, f.PolicyLimit)
	assert.Equal(t, contract.MaxLimit, f.Remaining)
}
