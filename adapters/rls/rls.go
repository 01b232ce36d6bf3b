// Package rls grades and serves Envoy's rate limit service protocol
// (rls.proto, envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit)
// over gRPC: a [Client] calls any RLS server as Envoy does, one request per
// decision, and reads its answer as an endpoint's ([adapters.Response]);
// a [Server] serves a limiter as an RLS server.
//
// Typical usage:
//
//	c, err := rls.Dial("127.0.0.1:8081", rls.Options{Domain: "demo",
//		Descriptors: []rls.Descriptor{{{Key: "user", Value: "x"}}}, IdentityKey: "user"})
//	r, err := c.Do(ctx, "alice", 1) // r.Allowed, r.Fields
package rls

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/contract"
)

// Entry is one key=value entry of a descriptor.
type Entry struct{ Key, Value string }

// Descriptor is one rate limit descriptor: its entries, in order.
type Descriptor []Entry

func (d Descriptor) String() string {
	parts := make([]string, len(d))
	for i, e := range d {
		parts[i] = e.Key + "=" + e.Value
	}
	return strings.Join(parts, ",")
}

// The bounds on what a flag may say of a request: a descriptor's entries,
// a key's or value's bytes.
const (
	maxEntries    = 32
	maxEntryBytes = 1024
)

// ParseDescriptor parses KEY=VALUE,KEY=VALUE: at least one entry, at most
// 32, each key non-empty and named once, every key and value UTF-8 of at
// most 1024 bytes without a comma (a value may hold =).
func ParseDescriptor(s string) (Descriptor, error) {
	if s == "" {
		return nil, errors.New("an empty descriptor: want KEY=VALUE[,KEY=VALUE...]")
	}
	var d Descriptor
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		switch {
		case !ok || k == "":
			return nil, fmt.Errorf("descriptor %q: entry %q is not KEY=VALUE", s, part)
		case len(k) > maxEntryBytes || len(v) > maxEntryBytes:
			return nil, fmt.Errorf("descriptor %q: entry %.40q…: a key or value over %d bytes", s, part, maxEntryBytes)
		case !utf8.ValidString(k) || !utf8.ValidString(v):
			return nil, fmt.Errorf("descriptor %q: entry %q is not UTF-8", s, part)
		}
		for _, e := range d {
			if e.Key == k {
				return nil, fmt.Errorf("descriptor %q: key %q named twice", s, k)
			}
		}
		d = append(d, Entry{Key: k, Value: v})
	}
	if len(d) > maxEntries {
		return nil, fmt.Errorf("descriptor %q: %d entries, more than %d", s, len(d), maxEntries)
	}
	return d, nil
}

// ParseIdentity parses --identity descriptor:KEY, the descriptor entry
// whose value is the user's id.
func ParseIdentity(s string) (string, error) {
	key, ok := strings.CutPrefix(s, "descriptor:")
	if !ok || key == "" {
		return "", fmt.Errorf("identity %q: an RLS service tells clients apart by a descriptor entry: want descriptor:KEY", s)
	}
	return key, nil
}

// Form is the Form of the fields an RLS answer carries
// ([adapters.Fields]): those of its first DescriptorStatus.
const Form = "DescriptorStatus"

// ErrNotEnforced is wrapped by the error of an answer, or of the run's
// check before the first spec, that shows a server told not to enforce
// its limit (shadow mode): it lets a request through that it says is
// over the limit. Such a server is not graded (exit 2), never failed.
var ErrNotEnforced = errors.New("the RLS server does not enforce its limit")

