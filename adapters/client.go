package adapters

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/internal/redact"
)

// DefaultTimeout bounds every call of a [Client] when none is given.
const DefaultTimeout = 5 * time.Second

// maxBody bounds how much of an answer is read.
const maxBody = 1 << 20

// Client is a [contract.RateLimiterContract] that speaks protocol v1 to a
// limiter at a base URL. Every call is bounded by a timeout as well as by
// its context.
//
// Typical usage:
//
//	c := adapters.NewClient("http://localhost:8080", adapters.ClientOptions{})
//	caps, err := c.Capabilities(ctx)
//	ok, err := c.AllowRequest(ctx, "alice")
type Client struct {
	base    *url.URL // nil when the URL does not parse: every call says so
	raw     string   // the base URL as given
	token   string
	secrets *redact.Secrets // of its URL and token: kept out of its errors
	http    *http.Client
	timeout time.Duration
	clock   fakeclock.Clock
	skew    *skew // shared by the copies WithClock makes
	failed  *StoreFailures
}

// skew estimates the target's clock against ours from the now_ms of its
// answers, keeping the estimate of the fastest round trip (the tightest).
type skew struct {
	mu     sync.Mutex
	offset time.Duration // target clock minus ours
	rtt    time.Duration
	ok     bool
}

func (s *skew) observe(nowMs int64, sent, returned time.Time) {
	rtt := returned.Sub(sent)
	mid := sent.Add(rtt / 2)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ok || rtt < s.rtt {
		s.offset, s.rtt, s.ok = time.UnixMilli(nowMs).Sub(mid), rtt, true
	}
}

// ClockOffset is how far the target's clock is ahead of this machine's, as
// the now_ms of its answers tell (within uncertainty: half the fastest round
// trip and a millisecond of rounding); ok is false when no answer carried
// now_ms.
func (c *Client) ClockOffset() (offset, uncertainty time.Duration, ok bool) {
	c.skew.mu.Lock()
	defer c.skew.mu.Unlock()
	return c.skew.offset, c.skew.rtt/2 + time.Millisecond, c.skew.ok
}

// ClientOptions configure a [Client].
type ClientOptions struct {
	// Timeout bounds each call (default [DefaultTimeout]).
	Timeout time.Duration
	// Clock, when set, is read for the X-Rlc-Now-Ms header of every
	// request (the real time when nil): set it only for targets that declare
	// clock control.
	Clock fakeclock.Clock
	// HTTPClient to use (default: a client of its own).
	HTTPClient *http.Client
	// Token, when not empty, is sent on every request as
	// "Authorization: Bearer <Token>" (rlconform serve --token-file).
	Token string
	// StoreFailures, when not nil, records the allow answers the target
	// says are its store-failure policy's ("store_failure").
	StoreFailures *StoreFailures
}

