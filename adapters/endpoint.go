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
	"sync/atomic"
	"time"

	"github.com/dunglas/httpsfv"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/redact"
)

// Identity is how an [Endpoint] presents a user to a service: in a
// request header, a query parameter, as a bearer token, in the request
// body (json: the string an RFC 6901 JSON Pointer names in a JSON body;
// form: a field of a form body), or not at all (none: one limit shared
// by every request).
type Identity struct {
	Kind string // header, query, bearer, json, form or none
	Name string // the header, parameter, JSON Pointer or form field
}

// ParseIdentity parses header:NAME, query:NAME, bearer, json:POINTER,
// form:NAME or none. A body identity is checked against the body by
// [Identity.ValidateBody].
func ParseIdentity(s string) (Identity, error) {
	kind, name, _ := strings.Cut(s, ":")
	switch {
	case (kind == "bearer" || kind == "none") && name == "":
		return Identity{Kind: kind}, nil
	case kind == "json":
		if _, err := parsePointer(name); err != nil {
			return Identity{}, fmt.Errorf("identity %q: %w", s, err)
		}
		return Identity{Kind: kind, Name: name}, nil
	case (kind == "header" || kind == "query" || kind == "form") && name != "":
		if kind == "header" && !validHeaderName(name) {
			return Identity{}, fmt.Errorf("identity %q: %q is not a header name", s, name)
		}
		return Identity{Kind: kind, Name: name}, nil
	}
	return Identity{}, fmt.Errorf("identity %q: want header:NAME, query:NAME, bearer, json:POINTER, form:NAME or none", s)
}

