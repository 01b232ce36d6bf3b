package adapters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
)

// Handler serves protocol v1 for lim. When clock is not nil the handler
// declares clock control and sets clock to each request's X-Rlc-Now-Ms (the
// real time when a request has none) before calling lim, which must read
// "now" from that clock. Concurrent requests must then carry the same
// instant, as rlconform's do: the clock is one for all of them.
func Handler(lim contract.RateLimiterContract, clock *fakeclock.Fake) http.Handler {
	s := &handler{lim: lim, clock: clock}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathCapabilities, s.capabilities)
	mux.HandleFunc("POST "+PathConfigure, s.configure)
	mux.HandleFunc("POST "+PathAllow, s.allow)
	mux.HandleFunc("POST "+PathRemaining, s.remaining)
	mux.HandleFunc("POST "+PathReset, s.reset)
	return mux
}

type handler struct {
	lim   contract.RateLimiterContract
	clock *fakeclock.Fake
}

func (s *handler) capabilities(w http.ResponseWriter, _ *http.Request) {
	t := true
	clock := s.clock != nil
	writeJSON(w, http.StatusOK, capabilitiesBody{Clock: &clock, Configure: &t, Remaining: &t, Reset: &t})
}

// now applies the request's clock header; it reports false after writing a
// 400 when the header is malformed.
func (s *handler) now(w http.ResponseWriter, r *http.Request) bool {
	if s.clock == nil {
		return true
	}
	v := r.Header.Get(HeaderNow)
	if v == "" {
		s.clock.Set(time.Now())
		return true
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody{fmt.Sprintf("%s: %q is not unix milliseconds", HeaderNow, v)})
		return false
	}
	s.clock.Set(time.UnixMilli(ms))
	return true
}

func (s *handler) configure(w http.ResponseWriter, r *http.Request) {
	var in configureBody
	if !decode(w, r, &in) {
		return
	}
	if err := s.lim.Configure(r.Context(), in.MaxRequests, time.Duration(in.WindowMs)*time.Millisecond); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *handler) allow(w http.ResponseWriter, r *http.Request) {
	var in userBody
	if !decode(w, r, &in) || !s.now(w, r) {
		return
	}
	ok, err := s.lim.AllowRequest(r.Context(), in.UserID)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, allowBody{Allowed: &ok})
}

func (s *handler) remaining(w http.ResponseWriter, r *http.Request) {
	var in userBody
	if !decode(w, r, &in) || !s.now(w, r) {
		return
	}
	n, err := s.lim.GetRemainingRequests(r.Context(), in.UserID)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, remainingBody{Remaining: &n})
}

func (s *handler) reset(w http.ResponseWriter, r *http.Request) {
	var in userBody
	if !decode(w, r, &in) || !s.now(w, r) {
		return
	}
	if err := s.lim.Reset(r.Context(), in.UserID); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(v); err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody{"malformed request body: " + err.Error()})
		return false
	}
	return true
}

// writeError maps the contract's errors to 400 and everything else (store
// failures) to 503.
func writeError(w http.ResponseWriter, err error) {
	status := http.StatusServiceUnavailable
	if errors.Is(err, contract.ErrInvalidConfig) || errors.Is(err, contract.ErrInvalidUserID) {
		status = http.StatusBadRequest
	}
	writeJSON(w, status, errorBody{err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// Server is a protocol v1 server on a loopback port, in the style of
// httptest.Server.
//
// Typical usage:
//
//	srv, err := adapters.NewServer(lim, clock)
//	defer srv.Close()
//	client := adapters.NewClient(srv.URL, adapters.ClientOptions{})
type Server struct {
	// URL is the base URL, http://127.0.0.1:port.
	URL  string
	http *http.Server
	done chan struct{}
}

// NewServer serves lim (see [Handler] for clock) on 127.0.0.1 at a free port.
func NewServer(lim contract.RateLimiterContract, clock *fakeclock.Fake) (*Server, error) {
	return Listen("127.0.0.1:0", lim, clock)
}

// Listen serves lim (see [Handler] for clock) on addr.
func Listen(addr string, lim contract.RateLimiterContract, clock *fakeclock.Fake) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("adapters: listening on %s: %w", addr, err)
	}
	s := &Server{
		URL:  "http://" + l.Addr().String(),
		http: &http.Server{Handler: Handler(lim, clock), ReadHeaderTimeout: 10 * time.Second},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		s.http.Serve(l)
	}()
	return s, nil
}

// Close stops the server and waits for it.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.http.Shutdown(ctx)
	<-s.done
	return err
}
