package adapters

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rlconform/rlconform/contract"
)

// recording is a limiter that allows everything and keeps the last user id
// and configuration it was given.
type recording struct {
	mu   sync.Mutex
	user string
	n    int
	w    time.Duration
}

func (r *recording) AllowRequest(_ context.Context, u string) (bool, error) { return true, r.saw(u) }
func (r *recording) GetRemainingRequests(_ context.Context, u string) (int, error) {
	return 1, r.saw(u)
}
func (r *recording) Reset(_ context.Context, u string) error { return r.saw(u) }
func (r *recording) Configure(_ context.Context, n int, w time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n, r.w = n, w
	return nil
}

func (r *recording) saw(u string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.user = u
	return contract.ValidateUserID(u)
}

var fuzzPaths = []string{PathAllow, PathRemaining, PathReset, PathConfigure}

// FuzzServerDecoding sends any body to any POST of the protocol server:
// it never panics; it answers 2xx, 400 or 413, an error as a JSON object;
// an id it accepts is valid UTF-8, bounded, not empty, and holds U+FFFD
// only where the body wrote one (no two bodies merge into one id); a
// configuration it accepts is within the contract's bounds.
func FuzzServerDecoding(f *testing.F) {
	for _, seed := range []string{`{"user_id":"u"}`, `{"user_id":"a\ud800"}`, `{"user_id":"\ud83d\ude00"}`, `{"user_id":"\\ud800"}`,
		`{"user_id":"x\ufffd"}`, `{"user_id":""}`, `{"user_id":"u","x":1}`, `{"user_id":"u"} {}`, `{"max_requests":5,"window_ms":60000}`,
		`{"max_requests":5,"window_ms":1e3}`, `{"max_requests":-1,"window_ms":9223372036854775807}`, "{\"user_id\":\"\xff\"}", `[`, ``} {
		for i := range fuzzPaths {
			f.Add(uint8(i), seed)
		}
	}
	lim := &recording{}
	h := Handler(lim, nil)
	f.Fuzz(func(t *testing.T, which uint8, body string) {
		path := fuzzPaths[int(which)%len(fuzzPaths)]
		lim.user, lim.n, lim.w = "", 0, 0
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		switch w.Code {
		case http.StatusOK, http.StatusNoContent:
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			var e errorBody
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == "" {
				t.Fatalf("%s %q: %d with %q, not a JSON error", path, body, w.Code, w.Body)
			}
			return
		default:
			t.Fatalf("%s %q: status %d (%s)", path, body, w.Code, w.Body)
		}
		if path == PathConfigure {
			if contract.ValidateConfig(lim.n, lim.w) != nil {
				t.Fatalf("%q configured %d per %v", body, lim.n, lim.w)
			}
			return
		}
		u := lim.user
		switch {
		case u == "" || len(u) > maxServedUserIDBytes || !utf8.ValidString(u):
			t.Fatalf("%s %q: accepted the id %q", path, body, u)
		case strings.ContainsRune(u, utf8.RuneError) && !strings.Contains(body, "\uFFFD") && !strings.Contains(strings.ToLower(body), `\ufffd`):
			t.Fatalf("%s %q: the id %q holds U+FFFD the body did not write: a replaced character, merging ids", path, body, u)
		}
	})
}

// FuzzClientDecoding answers any status and body to every call of the
// protocol client: it never panics; a call succeeds only on a 2xx answer
// (or the 404 of capabilities) that holds the field it asks for, and
// fails with an *Error that maps 400 and 503 to the contract's errors.
func FuzzClientDecoding(f *testing.F) {
	for _, seed := range []string{`{"allowed":true}`, `{"allowed":false,"now_ms":-9223372036854775808}`, `{"remaining":3}`,
		`{"remaining":-1,"now_ms":1e300}`, `{"remaining":1.5}`, `{"clock":true,"configure":true,"remaining":true,"reset":true}`,
		`{"clock":true}`, `{"error":"down"}`, `null`, `[]`, `{"allowed":"yes"}`, `{"ALLOWED":true}`, ``, "\xff"} {
		for _, status := range []int{200, 204, 400, 404, 503, 302, 500} {
			f.Add(uint16(status), seed)
		}
	}
	var mu sync.Mutex
	var status int
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		s, b := status, body
		mu.Unlock()
		w.WriteHeader(s)
		io.WriteString(w, b)
	}))
	f.Cleanup(srv.Close)
	c := NewClient(srv.URL, ClientOptions{Timeout: 5 * time.Second})
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, s uint16, b string) {
		s = 200 + s%400 // statuses a server can send with a body (1xx cannot end an answer)
		if s == 204 || s == 304 {
			b = "" // no body allowed
		}
		mu.Lock()
		status, body = int(s), b
		mu.Unlock()
		ok := s >= 200 && s < 300
		_, err := c.AllowRequest(ctx, "u")
		check(t, "allow", int(s), b, err, ok && hasKey(b, "allowed"))
		_, err = c.GetRemainingRequests(ctx, "u")
		check(t, "remaining", int(s), b, err, ok && hasKey(b, "remaining"))
		_, err = c.Capabilities(ctx)
		check(t, "capabilities", int(s), b, err, s == 404 || ok)
		check(t, "reset", int(s), b, c.Reset(ctx, "u"), ok)
		check(t, "configure", int(s), b, c.Configure(ctx, 5, time.Minute), ok)
	})
}

// hasKey reports whether the JSON text b is an object with a non-null
// value under key (matched as encoding/json does, ignoring case).
func hasKey(b, key string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(b), &m) != nil {
		return false
	}
	for k, v := range m {
		if strings.EqualFold(k, key) && !bytes.Equal(v, []byte("null")) {
			return true
		}
	}
	return false
}

// check holds one call's outcome to the rules of FuzzClientDecoding;
// mayPass says whether the answer could have been a success.
func check(t *testing.T, op string, status int, body string, err error, mayPass bool) {
	t.Helper()
	if err == nil {
		if !mayPass {
			t.Fatalf("%s: %d %q was taken for an answer", op, status, body)
		}
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: %d %q: %T %v, want an *Error", op, status, body, err, err)
	}
	if status == 503 && !errors.Is(err, contract.ErrStore) {
		t.Fatalf("%s: 503 is not ErrStore: %v", op, err)
	}
	if status == 400 && !errors.Is(err, contract.ErrInvalidUserID) && !errors.Is(err, contract.ErrInvalidConfig) {
		t.Fatalf("%s: 400 is not an invalid-input error: %v", op, err)
	}
}