// Decode reads a ShouldRateLimit answer to a request of sent descriptors:
// allowed for OK, denied for OVER_LIMIT, and the fields of its first
// DescriptorStatus. With several descriptors, the decision graded is the
// first's own status (the identity's: Envoy refuses when any refuses, and
// a server counts each matched descriptor whatever the others say, so
// another's refusal is another limit's, not the identity's); without
// statuses (Limitador sends none) a refusal of several is not said to be
// the identity's, and is a call without a known outcome
// ([contract.ErrNoAnswer]). It is an error when the answer cannot be
// graded: a nil answer, an overall code UNKNOWN or out of the enum, more
// or fewer statuses than descriptors sent, but none, or the identity's
// status OVER_LIMIT under an overall OK ([ErrNotEnforced]). What a status
// says out of bounds (a code other than the overall one with one
// descriptor, a unit out of the enum, a negative or too long duration) is
// in the fields' Errs, graded by http/ratelimit-fields. It never panics,
// and allocates no more than the answer's statuses already hold.
//
// current_limit says the limit applies: with it, limit_remaining is the
// quota left (proto3 cannot tell a 0 from one left out);
// duration_until_reset, when sent, the delay until more quota.
func Decode(resp *rlsv3.RateLimitResponse, sent int) (allowed bool, f adapters.Fields, err error) {
	if allowed, err = overall(resp); err != nil {
		return false, f, err
	}
	f.Form = Form
	statuses := resp.GetStatuses()
	switch n := len(statuses); {
	case n == 0 && !allowed && sent > 1:
		return false, f, fmt.Errorf("%w: OVER_LIMIT with no DescriptorStatus for the %d descriptors sent: which one refused is not said, so the identity's own decision is not known (send one --descriptor to a server that answers no statuses, as Limitador does)", contract.ErrNoAnswer, sent)
	case n == 0:
		// Limitador answers so: Envoy decides on overall_code alone, and
		// there is no field to grade.
		return allowed, f, nil
	case n != sent:
		return false, f, fmt.Errorf("the answer carries %d statuses for the %d descriptor(s) sent: one each, in order, is the protocol (or none)", n, sent)
	}
	st := statuses[0]
	switch {
	case allowed && st.GetCode() == rlsv3.RateLimitResponse_OVER_LIMIT:
		return false, f, fmt.Errorf("%w: the status of the identity's descriptor (1 of %d) is OVER_LIMIT under an overall OK, which Envoy lets through: shadow mode (envoyproxy/ratelimit's SHADOW_MODE answers so), or a quota_mode descriptor beside others; grade a server that enforces the limit",
			ErrNotEnforced, len(statuses))
	case sent == 1 && st.GetCode() != resp.GetOverallCode():
		f.Errs = append(f.Errs, fmt.Errorf("DescriptorStatus code %v: the one descriptor's status disagrees with overall_code %v", st.GetCode(), resp.GetOverallCode()))
	case sent > 1 && st.GetCode() != rlsv3.RateLimitResponse_UNKNOWN:
		allowed = st.GetCode() == rlsv3.RateLimitResponse_OK
	}
	return allowed, statusFields(f, st), nil
}

// overall is an answer's overall decision, an error when it has none.
func overall(resp *rlsv3.RateLimitResponse) (bool, error) {
	if resp == nil {
		return false, errors.New("no answer")
	}
	switch resp.GetOverallCode() {
	case rlsv3.RateLimitResponse_OK:
		return true, nil
	case rlsv3.RateLimitResponse_OVER_LIMIT:
		return false, nil
	case rlsv3.RateLimitResponse_UNKNOWN:
		return false, errors.New("the answer's overall_code is UNKNOWN: neither OK nor OVER_LIMIT, no decision")
	}
	return false, fmt.Errorf("the answer's overall_code is %d, outside the enum (UNKNOWN, OK, OVER_LIMIT)", int32(resp.GetOverallCode()))
}

// statusFields adds to f what status st says of the limit's state.
func statusFields(f adapters.Fields, st *rlsv3.RateLimitResponse_DescriptorStatus) adapters.Fields {
	if lim := st.GetCurrentLimit(); lim != nil {
		f.Remaining, f.HasRemaining = int(st.GetLimitRemaining()), true
		if n, w, err := limitOf(lim); err != nil {
			f.Errs = append(f.Errs, fmt.Errorf("current_limit: %w", err))
		} else {
			f.PolicyLimit, f.PolicyWindow, f.HasPolicy = n, w, true
		}
	}
	if d := st.GetDurationUntilReset(); d != nil {
		if reset, err := durationOf(d.GetSeconds(), d.GetNanos()); err != nil {
			f.Errs = append(f.Errs, fmt.Errorf("duration_until_reset: %w", err))
		} else {
			f.Reset, f.HasReset = reset, true
		}
	}
	return f
}

