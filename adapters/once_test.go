package adapters

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
)

// resettingServer counts every request it receives and, the first time a
// request comes on a connection that served one before (a reused
// connection: the case in which Go's transport replays a request), counts
// it and then resets the connection (RST) without answering: the request
// reached the limiter and its answer was lost.
type resettingServer struct {
	mu     sync.Mutex
	served map[string]int // requests per connection (its remote address)
	got    int
	reset  bool
}

func (s *resettingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.got++
	s.served[r.RemoteAddr]++
	cut := !s.reset && s.served[r.RemoteAddr] > 1
	if cut {
		s.reset = true
	}
	s.mu.Unlock()
	if !cut {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"allowed":true,"remaining":1}`))
		return
	}
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	conn.(*net.TCPConn).SetLinger(0) // Close sends RST
	conn.Close()
}

func (s *resettingServer) counts() (got int, reset bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got, s.reset
}

// TestSendOnceNeverReplays sends requests through a connection that is
// reset after the limiter saw one of them: the limiter must have received
// exactly as many requests as the client made calls, and the call whose
// answer was lost must be an unknown outcome (contract.ErrNoAnswer), never
// a success that hides a second request. Go's transport replays a bodiless
// GET in that case: an endpoint graded with GET counted one request more
// than the grader recorded (issue 62).
func TestSendOnceNeverReplays(t *testing.T) {
	for _, tc := range []struct {
		name string
		// client makes one client of url (one transport, whose connection
		// the calls reuse) and returns its call.
		client func(url string) func(context.Context) error
	}{
		{"endpoint GET", func(url string) func(context.Context) error {
			e := NewEndpoint(url, EndpointOptions{})
			return func(ctx context.Context) error { _, err := e.Do(ctx, "alice"); return err }
		}},
		{"endpoint POST with a body", func(url string) func(context.Context) error {
			e := NewEndpoint(url, EndpointOptions{Method: http.MethodPost, Body: []byte(`{}`)})
			return func(ctx context.Context) error { _, err := e.Do(ctx, "alice"); return err }
		}},
		{"protocol v1", func(url string) func(context.Context) error {
			c := NewClient(url, ClientOptions{})
			return func(ctx context.Context) error { _, err := c.AllowRequest(ctx, "alice"); return err }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &resettingServer{served: map[string]int{}}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			call := tc.client(ts.URL)
			calls, lost := 0, 0
			for i := 0; i < 20; i++ {
				calls++
				if err := call(ctx); err != nil {
					require.ErrorIs(t, err, contract.ErrNoAnswer, "call %d", calls)
					lost++
				}
				if _, reset := srv.counts(); reset {
					break
				}
			}
			got, reset := srv.counts()
			require.True(t, reset, "no call came on a reused connection in %d calls", calls)
			assert.Equal(t, calls, got, "the limiter received %d requests for %d calls: the transport sent one again unseen", got, calls)
			assert.Equal(t, 1, lost, "the call whose connection was reset must be a call without an answer")
		})
	}
}

// TestSendOnceSendsABodilessRequestAsOne: the body that takes the replay
// away goes on the wire as no body at all (no Content-Length, no chunked
// encoding), as the request was before.
func TestSendOnceSendsABodilessRequestAsOne(t *testing.T) {
	type seen struct {
		te     []string
		length string
		body   int
	}
	got := make(chan seen, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.TransferEncoding, r.Header.Get("Content-Length"), len(b)}
	}))
	defer ts.Close()
	_, err := NewEndpoint(ts.URL, EndpointOptions{}).Do(context.Background(), "alice")
	require.NoError(t, err)
	assert.Equal(t, seen{}, <-got)
}

// twice is a transport that sends every request two times, as a transport
// that retries by itself would.
type twice struct{ http.RoundTripper }

func (t twice) RoundTrip(req *http.Request) (*http.Response, error) {
	if resp, err := t.RoundTripper.RoundTrip(req); err == nil {
		resp.Body.Close()
	}
	again := req.Clone(req.Context())
	if req.GetBody != nil {
		again.Body, _ = req.GetBody()
	}
	return t.RoundTripper.RoundTrip(again)
}

// TestSendOnceRefusesAnAnswerSentTwice: when a transport writes a request
// twice all the same, the answer is not the outcome of one request: the
// call is one without an answer.
func TestSendOnceRefusesAnAnswerSentTwice(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"allowed":true}`))
	}))
	defer ts.Close()
	c := NewClient(ts.URL, ClientOptions{HTTPClient: &http.Client{Transport: twice{http.DefaultTransport}}})
	_, err := c.AllowRequest(context.Background(), "alice")
	require.ErrorIs(t, err, contract.ErrNoAnswer)
	assert.Contains(t, err.Error(), "sent the request 2 times")
}

// BenchmarkEndpointGET is one endpoint call (a GET, which sendOnce gives
// an empty body that the transport probes) to a loopback server, on a
// reused connection.
func BenchmarkEndpointGET(b *testing.B) {
	ts := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer ts.Close()
	e := NewEndpoint(ts.URL, EndpointOptions{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Do(ctx, "alice"); err != nil {
			b.Fatal(err)
		}
	}
}
