package adapters

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
)

// Handler serves protocol v1 for lim. When clock is not nil the handler
// declares clock control and sets clock to each request's X-Rlc-Now-Ms (the
// real time when a request has none) before calling lim, which must read
// "now" from that clock. Concurrent requests must then carry the same
// instant, as rlconform's do: the clock is one for all of them.
func Handler(lim contract.RateLimiterContract, clock *fakeclock.Fake) http.Handler {
	return handlerWith(lim, clock, 0)
}

// handlerWith is Handler declaring the window granularity g (0: none).
func handlerWith(lim contract.RateLimiterContract, clock *fakeclock.Fake, g time.Duration) http.Handler {
	s := &handler{lim: lim, clock: clock, granularity: g}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathCapabilities, s.capabilities)
	mux.HandleFunc("POST "+PathConfigure, s.configure)
	mux.HandleFunc("POST "+PathAllow, s.allow)
	mux.HandleFunc("POST "+PathRemaining, s.remaining)
	mux.HandleFunc("POST "+PathReset, s.reset)
	return guard(mux)
}

// maxServedUserIDBytes bounds the ids the server accepts: the contract
// promises [contract.MaxUserIDBytes]; far longer ids only cost memory.
const maxServedUserIDBytes = 4096

// maxRequestBody bounds a request's body: room for the longest id served,
// every byte of it escaped.
const maxRequestBody = 64 << 10

