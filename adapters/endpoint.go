package adapters

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/redact"
)

// Identity is how an [Endpoint] presents a user to a service: in a
// request header, a query parameter, as a bearer token, or not at all
// (none: one limit shared by every request).
type Identity struct {
	Kind string // header, query, bearer or none
	Name string // the header or parameter
}

// ParseIdentity parses header:NAME, query:NAME, bearer or none.
func ParseIdentity(s string) (Identity, error) {
	kind, name, _ := strings.Cut(s, ":")
	switch {
	case (kind == "bearer" || kind == "none") && name == "":
		return Identity{Kind: kind}, nil
	case (kind == "header" || kind == "query") && name != "":
		if kind == "header" && !validHeaderName(name) {
			return Identity{}, fmt.Errorf("identity %q: %q is not a header name", s, name)
		}
		return Identity{Kind: kind, Name: name}, nil
	}
	return Identity{}, fmt.Errorf("identity %q: want header:NAME, query:NAME, bearer or none", s)
}

func (i Identity) String() string {
	if i.Kind == "bearer" || i.Kind == "none" {
		return i.Kind
	}
	return i.Kind + ":" + i.Name
}

func validHeaderName(s string) bool {
	for _, r := range s {
		if r > 126 || r <= 32 || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return s != ""
}

// value is the identity's wire form of a user id: the id itself when it is
// made of letters, digits and ._:~- (the grader's ids are), otherwise, and
// always for a bearer token, "b64." and its unpadded base64url, so that
// distinct ids stay distinct.
func (i Identity) value(user string) string {
	safe := i.Kind != "bearer"
	for _, r := range user {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:~-", r)) {
			safe = false
		}
	}
	if safe {
		return user
	}
	return "b64." + base64.RawURLEncoding.EncodeToString([]byte(user))
}

// Policy is the limit a service is meant to enforce: N requests per W.
type Policy struct {
	Limit  int
	Window time.Duration
}

func (p Policy) String() string { return fmt.Sprintf("%d/%v", p.Limit, p.Window) }

// ParsePolicy parses N/W: 10/1s, 100/1m, 1000/1d, 5/500ms (d is 24h).
func ParsePolicy(s string) (Policy, error) {
	n, w, ok := strings.Cut(s, "/")
	limit, err := strconv.Atoi(n)
	if !ok || err != nil {
		return Policy{}, fmt.Errorf("policy %q: want N/W, e.g. 10/1s or 100/1m", s)
	}
	var window time.Duration
	if days, isDay := strings.CutSuffix(w, "d"); isDay {
		d, err := strconv.Atoi(days)
		if err != nil {
			return Policy{}, fmt.Errorf("policy %q: window %q: want a Go duration or whole days (1d)", s, w)
		}
		window = time.Duration(d) * 24 * time.Hour
	} else if window, err = time.ParseDuration(w); err != nil {
		return Policy{}, fmt.Errorf("policy %q: window %q: want a Go duration or whole days (1d)", s, w)
	}
	if err := contract.ValidateConfig(limit, window); err != nil {
		return Policy{}, fmt.Errorf("policy %q: %w", s, err)
	}
	return Policy{Limit: limit, Window: window}, nil
}

// EndpointOptions say how to call a service.
type EndpointOptions struct {
	Method string      // default GET
	Header http.Header // added to every request (authentication, say)
	Body   []byte      // sent with every request
	// Identity presents each user.
	Identity Identity
	// LimitedStatus is what a refusal looks like (default 429); any other
	// status but 2xx is an error of the service, never a decision.
	LimitedStatus int
	// Pace, when set, is waited on before every request: the bound on the
	// load the grader sends, shared by every replica.
	Pace *Pacer
	// Timeout bounds every request (default DefaultTimeout).
	Timeout time.Duration
}

// Endpoint grades a deployed HTTP service as a black box: AllowRequest
// sends one request as the user and reads the decision from the status.
// It is a [contract.RateLimiterContract] with no Configure, remaining
// query or Reset (those return errors): the policy is the service's own.
type Endpoint struct {
	url     string
	opts    EndpointOptions
	http    *http.Client
	secrets *redact.Secrets // of its URL and headers: kept out of its errors
}

