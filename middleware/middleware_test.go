package middleware

import (
	"bytes"
	"context"
	"errors"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rlconform/rlconform/contract"
)

func serve(d Decider, key string) *httptest.ResponseRecorder {
	h := New(d, Options{Key: Header("X-User")})(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	if key != "" {
		r.Header.Set("X-User", key)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestAnswers(t *testing.T) {
	allowed := func(context.Context, string) (Decision, error) {
		return Decision{Allowed: true, Limit: 5, Window: 1500 * time.Millisecond, Remaining: 3, Reset: 200 * time.Millisecond}, nil
	}
	w := serve(allowed, "a")
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, `"default";q=5;w=2`, w.Header().Get("RateLimit-Policy"), "w in whole seconds, rounded up")
	assert.Equal(t, `"default";r=3;t=1`, w.Header().Get("RateLimit"))
	assert.Empty(t, w.Header().Get("Retry-After"))

	refused := func(context.Context, string) (Decision, error) {
		return Decision{Limit: 5, Window: time.Second, RetryAfter: 1001 * time.Millisecond, Reset: 300 * time.Millisecond}, nil
	}
	w = serve(refused, "a")
	assert.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, "2", w.Header().Get("Retry-After"), "rounded up, never down")
	assert.Equal(t, `"default";r=0;t=2`, w.Header().Get("RateLimit"))

	w = serve(allowed, "")
	assert.Equal(t, http.StatusBadRequest, w.Code, "no key")
}

// A limiter that cannot decide fails closed with a 503 that tells the
// client nothing of the cause (a store's address, say); the cause goes to
// the server's log.
func TestStoreErrorsGoToTheLogNotToClients(t *testing.T) {
	var logged bytes.Buffer
	failing := func(context.Context, string) (Decision, error) {
		return Decision{}, errors.New("dial tcp 10.0.0.7:6379: connection refused")
	}
	h := New(failing, Options{Key: Header("X-User"), ErrorLog: log.New(&logged, "", 0)})(http.NotFoundHandler())
	r := httptest.NewRequest(http.MethodGet, "/x", nil)
	r.Header.Set("X-User", "a")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	assert.Equal(t, http.StatusServiceUnavailable, w.Code, "fails closed")
	assert.Equal(t, "rate limiter unavailable\n", w.Body.String())
	assert.Contains(t, logged.String(), "10.0.0.7:6379")
}

// A decision that fails, or does not come within Timeout, is answered as
// the declared policy says: 503 (error, the default), the request let
// through (allow), or refused with 429 (deny); none carries rate-limit
// fields, and every error goes to the log.
func TestStoreFailurePolicies(t *testing.T) {
	failing := func(context.Context, string) (Decision, error) {
		return Decision{}, errors.New("dial tcp 10.0.0.7:6379: connection refused")
	}
	hanging := func(ctx context.Context, _ string) (Decision, error) {
		<-ctx.Done() // a frozen store, until the timeout
		return Decision{}, ctx.Err()
	}
	for _, tt := range []struct {
		policy contract.StoreFailure
		code   int
		body   string
	}{
		{"", http.StatusServiceUnavailable, "rate limiter unavailable\n"},
		{contract.StoreFailureError, http.StatusServiceUnavailable, "rate limiter unavailable\n"},
		{contract.StoreFailureAllow, http.StatusOK, "ok"},
		{contract.StoreFailureDeny, http.StatusTooManyRequests, "rate limiter unavailable: request refused\n"},
	} {
		for name, d := range map[string]Decider{"failing": failing, "hanging": hanging} {
			var logged bytes.Buffer
			h := New(d, Options{Key: Header("X-User"), StoreFailure: tt.policy, Timeout: 50 * time.Millisecond, ErrorLog: log.New(&logged, "", 0)})(
				http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
			r := httptest.NewRequest(http.MethodGet, "/x", nil)
			r.Header.Set("X-User", "a")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			assert.Equal(t, tt.code, w.Code, "%s, %s", tt.policy, name)
			assert.Equal(t, tt.body, w.Body.String(), "%s, %s", tt.policy, name)
			assert.Empty(t, w.Header().Get("RateLimit"), "no decision, no fields")
			assert.Empty(t, w.Header().Get("Retry-After"))
			assert.NotEmpty(t, logged.String(), "the error goes to the log")
			if name == "hanging" {
				assert.Contains(t, logged.String(), "no decision within 50ms")
			}
		}
	}
}