// ValidateBody says why body cannot carry the identity, or nil: json
// needs a body that is JSON, in which the pointer names an existing
// string (a member named once on the way); form needs a body that is
// application/x-www-form-urlencoded, or none. Other identities take any
// body.
func (i Identity) ValidateBody(body []byte) error {
	_, err := newBodyTemplate(i, body)
	return err
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
// distinct ids stay distinct. In a body the id is itself, escaped as its
// form says (JSON, or percent-encoding), and so any id, but one that is
// not UTF-8 in JSON (whose encoding would replace its bytes).
func (i Identity) value(user string) string {
	safe := i.Kind != "bearer"
	switch {
	case i.Kind == "form":
		return user
	case i.Kind == "json" && jsonSafe(user):
		return user
	}
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

// ParsePolicy parses N/W: 10/1s, 100/1m, 1000/1d, 5/500ms (d is 24h),
// N from 1 to [contract.MaxLimit] and W from 1ms to [contract.MaxWindow];
// anything else is an error, never a wrapped number.
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
		if most := int(contract.MaxWindow / (24 * time.Hour)); d > most {
			return Policy{}, fmt.Errorf("policy %q: window %q: more than %dd (%v)", s, w, most, contract.MaxWindow)
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
	// Body is sent with every request; with a json or form Identity, with
	// the user's id in its place (see [Identity.ValidateBody]), and a
	// Content-Type of its kind unless Header has one.
	Body []byte
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
	// Fields says where the answers' rate-limit fields are read: the
	// headers (the zero value) or the JSON body ([FieldSource]).
	Fields FieldSource
	// StoreFailures, when not nil, records the answers the service says
	// are its store-failure policy's ([contract.HeaderStoreFailure]).
	StoreFailures *StoreFailures
}

// Endpoint grades a deployed HTTP service as a black box: AllowRequest
// sends one request as the user and reads the decision from the status.
// It is a [contract.RateLimiterContract] with no Configure, remaining
// query or Reset (those return errors): the policy is the service's own.
type Endpoint struct {
	url     string
	opts    EndpointOptions
	body    *bodyTemplate // a json or form identity's body
	bodyErr error         // why the body cannot carry the identity
	// fields are the pointers of a json Fields source (nil: the headers);
	// fieldsErr says why they do not parse. remainingSeen: an answer
	// carried the remaining count (see [FieldSource]).
	fields        *jsonPointers
	fieldsErr     error
	remainingSeen atomic.Bool
	http          *http.Client
	secrets       *redact.Secrets // of its URL and headers: kept out of its errors
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
	body, bodyErr := newBodyTemplate(opts.Identity, opts.Body)
	if bodyErr != nil {
		bodyErr = fmt.Errorf("identity %v: %w", opts.Identity, bodyErr)
	}
	e := &Endpoint{url: rawURL, opts: opts, body: body, bodyErr: bodyErr, secrets: secrets, http: &http.Client{
		Transport:     pooledTransport(),
		Timeout:       opts.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	switch opts.Fields.Kind {
	case "", "headers":
	case "json":
		if e.fields, e.fieldsErr = opts.Fields.pointers(); e.fieldsErr != nil {
			e.fieldsErr = fmt.Errorf("fields %v: %w", opts.Fields, e.fieldsErr)
		}
	default:
		e.fieldsErr = fmt.Errorf("fields: kind %q: want headers or json", opts.Fields.Kind)
	}
	return e
}

// Response is one answer of the service.
type Response struct {
	Status  int
	Allowed bool
	Header  http.Header
	// Sent and Returned bound the instant the service decided.
	Sent, Returned time.Time
	Fields         Fields
	// StoreFailure is the policy ("allow" or "deny") the service said
	// answered instead of its limiter ([contract.HeaderStoreFailure]): its store
	// failed. Empty for a decision of the limiter.
	StoreFailure string
}

// Do sends one request as user and returns the service's answer; a status
// that is neither 2xx nor the refusal status is an error (wrapping
// [contract.ErrStore] for a 5xx: the service, or its store, failed), and
// so is a body that cannot carry the identity.
func (e *Endpoint) Do(ctx context.Context, user string) (*Response, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return nil, err
	}
	if e.bodyErr != nil {
		return nil, e.bodyErr
	}
	if e.fieldsErr != nil {
		return nil, e.fieldsErr
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
	switch {
	case e.body != nil:
		body = bytes.NewReader(e.body.render(e.opts.Identity.value(user)))
	case e.opts.Body != nil:
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
	if e.body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", e.body.contentType())
	}
	sent := time.Now()
	resp, err := sendOnce(e.http, req)
	if err != nil {
		err = redact.Error(err) // net/http quotes the URL, query and all
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("%w: %w", contract.ErrNoAnswer, err)
		}
		return nil, fmt.Errorf("%s %s: %w", e.opts.Method, redact.URL(e.url), err)
	}
	defer resp.Body.Close()
	text, readErr := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	returned := time.Now()
	tooLong := len(text) > maxBody
	text = text[:min(len(text), maxBody)]
	r := &Response{Status: resp.StatusCode, Header: resp.Header, Sent: sent, Returned: returned}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		r.Allowed = true
	case resp.StatusCode == e.opts.LimitedStatus:
	case resp.StatusCode >= 500 && resp.StatusCode < 600:
		// A 5xx is the service failing (its store, say): the answer of a
		// limiter whose policy while its store fails is error.
		return r, fmt.Errorf("the service answered %d %s (neither 2xx nor the refusal %d: %w): %s",
			resp.StatusCode, http.StatusText(resp.StatusCode), e.opts.LimitedStatus, contract.ErrStore, e.secrets.Text(strings.TrimSpace(string(firstBytes(text, 200)))))
	default:
		return r, fmt.Errorf("the service answered %d %s (neither 2xx nor the refusal %d): %s",
			resp.StatusCode, http.StatusText(resp.StatusCode), e.opts.LimitedStatus, e.secrets.Text(strings.TrimSpace(string(firstBytes(text, 200)))))
	}
	if p := resp.Header.Get(contract.HeaderStoreFailure); p != "" {
		if err := policyAnswer(p, r.Allowed); err != nil {
			return nil, fmt.Errorf("%s %s: the answer's %s: %w", e.opts.Method, redact.URL(e.url), contract.HeaderStoreFailure, err)
		}
		r.StoreFailure = p
		e.opts.StoreFailures.add(p, sent, returned)
	}
	if r.Fields, err = e.answerFields(resp.Header, text, tooLong, readErr, returned); err != nil {
		return nil, err
	}
	return r, nil
}

// answerFields reads the fields of an answer received at now, from its
// headers h or, with json fields, its body (cut at maxBody when tooLong;
// readErr: it did not all come, which is no answer).
func (e *Endpoint) answerFields(h http.Header, body []byte, tooLong bool, readErr error, now time.Time) (Fields, error) {
	if e.fields == nil {
		return ParseFields(h, now), nil
	}
	if readErr != nil {
		return Fields{}, fmt.Errorf("%s %s: %w: reading the answer's body: %w", e.opts.Method, redact.URL(e.url), contract.ErrNoAnswer, redact.Error(readErr))
	}
	f, carried := parseJSONFields(e.fields, h, body, tooLong, e.remainingSeen.Load(), now)
	if carried {
		e.remainingSeen.Store(true)
	}
	for i, err := range f.Errs { // a body may echo a credential
		f.Errs[i] = errors.New(e.secrets.Text(err.Error()))
	}
	return f, nil
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
	// (RateLimit), "draft-6" (RateLimit-Remaining), "x" (X-RateLimit-*)
	// or "json" (the JSON body, [FieldSource]).
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
	// Errs are the fields present but malformed, or whose numbers are out
	// of range (see ParseFields); each error starts with its field's name.
	Errs []error
}

// The bounds on what a field may say. A number out of them is malformed,
// never wrapped nor clamped: a delay is at most [contract.MaxWindow] (100
// years; a time.Duration ends near 292), a count at most
// [contract.MaxLimit], an epoch instant at most the last second of year
// 9999 (the last an HTTP-date can name), and none is negative.
const (
	maxFieldSeconds = int64(contract.MaxWindow / time.Second)
	maxFieldCount   = int64(contract.MaxLimit)
	maxEpochSeconds = 253402300799
	// epochAfter: a -Reset above it is an epoch instant, not a delay
	// (GitHub's X-RateLimit-Reset).
	epochAfter = 1_000_000_000
)

// ParseFields reads the rate-limit fields of an answer received at now.
// A field present but unreadable, or whose number is out of the bounds
// above, is in Errs and sets nothing.
func ParseFields(h http.Header, now time.Time) Fields {
	var f Fields
	if v := h.Get("Retry-After"); v != "" {
		f.parseRetryAfter(v, h.Get("Date"), now)
	}
	if vs := h.Values("RateLimit-Policy"); len(vs) > 0 {
		f.parsePolicy(vs)
	}
	if vs := h.Values("RateLimit"); len(vs) > 0 {
		f.parseRateLimit(vs)
	}
	for _, form := range []struct{ name, prefix string }{{"draft-6", "RateLimit-"}, {"x", "X-RateLimit-"}} {
		if f.Form != "" {
			break
		}
		f.parseOlder(h, form.name, form.prefix, now)
	}
	return f
}

// parseRetryAfter reads Retry-After: delta-seconds (digits only) or an
// HTTP-date, counted from the answer's Date when it has one (the server's
// own clock), else from now.
func (f *Fields) parseRetryAfter(v, date string, now time.Time) {
	if isDigits(strings.TrimSpace(v)) {
		secs, err := parseCount(strings.TrimSpace(v), maxFieldSeconds, "s")
		if err != nil {
			f.Errs = append(f.Errs, fmt.Errorf("Retry-After %q: %w", v, err))
			return
		}
		f.RetryAfter, f.HasRetryAfter = time.Duration(secs)*time.Second, true
		return
	}
	at, err := http.ParseTime(v)
	if err != nil {
		f.Errs = append(f.Errs, fmt.Errorf("Retry-After %q is neither delta-seconds (digits) nor an HTTP-date", v))
		return
	}
	base := now
	if d, err := http.ParseTime(date); err == nil {
		base = d
	}
	wait := max(0, at.Sub(base)) // Sub saturates: it never wraps
	if wait > contract.MaxWindow {
		f.Errs = append(f.Errs, fmt.Errorf("Retry-After %q: %v after the answer's Date, more than %v", v, wait.Round(time.Hour), contract.MaxWindow))
		return
	}
	f.RetryAfter, f.HasRetryAfter = wait, true
}

// parsePolicy reads RateLimit-Policy's first policy: q (a count) and w (at
// least 1 s). In the drafts before -08 (express-rate-limit's draft-6 and
// draft-7 forms send "5;w=1"), the quota is the item's value itself, with
// no q.
func (f *Fields) parsePolicy(vs []string) {
	it, err := firstItem(vs)
	if err != nil {
		f.Errs = append(f.Errs, fmt.Errorf("RateLimit-Policy %q: %w", strings.Join(vs, ", "), err))
		return
	}
	q, okq, errq := boundedParam(it, "q", 0, maxFieldCount)
	if !okq && errq == nil {
		q, okq, errq = boundedValue(it.Value, "the quota ", 0, maxFieldCount)
	}
	w, okw, errw := boundedParam(it, "w", 1, maxFieldSeconds)
	switch {
	case errq != nil || errw != nil:
		f.Errs = append(f.Errs, fmt.Errorf("RateLimit-Policy %q: %w", strings.Join(vs, ", "), errors.Join(errq, errw)))
	case !okq || !okw:
		f.Errs = append(f.Errs, fmt.Errorf("RateLimit-Policy %q lacks an integer q (or quota) and w", strings.Join(vs, ", ")))
	default:
		f.PolicyLimit, f.PolicyWindow, f.HasPolicy = int(q), time.Duration(w)*time.Second, true
	}
}

// parseRateLimit reads the RateLimit field: its first member's r (a
// count) and t (a delay in seconds), as draft-08 writes it, or, when it is
// a dictionary of limit, remaining and reset (draft-07: "limit=5,
// remaining=4, reset=1", express-rate-limit's draft-7 form), those.
func (f *Fields) parseRateLimit(vs []string) {
	it, err := firstItem(vs)
	if err != nil {
		if f.parseRateLimitDict(vs) {
			return
		}
		f.Errs = append(f.Errs, fmt.Errorf("RateLimit %q: %w", strings.Join(vs, ", "), err))
		return
	}
	f.Form = "draft"
	r, okr, errr := boundedParam(it, "r", 0, maxFieldCount)
	t, okt, errt := boundedParam(it, "t", 0, maxFieldSeconds)
	if err := errors.Join(errr, errt); err != nil {
		f.Errs = append(f.Errs, fmt.Errorf("RateLimit %q: %w", strings.Join(vs, ", "), err))
		return
	}
	if okr {
		f.Remaining, f.HasRemaining = int(r), true
	}
	if okt {
		f.Reset, f.HasReset = time.Duration(t)*time.Second, true
	}
}

// parseRateLimitDict reads RateLimit as draft-07's dictionary, and
// reports whether it is one: a structured dictionary with a remaining or
// a reset member (limit alone names no state). Its numbers are bounded as
// the other forms' are; one out of bounds, or not an integer, is in Errs.
func (f *Fields) parseRateLimitDict(vs []string) bool {
	d, err := httpsfv.UnmarshalDictionary(vs)
	if err != nil {
		return false
	}
	member := func(k string, most int64) (int64, bool, error) {
		v, ok := d.Get(k)
		if !ok {
			return 0, false, nil
		}
		it, isItem := v.(httpsfv.Item)
		if !isItem {
			return 0, true, fmt.Errorf("%s is an inner list, not an integer", k)
		}
		return boundedValue(it.Value, k+"=", 0, most)
	}
	r, okr, errr := member("remaining", maxFieldCount)
	t, okt, errt := member("reset", maxFieldSeconds)
	l, okl, errl := member("limit", maxFieldCount)
	if !okr && !okt {
		return false
	}
	f.Form = "draft-7"
	if err := errors.Join(errr, errt, errl); err != nil {
		f.Errs = append(f.Errs, fmt.Errorf("RateLimit %q: %w", strings.Join(vs, ", "), err))
		return true
	}
	if okr {
		f.Remaining, f.HasRemaining = int(r), true
	}
	if okt {
		f.Reset, f.HasReset = time.Duration(t)*time.Second, true
	}
	if okl && !f.HasPolicy {
		f.PolicyLimit, f.HasPolicy = int(l), true
	}
	return true
}

// parseOlder reads the draft-6 RateLimit-Limit/-Remaining/-Reset or the
// X-RateLimit-* fields (prefix), as form, when any of them is present.
func (f *Fields) parseOlder(h http.Header, form, prefix string, now time.Time) {
	rem, okr, errr := headerCount(h, prefix+"Remaining", maxFieldCount)
	reset, okt, errt := headerCount(h, prefix+"Reset", maxEpochSeconds)
	limit, okl, errl := headerCount(h, prefix+"Limit", maxFieldCount)
	if !okr && !okt && !okl {
		return
	}
	f.Form = form
	if err := errors.Join(errr, errt, errl); err != nil {
		f.Errs = append(f.Errs, err)
		return
	}
	if okr {
		f.Remaining, f.HasRemaining = int(rem), true
	}
	switch {
	case !okt:
	case reset > epochAfter:
		// Some services (GitHub's X-RateLimit-Reset) send an epoch
		// instant, not a delay.
		at := time.Unix(reset, 0)
		if wait := at.Sub(now); wait > contract.MaxWindow {
			f.Errs = append(f.Errs, fmt.Errorf("%sReset %d: an epoch instant %v away, more than %v", prefix, reset, wait.Round(time.Hour), contract.MaxWindow))
			break
		}
		f.ResetAt = at
		f.Reset, f.HasReset = max(0, at.Sub(now).Round(time.Second)), true
	default:
		f.Reset, f.HasReset = time.Duration(reset)*time.Second, true
	}
	if okl && !f.HasPolicy {
		f.PolicyLimit, f.HasPolicy = int(limit), true
	}
}

// firstItem is the first member of a structured list, which must be an
// item (a policy, a limit).
func firstItem(vs []string) (httpsfv.Item, error) {
	l, err := httpsfv.UnmarshalList(vs)
	switch {
	case err != nil:
		return httpsfv.Item{}, fmt.Errorf("not a structured list: %w", err)
	case len(l) == 0:
		return httpsfv.Item{}, errors.New("an empty list")
	}
	it, ok := l[0].(httpsfv.Item)
	if !ok {
		return httpsfv.Item{}, errors.New("its first member is an inner list, not an item")
	}
	return it, nil
}

// boundedParam is the integer parameter k of it, when present (ok); an
// error when it is not an integer or out of [least, most].
func boundedParam(it httpsfv.Item, k string, least, most int64) (n int64, ok bool, err error) {
	if it.Params == nil {
		return 0, false, nil
	}
	v, ok := it.Params.Get(k)
	if !ok {
		return 0, false, nil
	}
	return boundedValue(v, k+"=", least, most)
}

// boundedValue is v as an integer in [least, most] (ok: v is there at
// all); an error, its value after label ("q=", "the quota "), when it is
// not an integer or out of bounds.
func boundedValue(v any, label string, least, most int64) (n int64, ok bool, err error) {
	n, isInt := v.(int64)
	switch {
	case !isInt:
		return 0, true, fmt.Errorf("%s%v is not an integer", label, v)
	case n < least:
		return n, true, fmt.Errorf("%s%d: less than %d", label, n, least)
	case n > most:
		return n, true, fmt.Errorf("%s%d: more than %d", label, n, most)
	}
	return n, true, nil
}

// headerCount is the number that field k of h starts with (a list of
// policies, "100, 100;w=60", gives its first), when present (ok); an
// error when it is not digits or is more than most.
func headerCount(h http.Header, k string, most int64) (n int64, ok bool, err error) {
	v := strings.TrimSpace(h.Get(k))
	if v == "" {
		return 0, false, nil
	}
	if i := strings.IndexAny(v, ",;"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	if n, err = parseCount(v, most, ""); err != nil {
		return 0, true, fmt.Errorf("%s %q: %w", k, h.Get(k), err)
	}
	return n, true, nil
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// parseCount reads s, digits only, as a number of at most most (unit
// names what it counts in the error).
func parseCount(s string, most int64, unit string) (int64, error) {
	if !isDigits(s) {
		return 0, errors.New("not a non-negative integer (digits only)")
	}
	var n int64
	for _, c := range s {
		d := int64(c - '0')
		if n > (most-d)/10 {
			return 0, fmt.Errorf("more than %d%s", most, unit)
		}
		n = n*10 + d
	}
	return n, nil
}