// NewClient returns a client for the protocol server at baseURL. The
// protocol's paths are appended to baseURL's path; its query, if any, is
// sent with every request (a key the server asks for, say). Errors show
// baseURL with its secrets redacted (a password, the value of api_key…),
// and neither those nor the token anywhere (a server that echoes them in
// an error body included).
func NewClient(baseURL string, opts ClientOptions) *Client {
	c := &Client{raw: baseURL, token: opts.Token, http: opts.HTTPClient, timeout: opts.Timeout, clock: opts.Clock, skew: &skew{}, failed: opts.StoreFailures}
	c.secrets = redact.NewSecrets(redact.MinScrubbed)
	c.secrets.AddURL(baseURL)
	c.secrets.Add(opts.Token)
	if u, err := url.Parse(baseURL); err == nil {
		u.Path, u.RawPath = strings.TrimRight(u.Path, "/"), strings.TrimRight(u.RawPath, "/")
		c.base = u
	}
	if c.http == nil {
		c.http = &http.Client{Transport: pooledTransport(), CheckRedirect: refuseRedirects}
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	return c
}

// WithClock returns a copy of c that sends clock's reading on every request.
func (c *Client) WithClock(clock fakeclock.Clock) *Client {
	d := *c
	d.clock = clock
	return &d
}

// Error is a failed protocol call: a non-2xx status, or an answer that is
// not what protocol v1 says.
type Error struct {
	Op     string // "POST /rlc/v1/allow"
	Status int    // 0 when the call did not get an answer
	Body   string // the answer, cut to a readable length
	Err    error  // the cause, possibly [contract.ErrInvalidConfig] or [contract.ErrInvalidUserID]
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": status %d", e.Status)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if e.Body != "" {
		fmt.Fprintf(&b, " (body %q)", e.Body)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Capabilities asks the target what it supports. A 404 means configure,
// remaining and reset but no clock. A "store_failure" other than "error",
// "allow" or "deny" is an error.
func (c *Client) Capabilities(ctx context.Context) (contract.Capabilities, error) {
	var body capabilitiesBody
	status, err := c.call(ctx, http.MethodGet, PathCapabilities, nil, &body, func(status int) bool { return status == http.StatusNotFound })
	if err != nil {
		return contract.Capabilities{}, err
	}
	if status == http.StatusNotFound {
		return contract.Capabilities{Configure: true, Remaining: true, Reset: true}, nil
	}
	op := "GET " + PathCapabilities
	var missing []string
	get := func(name string, v *bool) bool {
		if v == nil {
			missing = append(missing, name)
			return false
		}
		return *v
	}
	caps := contract.Capabilities{
		Clock: get("clock", body.Clock), Configure: get("configure", body.Configure),
		Remaining: get("remaining", body.Remaining), Reset: get("reset", body.Reset),
		Cost: body.Cost != nil && *body.Cost,
	}
	if len(missing) > 0 {
		return caps, &Error{Op: op, Status: status, Err: fmt.Errorf("answer lacks %s", strings.Join(missing, ", "))}
	}
	if g := body.WindowGranularityMs; g != nil {
		if *g < 1 || *g > contract.MaxWindowGranularity.Milliseconds() {
			return caps, &Error{Op: op, Status: status, Err: fmt.Errorf("window_granularity_ms %d: want 1 to %d (an hour)", *g, contract.MaxWindowGranularity.Milliseconds())}
		}
		caps.WindowGranularity = time.Duration(*g) * time.Millisecond
	}
	if p := body.StoreFailure; p != nil {
		policy, err := contract.ParseStoreFailure(*p)
		if err != nil || *p == "" {
			return caps, &Error{Op: op, Status: status, Err: fmt.Errorf("store_failure %q: want \"error\", \"allow\" or \"deny\" (or no field: error)", *p)}
		}
		caps.StoreFailure = policy
	}
	return caps, nil
}

// AllowRequest implements [contract.RateLimiterContract]: an allow
// without a cost, which every protocol v1 target takes.
func (c *Client) AllowRequest(ctx context.Context, userID string) (bool, error) {
	return c.allow(ctx, userBody{userID})
}

// AllowRequestN implements [contract.CostLimiter]: an allow with a "cost",
// for a target that declares the capability. A 400 answer wraps
// [contract.ErrInvalidCost] (the one to an allow without a cost wraps
// [contract.ErrInvalidUserID]).
func (c *Client) AllowRequestN(ctx context.Context, userID string, n int) (bool, error) {
	return c.allow(ctx, allowInBody{UserID: userID, Cost: &n})
}

func (c *Client) allow(ctx context.Context, in any) (bool, error) {
	var body allowBody
	sent := time.Now()
	if _, err := c.call(ctx, http.MethodPost, PathAllow, in, &body, nil); err != nil {
		return false, err
	}
	if body.NowMs != nil {
		c.skew.observe(*body.NowMs, sent, time.Now())
	}
	if body.Allowed == nil {
		return false, &Error{Op: "POST " + PathAllow, Status: 200, Err: errors.New(`answer lacks "allowed"`)}
	}
	if p := body.StoreFailure; p != nil {
		if err := policyAnswer(*p, *body.Allowed); err != nil {
			return false, &Error{Op: "POST " + PathAllow, Status: 200, Err: fmt.Errorf("malformed answer: %w", err)}
		}
		c.failed.add(*p, sent, time.Now())
	}
	return *body.Allowed, nil
}

// GetRemainingRequests implements [contract.RateLimiterContract].
func (c *Client) GetRemainingRequests(ctx context.Context, userID string) (int, error) {
	var body remainingBody
	sent := time.Now()
	if _, err := c.call(ctx, http.MethodPost, PathRemaining, userBody{userID}, &body, nil); err != nil {
		return 0, err
	}
	if body.NowMs != nil {
		c.skew.observe(*body.NowMs, sent, time.Now())
	}
	if body.Remaining == nil {
		return 0, &Error{Op: "POST " + PathRemaining, Status: 200, Err: errors.New(`answer lacks "remaining"`)}
	}
	return *body.Remaining, nil
}

// Reset implements [contract.RateLimiterContract].
func (c *Client) Reset(ctx context.Context, userID string) error {
	_, err := c.call(ctx, http.MethodPost, PathReset, userBody{userID}, nil, nil)
	return err
}

// Configure implements [contract.RateLimiterContract]. A 400 answer wraps
// [contract.ErrInvalidConfig].
//
// Every call maps a 400 answer to [contract.ErrInvalidConfig] (configure),
// [contract.ErrInvalidCost] (an allow with a cost) or
// [contract.ErrInvalidUserID] (the others), and a 503 to
// [contract.ErrStore]; the target's own "error" text is kept in the message.
// Redirects are not followed: a 3xx answer is an error.
func (c *Client) Configure(ctx context.Context, maxRequests int, window time.Duration) error {
	_, err := c.call(ctx, http.MethodPost, PathConfigure, configureBody{maxRequests, window.Milliseconds()}, nil, nil)
	return err
}

// call sends one request and decodes a 2xx answer into out (when not nil).
// ok, when not nil, accepts further statuses without decoding.
func (c *Client) call(ctx context.Context, method, path string, in, out any, ok func(int) bool) (int, error) {
	op := method + " " + path
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, &Error{Op: op, Err: err}
		}
		body = bytes.NewReader(b)
	}
	if c.base == nil {
		_, err := url.Parse(c.raw)
		return 0, &Error{Op: op, Err: fmt.Errorf("target URL: %w", redact.Error(err))}
	}
	target := *c.base
	target.Path += path
	if target.RawPath != "" {
		target.RawPath += path
	}
	req, err := http.NewRequestWithContext(ctx, method, target.String(), body)
	if err != nil {
		return 0, &Error{Op: op, Err: redact.Error(err)}
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	// Every request carries the header, the probes included: a target with
	// clock control may insist on it. Without a clock of the spec's, it is
	// the real time, which a target without clock control ignores.
	now := time.Now()
	if c.clock != nil {
		now = c.clock.Now()
	}
	req.Header.Set(HeaderNow, strconv.FormatInt(now.UnixMilli(), 10))
	resp, err := sendOnce(c.http, req)
	if err != nil {
		err = redact.Error(err) // net/http quotes the URL, query and all
		if ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("no answer within %v: %w", c.timeout, err)
		}
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("%w: %w", contract.ErrNoAnswer, err)
		}
		return 0, &Error{Op: op, Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return resp.StatusCode, &Error{Op: op, Status: resp.StatusCode, Err: fmt.Errorf("reading the answer: %w: %w", contract.ErrNoAnswer, redact.Error(err))}
	}
	tooLong := len(raw) > maxBody
	raw = raw[:min(len(raw), maxBody)]
	if ok != nil && ok(resp.StatusCode) {
		return resp.StatusCode, nil
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := &Error{Op: op, Status: resp.StatusCode, Body: c.secrets.Text(cut(raw))}
		var sentinel error
		switch {
		case resp.StatusCode == http.StatusBadRequest && path == PathConfigure:
			sentinel = contract.ErrInvalidConfig
		case resp.StatusCode == http.StatusBadRequest && isCostBody(in):
			sentinel = contract.ErrInvalidCost
		case resp.StatusCode == http.StatusBadRequest:
			sentinel = contract.ErrInvalidUserID
		case resp.StatusCode == http.StatusServiceUnavailable:
			sentinel = contract.ErrStore
		case resp.StatusCode >= 300 && resp.StatusCode < 400:
			e.Err = fmt.Errorf("redirected to %q: rlconform does not follow redirects; grade the address that answers", redact.URL(resp.Header.Get("Location")))
		}
		if sentinel != nil {
			var eb errorBody
			json.Unmarshal(raw, &eb)
			e.Err = &statusError{said: c.secrets.Text(eb.Error), kind: sentinel}
		}
		return resp.StatusCode, e
	}
	if out != nil {
		if tooLong {
			return resp.StatusCode, &Error{Op: op, Status: resp.StatusCode, Body: c.secrets.Text(cut(raw)), Err: fmt.Errorf("malformed answer: over %d bytes", maxBody)}
		}
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, &Error{Op: op, Status: resp.StatusCode, Body: c.secrets.Text(cut(raw)), Err: fmt.Errorf("malformed answer: %w", err)}
		}
	}
	return resp.StatusCode, nil
}

// isCostBody reports whether in is an allow that carries a cost.
func isCostBody(in any) bool {
	_, ok := in.(allowInBody)
	return ok
}

func cut(b []byte) string {
	const n = 300
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// pooledTransport is http.DefaultTransport keeping as many idle connections
// to one host as concurrent callers use: the default two make every other
// call of a loaded grader open a connection (thousands in TIME_WAIT within
// seconds), which is then measured as the target's latency.
func pooledTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 1024, 1024
	return t
}

// refuseRedirects keeps the grader on the address it was given: a target
// that redirects elsewhere would have another host graded in its name.
func refuseRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// statusError is what a status of the protocol means ([contract.ErrStore]
// for 503, an invalid-input sentinel for 400), with the target's own words.
type statusError struct {
	said string // the "error" field of the answer, if any
	kind error
}

func (e *statusError) Error() string {
	if e.said == "" {
		return e.kind.Error() + " (the answer gave no \"error\" field)"
	}
	return fmt.Sprintf("%v; the target says %q", e.kind, e.said)
}

func (e *statusError) Unwrap() error { return e.kind }
