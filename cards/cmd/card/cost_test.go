package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/fakeclock"
)

// A negative cost reaches the library through the card's server
// (adapters.Handler gives it to a CostLimiter; x/time/rate takes it: a
// refund), so robust/cost-negative grades the library, not the server;
// what the server refuses on its own (a body that is not JSON, a
// malformed clock header) it still refuses.
func TestNegativeCostReachesTheLibrary(t *testing.T) {
	clock := fakeclock.New(time.UnixMilli(1767225600000))
	lim, err := newXTime(&env{clock: clock, limit: 3, window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(adapters.Handler(lim, clock))
	defer srv.Close()
	ctx := context.Background()
	for range 3 {
		if ok, err := lim.AllowRequest(ctx, "u"); !ok || err != nil {
			t.Fatalf("spending the bucket: %v, %v", ok, err)
		}
	}
	post := func(body, contentType, now string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+adapters.PathAllow, strings.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		if now != "" {
			req.Header.Set(adapters.HeaderNow, now)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const now = "1767225600000"
	if code, body := post(`{"user_id":"u","cost":-2}`, "application/json", now); code != http.StatusOK || !strings.Contains(body, `"allowed":true`) {
		t.Fatalf("cost -2: %d %s, want the library's answer (allowed)", code, body)
	}
	if ok, _ := lim.AllowRequest(ctx, "u"); !ok {
		t.Errorf("after cost -2 the library refunded nothing: the cost did not reach it")
	}
	for _, tc := range []struct{ body, contentType, now string }{
		{`{"user_id":"u","cost":-2}`, "text/plain", now},
		{`{"user_id":"u","cost":-2}`, "application/json", "soon"},
		{`{"user_id":"","cost":-2}`, "application/json", now},
	} {
		if code, body := post(tc.body, tc.contentType, tc.now); code/100 != 4 {
			t.Errorf("%s (%s, now %q): %d %s, want a refusal", tc.body, tc.contentType, tc.now, code, body)
		}
	}
	if code, body := post(`{"user_id":"u","cost":2}`, "application/json", now); code != http.StatusOK {
		t.Errorf("cost 2: %d %s, want adapters.Handler's answer", code, body)
	}
}