// NewEndpoint returns an endpoint client for url. Its errors show url
// with its secrets redacted, and no value of its headers (a service that
// echoes its key in an error body included).
func NewEndpoint(rawURL string, opts EndpointOptions) *Endpoint {
	if opts.Method == "" {
		opts.Method = http.MethodGet
	}
	if opts.LimitedStatus == 0 {
		opts.LimitedStatus = http.StatusTooManyRequests
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	secrets := redact.NewSecrets(redact.MinScrubbed)
	secrets.AddURL(rawURL)
	for _, vs := range opts.Header {
		for _, v := range vs {
			secrets.AddHeader(v)
		}
	}
	return &Endpoint{url: rawURL, opts: opts, secrets: secrets, http: &http.Client{
		Transport:     pooledTransport(),
		Timeout:       opts.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Response is one answer of the service.
type Response struct {
	Status  int
	Allowed bool
	Header  http.Header
	// Sent and Returned bound the instant the service decided.
	Sent, Returned time.Time
	Fields         Fields
}

// Do sends one request as user and returns the service's answer; a status
// that is neither 2xx nor the refusal status is an error.
func (e *Endpoint) Do(ctx context.Context, user string) (*Response, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return nil, err
	}
	if e.opts.Pace != nil {
		if err := e.opts.Pace.Wait(ctx); err != nil {
			return nil, fmt.Errorf("waiting for --max-rps: %w", err)
		}
	}
	target := e.url
	if e.opts.Identity.Kind == "query" {
		u, err := url.Parse(e.url)
		if err != nil {
			return nil, fmt.Errorf("endpoint %q: %w", redact.URL(e.url), redact.Error(err))
		}
		q := u.Query()
		q.Set(e.opts.Identity.Name, e.opts.Identity.value(user))
		u.RawQuery = q.Encode()
		target = u.String()
	}
	var body io.Reader
	if e.opts.Body != nil {
		body = bytes.NewReader(e.opts.Body)
	}
	req, err := http.NewRequestWithContext(ctx, e.opts.Method, target, body)
	if err != nil {
		return nil, fmt.Errorf("endpoint request: %w", redact.Error(err))
	}
	for k, vs := range e.opts.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	switch e.opts.Identity.Kind {
	case "header":
		req.Header.Set(e.opts.Identity.Name, e.opts.Identity.value(user))
	case "bearer":
		req.Header.Set("Authorization", "Bearer "+e.opts.Identity.value(user))
	}
	sent := time.Now()
	resp, err := e.http.Do(req)
	if err != nil {
		err = redact.Error(err) // net/http quotes the URL, query and all
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("%w: %w", contract.ErrNoAnswer, err)
		}
		return nil, fmt.Errorf("%s %s: %w", e.opts.Method, redact.URL(e.url), err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	returned := time.Now()
	r := &Response{Status: resp.StatusCode, Header: resp.Header, Sent: sent, Returned: returned}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		r.Allowed = true
	case resp.StatusCode == e.opts.LimitedStatus:
	default:
		return r, fmt.Errorf("the service answered %d %s (neither 2xx nor the refusal %d): %s",
			resp.StatusCode, http.StatusText(resp.StatusCode), e.opts.LimitedStatus, e.secrets.Text(strings.TrimSpace(string(firstBytes(text, 200)))))
	}
	r.Fields = ParseFields(resp.Header, returned)
	return r, nil
}

func firstBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// AllowRequest implements [contract.RateLimiterContract]: one request.
func (e *Endpoint) AllowRequest(ctx context.Context, user string) (bool, error) {
	r, err := e.Do(ctx, user)
	if err != nil {
		return false, err
	}
	return r.Allowed, nil
}

// AllowRequestSent is AllowRequest with the instant the request left,
// after the pacing wait: the grader times the service from then.
func (e *Endpoint) AllowRequestSent(ctx context.Context, user string) (bool, time.Time, error) {
	r, err := e.Do(ctx, user)
	if err != nil {
		return false, time.Time{}, err
	}
	return r.Allowed, r.Sent, nil
}

var errEndpoint = errors.New("a black-box endpoint has no such operation")

// Configure implements [contract.RateLimiterContract]: not supported.
func (e *Endpoint) Configure(context.Context, int, time.Duration) error {
	return fmt.Errorf("Configure: %w", errEndpoint)
}

// GetRemainingRequests implements [contract.RateLimiterContract]: not
// supported (remaining is read from the RateLimit fields of answers).
func (e *Endpoint) GetRemainingRequests(context.Context, string) (int, error) {
	return 0, fmt.Errorf("GetRemainingRequests: %w", errEndpoint)
}

// Reset implements [contract.RateLimiterContract]: not supported.
func (e *Endpoint) Reset(context.Context, string) error { return fmt.Errorf("Reset: %w", errEndpoint) }

// Fields are what an answer says of the limit, in any of the forms
// services use: Retry-After (RFC 9110), the RateLimit and RateLimit-Policy
// structured fields of draft-ietf-httpapi-ratelimit-headers, the draft-6
// RateLimit-Limit/-Remaining/-Reset and X-RateLimit-Limit/-Remaining/-Reset.
type Fields struct {
	// RetryAfter, when HasRetryAfter, is the delay Retry-After gives.
	RetryAfter    time.Duration
	HasRetryAfter bool
	// Remaining (r) and Reset (t, the delay until more quota) when
	// HasRemaining / HasReset; Form says which fields gave them: "draft"
	// (RateLimit), "draft-6" (RateLimit-Remaining) or "x" (X-RateLimit-*).
	Remaining    int
	HasRemaining bool
	Reset        time.Duration
	HasReset     bool
	Form         string
	// ResetAt, when not zero, is the instant a -Reset field named (an
	// epoch timestamp, as GitHub's X-RateLimit-Reset is): a client waits
	// until then, and Reset is only that instant's distance from the
	// answer, in whole seconds.
	ResetAt time.Time
	// PolicyLimit and PolicyWindow, when HasPolicy: RateLimit-Policy's q
	// and w (or a -Limit field's N, with no window).
	PolicyLimit  int
	PolicyWindow time.Duration
	HasPolicy    bool
	// Errs are the fields present but malformed.
	Errs []error
}

// ParseFields reads the rate-limit fields of an answer received at now.
func ParseFields(h http.Header, now time.Time) Fields {
	var f Fields
	if v := h.Get("Retry-After"); v != "" {
		if secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && secs >= 0 {
			f.RetryAfter, f.HasRetryAfter = time.Duration(secs)*time.Second, true
		} else if at, err := http.ParseTime(v); err == nil {
			base := now
			if d, err := http.ParseTime(h.Get("Date")); err == nil {
				base = d // the server's own clock
			}
			f.RetryAfter, f.HasRetryAfter = max(0, at.Sub(base)), true
		} else {
			f.Errs = append(f.Errs, fmt.Errorf("Retry-After %q is neither delta-seconds nor an HTTP-date", v))
		}
	}
	if vs := h.Values("RateLimit-Policy"); len(vs) > 0 {
		if l, err := httpsfv.UnmarshalList(vs); err != nil || len(l) == 0 {
			f.Errs = append(f.Errs, fmt.Errorf("RateLimit-Policy %q is not a structured list: %v", strings.Join(vs, ", "), err))
		} else if it, ok := l[0].(httpsfv.Item); ok {
			q, okq := intParam(it, "q")
			w, okw := intParam(it, "w")
			if okq && okw {
				f.PolicyLimit, f.PolicyWindow, f.HasPolicy = int(q), time.Duration(w)*time.Second, true
			} else {
				f.Errs = append(f.Errs, fmt.Errorf("RateLimit-Policy %q lacks an integer q and w", strings.Join(vs, ", ")))
			}
		}
	}
	if vs := h.Values("RateLimit"); len(vs) > 0 {
		if l, err := httpsfv.UnmarshalList(vs); err != nil || len(l) == 0 {
			f.Errs = append(f.Errs, fmt.Errorf("RateLimit %q is not a structured list: %v", strings.Join(vs, ", "), err))
		} else if it, ok := l[0].(httpsfv.Item); ok {
			f.Form = "draft"
			if r, ok := intParam(it, "r"); ok {
				f.Remaining, f.HasRemaining = int(r), true
			}
			if t, ok := intParam(it, "t"); ok {
				f.Reset, f.HasReset = time.Duration(t)*time.Second, true
			}
		}
	}
	for _, form := range []struct{ name, prefix string }{{"draft-6", "RateLimit-"}, {"x", "X-RateLimit-"}} {
		if f.Form != "" {
			break
		}
		rem, okr := headerInt(h, form.prefix+"Remaining")
		reset, okt := headerInt(h, form.prefix+"Reset")
		limit, okl := headerInt(h, form.prefix+"Limit")
		if !okr && !okt && !okl {
			continue
		}
		f.Form = form.name
		if okr {
			f.Remaining, f.HasRemaining = int(rem), true
		}
		if okt {
			// Some services (GitHub's X-RateLimit-Reset) send an epoch
			// instant, not a delay.
			if reset > 1_000_000_000 {
				f.ResetAt = time.Unix(reset, 0)
				f.Reset, f.HasReset = max(0, f.ResetAt.Sub(now).Round(time.Second)), true
			} else {
				f.Reset, f.HasReset = time.Duration(reset)*time.Second, true
			}
		}
		if okl && !f.HasPolicy {
			f.PolicyLimit, f.HasPolicy = int(limit), true
		}
	}
	return f
}

func intParam(it httpsfv.Item, k string) (int64, bool) {
	if it.Params == nil {
		return 0, false
	}
	v, ok := it.Params.Get(k)
	n, isInt := v.(int64)
	return n, ok && isInt
}

func headerInt(h http.Header, k string) (int64, bool) {
	v := strings.TrimSpace(h.Get(k))
	if v == "" {
		return 0, false
	}
	// A list of policies ("100, 100;w=60"): the first number.
	if i := strings.IndexAny(v, ",;"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}