// RequireToken answers 401, with a JSON error, every request that does not
// carry "Authorization: Bearer <token>", and passes the others to next.
// The comparison takes the same time whatever the request sent.
func RequireToken(token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte("Bearer " + token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := sha256.Sum256([]byte(r.Header.Get("Authorization")))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="rlconform"`)
			writeJSON(w, http.StatusUnauthorized, errorBody{"this server asks for Authorization: Bearer <token> (rlconform serve --token-file); give it with rlconform run --target-token-file"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// guard refuses what a browser could send on a user's behalf: a POST
// without a JSON content type (a cross-site form or text/plain request),
// or a request from a page of another origin.
func guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host && o != "https://"+r.Host {
			writeJSON(w, http.StatusForbidden, errorBody{fmt.Sprintf("cross-origin request from %q refused", o)})
			return
		}
		if r.Method == http.MethodPost {
			ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if ct != "application/json" {
				writeJSON(w, http.StatusUnsupportedMediaType, errorBody{"the body must be application/json"})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackOnly refuses requests whose Host is not a loopback name, so that a
// web page cannot reach a loopback server through DNS rebinding.
func loopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		ip := net.ParseIP(strings.Trim(host, "[]"))
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			writeJSON(w, http.StatusMisdirectedRequest, errorBody{fmt.Sprintf("Host %q refused: this server listens on loopback only", r.Host)})
			return
		}
		next.ServeHTTP(w, r)
	})
}

type handler struct {
	lim   contract.RateLimiterContract
	clock *fakeclock.Fake
	// granularity is declared in the capabilities (0: not declared).
	granularity time.Duration
}

func (s *handler) capabilities(w http.ResponseWriter, _ *http.Request) {
	t := true
	clock := s.clock != nil
	body := capabilitiesBody{Clock: &clock, Configure: &t, Remaining: &t, Reset: &t}
	if g := s.granularity.Milliseconds(); g > 0 {
		body.WindowGranularityMs = &g
	}
	if _, ok := s.lim.(contract.CostLimiter); ok {
		body.Cost = &t
	}
	writeJSON(w, http.StatusOK, body)
}

// nowMs is the instant of the decision just made, for the answer's now_ms:
// the fake clock's, else this machine's (which a limiter without clock
// control reads, unless it reads its store's).
func (s *handler) nowMs() *int64 {
	t := time.Now()
	if s.clock != nil {
		t = s.clock.Now()
	}
	ms := t.UnixMilli()
	return &ms
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
	// Reject what a time.Duration or the contract cannot hold before
	// converting, so that no value wraps around into a valid one.
	if in.MaxRequests < 1 || in.MaxRequests > contract.MaxLimit || in.WindowMs < 1 || in.WindowMs > contract.MaxWindow.Milliseconds() {
		writeJSON(w, http.StatusBadRequest, errorBody{fmt.Sprintf("%v: max_requests %d (want 1 to %d), window_ms %d (want 1 to %d)",
			contract.ErrInvalidConfig, in.MaxRequests, contract.MaxLimit, in.WindowMs, contract.MaxWindow.Milliseconds())})
		return
	}
	if err := s.lim.Configure(r.Context(), in.MaxRequests, time.Duration(in.WindowMs)*time.Millisecond); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *handler) allow(w http.ResponseWriter, r *http.Request) {
	var in allowInBody
	if !decode(w, r, &in) || !s.now(w, r) {
		return
	}
	var ok bool
	var err error
	switch costly, weighted := s.lim.(contract.CostLimiter); {
	case in.Cost == nil:
		ok, err = s.lim.AllowRequest(r.Context(), in.UserID)
	case weighted: // a negative cost too: what the limiter makes of it is graded
		ok, err = costly.AllowRequestN(r.Context(), in.UserID, *in.Cost)
	case *in.Cost < 0:
		err = contract.ValidateCost(*in.Cost)
	case *in.Cost == 1:
		ok, err = s.lim.AllowRequest(r.Context(), in.UserID)
	default:
		writeJSON(w, http.StatusBadRequest, errorBody{fmt.Sprintf("%v: cost %d: this limiter takes no cost (its capabilities say so)", contract.ErrInvalidCost, *in.Cost)})
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, allowBody{Allowed: &ok, NowMs: s.nowMs()})
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
	writeJSON(w, http.StatusOK, remainingBody{Remaining: &n, NowMs: s.nowMs()})
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

// decode reads exactly one JSON object of v's fields, of at most
// maxRequestBody bytes. Unknown fields and trailing data are refused;
// duplicate keys are not detected (the standard decoder keeps the last),
// which the protocol documents. A user id must be valid UTF-8 with no
// escaped lone surrogate (JSON cannot carry other bytes, and a decoder
// replaces both with U+FFFD, merging distinct ids) and at most
// maxServedUserIDBytes long.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{fmt.Sprintf("request body over %d bytes", maxRequestBody)})
		return false
	case err != nil:
		writeJSON(w, http.StatusBadRequest, errorBody{"reading the request body: " + err.Error()})
		return false
	case !utf8.Valid(raw):
		writeJSON(w, http.StatusBadRequest, errorBody{contract.ErrInvalidUserID.Error() + ": the body is not valid UTF-8 (JSON cannot carry other bytes; ids that differ only there would merge)"})
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("trailing data after the JSON object")
	}
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			err = errors.New("trailing data after the JSON object")
		}
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody{"malformed request body: " + err.Error()})
		return false
	}
	if loneSurrogate(raw) {
		writeJSON(w, http.StatusBadRequest, errorBody{contract.ErrInvalidUserID.Error() + ": the body escapes a lone UTF-16 surrogate (\\ud800 to \\udfff not in a pair): it is no character, and a decoder replaces it with U+FFFD, merging distinct ids"})
		return false
	}
	if u, ok := v.(interface{ userID() string }); ok && len(u.userID()) > maxServedUserIDBytes {
		writeJSON(w, http.StatusBadRequest, errorBody{fmt.Sprintf("%v: user_id of %d bytes, this server takes at most %d", contract.ErrInvalidUserID, len(u.userID()), maxServedUserIDBytes)})
		return false
	}
	return true
}

// loneSurrogate reports whether the JSON text raw holds a \u escape of a
// UTF-16 surrogate (U+D800 to U+DFFF) that is not a high one followed by
// the escape of a low one. Outside strings, valid JSON has no backslash.
func loneSurrogate(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if i+1 >= len(raw) || raw[i+1] != 'u' {
			i++ // a one-character escape: \\, \", \n...
			continue
		}
		r, ok := hex4(raw, i+2)
		switch {
		case !ok || !utf16.IsSurrogate(r):
		case r >= 0xdc00: // a low half first
			return true
		default:
			low, ok := hex4(raw, i+8)
			if i+7 >= len(raw) || raw[i+6] != '\\' || raw[i+7] != 'u' || !ok || low < 0xdc00 || low > 0xdfff {
				return true
			}
			i += 6 // the low half
		}
		i += 5
	}
	return false
}

// hex4 is the rune of the four hex digits at raw[at:].
func hex4(raw []byte, at int) (rune, bool) {
	if at+4 > len(raw) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(raw[at:at+4]), 16, 16)
	return rune(n), err == nil
}

// writeError maps the contract's errors to 400 and everything else (store
// failures) to 503.
func writeError(w http.ResponseWriter, err error) {
	status := http.StatusServiceUnavailable
	if errors.Is(err, contract.ErrInvalidConfig) || errors.Is(err, contract.ErrInvalidUserID) || errors.Is(err, contract.ErrInvalidCost) {
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
	return ListenWith(addr, lim, clock, ServerOptions{})
}

// ServerOptions configure a [Server] beyond its limiter.
type ServerOptions struct {
	// Token, when not empty, must be sent by every request as
	// "Authorization: Bearer <Token>" (see [RequireToken]). Configure and
	// reset change and delete a limiter's state: a server that other
	// machines reach needs one.
	Token string
	// WindowGranularity, when not 0, is declared in the capabilities
	// (window_granularity_ms): the unit the served limiter's windows come
	// in. A limiter that takes any window of whole milliseconds declares
	// time.Millisecond, and is then graded on windows as short as its
	// round trips allow (rlconform serve does, for the limiters it has).
	WindowGranularity time.Duration
}

// ListenWith is [Listen] with options.
func ListenWith(addr string, lim contract.RateLimiterContract, clock *fakeclock.Fake, opts ServerOptions) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("adapters: listening on %s: %w", addr, err)
	}
	if g := opts.WindowGranularity; g < 0 || g%time.Millisecond != 0 || g > contract.MaxWindowGranularity {
		l.Close()
		return nil, fmt.Errorf("adapters: WindowGranularity %v: want 0 (not declared) or whole milliseconds up to %v", g, contract.MaxWindowGranularity)
	}
	h := handlerWith(lim, clock, opts.WindowGranularity)
	if opts.Token != "" {
		h = RequireToken(opts.Token, h)
	}
	if ap, err := netip.ParseAddrPort(l.Addr().String()); err == nil && ap.Addr().IsLoopback() {
		h = loopbackOnly(h)
	}
	s := &Server{
		URL: "http://" + l.Addr().String(),
		http: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 64 << 10},
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