// units are the windows of the RateLimit units, as Envoy's ratelimit
// service counts them (a MONTH of 30 days, a YEAR of 365).
var units = map[rlsv3.RateLimitResponse_RateLimit_Unit]time.Duration{
	rlsv3.RateLimitResponse_RateLimit_SECOND: time.Second,
	rlsv3.RateLimitResponse_RateLimit_MINUTE: time.Minute,
	rlsv3.RateLimitResponse_RateLimit_HOUR:   time.Hour,
	rlsv3.RateLimitResponse_RateLimit_DAY:    24 * time.Hour,
	rlsv3.RateLimitResponse_RateLimit_WEEK:   7 * 24 * time.Hour,
	rlsv3.RateLimitResponse_RateLimit_MONTH:  30 * 24 * time.Hour,
	rlsv3.RateLimitResponse_RateLimit_YEAR:   365 * 24 * time.Hour,
}

// limitOf is current_limit's N and W: requests_per_unit per unit, times
// unit_multiplier when it is sent and not 0.
func limitOf(lim *rlsv3.RateLimitResponse_RateLimit) (int, time.Duration, error) {
	w, ok := units[lim.GetUnit()]
	if !ok {
		return 0, 0, fmt.Errorf("unit %v: want SECOND, MINUTE, HOUR, DAY, WEEK, MONTH or YEAR", lim.GetUnit())
	}
	if m := lim.GetUnitMultiplier(); m != nil && m.GetValue() > 0 {
		if int64(m.GetValue()) > int64(contract.MaxWindow/w) {
			return 0, 0, fmt.Errorf("unit_multiplier %d × %v: more than %v", m.GetValue(), lim.GetUnit(), contract.MaxWindow)
		}
		w *= time.Duration(m.GetValue())
	}
	return int(lim.GetRequestsPerUnit()), w, nil
}

// durationOf is a protobuf Duration as a delay: negative, nanos out of
// [0, 1e9), or more than [contract.MaxWindow] is an error.
func durationOf(secs int64, nanos int32) (time.Duration, error) {
	switch {
	case secs < 0 || nanos < 0:
		return 0, fmt.Errorf("%ds %dns: a negative delay", secs, nanos)
	case nanos >= 1e9:
		return 0, fmt.Errorf("nanos %d: at least a second (protobuf's Duration keeps them under 1e9)", nanos)
	case secs > int64(contract.MaxWindow/time.Second):
		return 0, fmt.Errorf("%ds: more than %v", secs, contract.MaxWindow)
	}
	d := time.Duration(secs)*time.Second + time.Duration(nanos)
	if d > contract.MaxWindow {
		return 0, fmt.Errorf("%v: more than %v", d, contract.MaxWindow)
	}
	return d, nil
}

// WithHeaders adds to f, the fields of a decoded answer received at now,
// what the answer's response_headers_to_add say: the headers the server
// asks Envoy to add to the client's response (Limitador's RateLimit
// headers, envoyproxy/ratelimit's X-RateLimit-*), read as an endpoint's
// headers are ([adapters.ParseFields]). Retry-After is taken from them;
// the remaining count, the reset and the policy only when no
// DescriptorStatus gave any (the headers' Form then names their form).
func WithHeaders(f adapters.Fields, resp *rlsv3.RateLimitResponse, now time.Time) adapters.Fields {
	if len(resp.GetResponseHeadersToAdd()) == 0 {
		return f
	}
	h := http.Header{}
	for _, hv := range resp.GetResponseHeadersToAdd() {
		if hv != nil {
			h.Add(hv.GetKey(), hv.GetValue())
		}
	}
	hf := adapters.ParseFields(h, now)
	if f.HasRemaining || f.HasReset || f.HasPolicy {
		f.RetryAfter, f.HasRetryAfter = hf.RetryAfter, hf.HasRetryAfter
		for _, err := range hf.Errs {
			if strings.HasPrefix(err.Error(), "Retry-After") {
				f.Errs = append(f.Errs, err)
			}
		}
		return f
	}
	hf.Errs = append(f.Errs, hf.Errs...)
	if hf.Form == "" {
		hf.Form = f.Form
	}
	return hf
}
