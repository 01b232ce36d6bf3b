package adapters

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rlconform/rlconform/contract"
)

// FieldSource is where an [Endpoint] reads what an answer says of the
// limit: its headers (the zero value: Retry-After and the RateLimit
// fields, [ParseFields]), or members of its JSON body that RFC 6901 JSON
// Pointers name, as Envoy's ratelimit service reports its state
// (json:REMAINING,RESET[,LIMIT]; Retry-After is still read from the
// headers, the RateLimit headers are not).
//
// In the body, REMAINING is a count: a JSON integer, or a string of
// digits (protobuf's JSON form of 64-bit integers). RESET is the delay
// until more quota: a JSON number of seconds (12, 0.5) or a protobuf JSON
// Duration ("12s", "0.500s"). LIMIT is a count (a limit with no window),
// or an object of Envoy's currentLimit shape: {"requestsPerUnit": N,
// "unit": "SECOND"} (MINUTE, HOUR, DAY, WEEK, MONTH of 30 days, YEAR of
// 365, as Envoy counts them). A member missing, or null, is not sent; as
// protobuf's JSON leaves out a zero, REMAINING missing from an object
// that exists reads as 0 once an answer of the same Endpoint carried it.
type FieldSource struct {
	Kind string // "" (or "headers"): the headers; "json": the JSON body
	// Remaining, Reset and Limit are the JSON Pointers of json (Limit may
	// be "").
	Remaining, Reset, Limit string
}

// ParseFieldSource parses headers, or json:REMAINING,RESET[,LIMIT] (JSON
// Pointers, each starting with /; a comma followed by / separates them).
func ParseFieldSource(s string) (FieldSource, error) {
	if s == "" || s == "headers" {
		return FieldSource{}, nil
	}
	rest, ok := strings.CutPrefix(s, "json:")
	if !ok {
		return FieldSource{}, fmt.Errorf("fields %q: want headers, or json:REMAINING,RESET[,LIMIT] (RFC 6901 JSON Pointers into the answer's JSON body)", s)
	}
	ps := splitPointers(rest)
	if len(ps) < 2 || len(ps) > 3 {
		return FieldSource{}, fmt.Errorf("fields %q: want json:REMAINING,RESET[,LIMIT], two or three JSON Pointers, not %d", s, len(ps))
	}
	src := FieldSource{Kind: "json", Remaining: ps[0], Reset: ps[1]}
	if len(ps) == 3 {
		src.Limit = ps[2]
	}
	if _, err := src.pointers(); err != nil {
		return FieldSource{}, fmt.Errorf("fields %q: %w", s, err)
	}
	return src, nil
}

// splitPointers splits a list of JSON Pointers at each comma that a /
// follows: a pointer starts with /, and a member's name may hold commas.
func splitPointers(s string) []string {
	var out []string
	for {
		i := strings.Index(s, ",/")
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i])
		s = s[i+1:]
	}
}

func (s FieldSource) String() string {
	if s.Kind != "json" {
		return "headers"
	}
	out := "json:" + s.Remaining + "," + s.Reset
	if s.Limit != "" {
		out += "," + s.Limit
	}
	return out
}

// jsonPointers are a json FieldSource's pointers, parsed (limit nil when
// there is none).
type jsonPointers struct {
	remaining, reset, limit []string
}

func (s FieldSource) pointers() (*jsonPointers, error) {
	var p jsonPointers
	var err error
	if p.remaining, err = parsePointer(s.Remaining); err != nil {
		return nil, fmt.Errorf("REMAINING: %w", err)
	}
	if p.reset, err = parsePointer(s.Reset); err != nil {
		return nil, fmt.Errorf("RESET: %w", err)
	}
	if s.Limit != "" {
		if p.limit, err = parsePointer(s.Limit); err != nil {
			return nil, fmt.Errorf("LIMIT: %w", err)
		}
	}
	return &p, nil
}

// parseJSONFields reads the fields that p names in body, an answer's
// body received at now with headers h (Retry-After is read from them);
// tooLong says the body was cut at maxBody. remainingSeen says an earlier
// answer carried REMAINING, so that a missing one reads as 0 (see
// [FieldSource]); carried says this one did. Whatever the body holds
// (not JSON, nesting too deep, numbers out of range, another type) is in
// Errs, never a panic.
func parseJSONFields(p *jsonPointers, h http.Header, body []byte, tooLong, remainingSeen bool, now time.Time) (f Fields, carried bool) {
	if v := h.Get("Retry-After"); v != "" {
		f.parseRetryAfter(v, h.Get("Date"), now)
	}
	f.Form = "json"
	switch {
	case tooLong:
		f.Errs = append(f.Errs, fmt.Errorf("json fields: the body is over %d bytes, not read", maxBody))
		return f, false
	case len(body[skipSpace(body, 0):]) == 0:
		return f, false // no body: no fields, as an answer without the headers
	}
	if err := validJSON(body); err != nil {
		f.Errs = append(f.Errs, fmt.Errorf("json fields: %w", err))
		return f, false
	}
	if raw, ok := f.member(body, "remaining", p.remaining, remainingSeen); ok {
		carried = true
		if n, err := jsonCount(raw); err != nil {
			f.Errs = append(f.Errs, fieldErr("remaining", p.remaining, raw, err))
		} else {
			f.Remaining, f.HasRemaining = int(n), true
		}
	}
	if raw, ok := f.member(body, "reset", p.reset, false); ok {
		if d, err := jsonSeconds(raw); err != nil {
			f.Errs = append(f.Errs, fieldErr("reset", p.reset, raw, err))
		} else {
			f.Reset, f.HasReset = d, true
		}
	}
	if p.limit == nil {
		return f, carried
	}
	if raw, ok := f.member(body, "limit", p.limit, false); ok {
		if n, w, err := jsonLimit(raw); err != nil {
			f.Errs = append(f.Errs, fieldErr("limit", p.limit, raw, err))
		} else {
			f.PolicyLimit, f.PolicyWindow, f.HasPolicy = int(n), w, true
		}
	}
	return f, carried
}

// member is the value tokens name in doc, when it is there and not null
// (ok); zeroIfMissing reads a member missing from an object that exists
// as 0. A path through a value that is neither an object nor an array, or
// a member named twice, is in Errs.
func (f *Fields) member(doc []byte, role string, tokens []string, zeroIfMissing bool) (raw []byte, ok bool) {
	start, end, err := lookup(doc, tokens)
	switch {
	case errors.Is(err, errAbsent):
		if !zeroIfMissing || len(tokens) == 0 {
			return nil, false
		}
		if ps, pe, err := lookup(doc, tokens[:len(tokens)-1]); err == nil && doc[ps] == '{' && pe > ps {
			return []byte("0"), true
		}
		return nil, false
	case err != nil:
		f.Errs = append(f.Errs, fmt.Errorf("json %s %s: %w", role, pointerOf(tokens), err))
		return nil, false
	case string(doc[start:end]) == "null":
		return nil, false
	}
	return doc[start:end], true
}

// fieldErr is the error of a field's value: its role, pointer, and the
// value's first bytes.
func fieldErr(role string, tokens []string, raw []byte, err error) error {
	shown := string(firstBytes(raw, 40))
	if len(raw) > 40 {
		shown += "…"
	}
	return fmt.Errorf("json %s %s %q: %w", role, pointerOf(tokens), shown, err)
}

// jsonCount reads a count: a JSON integer, or a string of digits, at
// most maxFieldCount.
func jsonCount(raw []byte) (int64, error) {
	s := string(raw)
	if str, ok := jsonString(raw); ok {
		s = str
	} else if strings.IndexByte("-0123456789", raw[0]) < 0 {
		return 0, fmt.Errorf("%s, not a count (a JSON integer)", kindOf(raw))
	}
	return parseCount(s, maxFieldCount, "")
}

// protoDuration is a protobuf JSON Duration: seconds with up to nine
// decimals, then s ("12s", "0.500s", "-1.5s").
var protoDuration = regexp.MustCompile(`^(-?)([0-9]+)(?:\.([0-9]{1,9}))?s$`)

// jsonSeconds reads a delay: a JSON number of seconds, or a protobuf JSON
// Duration string; negative or more than maxFieldSeconds is an error. A
// fraction finer than a nanosecond is rounded up (a client waits no less).
func jsonSeconds(raw []byte) (time.Duration, error) {
	if s, ok := jsonString(raw); ok {
		m := protoDuration.FindStringSubmatch(s)
		switch {
		case m == nil:
			return 0, errors.New(`a string that is not a protobuf JSON Duration ("12s", "0.500s")`)
		case m[1] == "-" && strings.Trim(m[2]+m[3], "0") != "":
			return 0, errors.New("a negative duration")
		}
		secs, err := parseCount(m[2], maxFieldSeconds, "s")
		if err != nil {
			return 0, err
		}
		frac, _ := strconv.Atoi((m[3] + "000000000")[:9]) // at most nine digits
		if d := time.Duration(secs)*time.Second + time.Duration(frac); d <= contract.MaxWindow {
			return d, nil
		}
		return 0, fmt.Errorf("more than %ds", maxFieldSeconds)
	}
	if strings.IndexByte("-0123456789", raw[0]) < 0 {
		return 0, fmt.Errorf("%s, neither a number of seconds nor a protobuf JSON Duration string", kindOf(raw))
	}
	secs, err := strconv.ParseFloat(string(raw), 64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("not a number of seconds: %w", err)
	case secs < 0:
		return 0, errors.New("a negative delay")
	case secs > float64(maxFieldSeconds):
		return 0, fmt.Errorf("more than %ds", maxFieldSeconds)
	}
	ns := secs * float64(time.Second)
	d := time.Duration(ns)
	if float64(d) < ns {
		d++
	}
	return d, nil
}

// envoyUnits are the windows of Envoy's RateLimit units, as its
// ratelimit service counts them (utils.UnitToDivider).
var envoyUnits = map[string]time.Duration{
	"SECOND": time.Second,
	"MINUTE": time.Minute,
	"HOUR":   time.Hour,
	"DAY":    24 * time.Hour,
	"WEEK":   7 * 24 * time.Hour,
	"MONTH":  30 * 24 * time.Hour,
	"YEAR":   365 * 24 * time.Hour,
}

// jsonLimit reads a limit: a count (no window), or an object of Envoy's
// currentLimit shape, {"requestsPerUnit": N, "unit": "MINUTE"} (the
// proto's names, requests_per_unit, too); a requestsPerUnit left out is
// 0, as protobuf's JSON leaves out a zero.
func jsonLimit(raw []byte) (n int64, window time.Duration, err error) {
	if raw[0] != '{' {
		if n, err = jsonCount(raw); err != nil {
			return 0, 0, fmt.Errorf("%w, nor an object such as Envoy's currentLimit {\"requestsPerUnit\":20,\"unit\":\"MINUTE\"}", err)
		}
		return n, 0, nil
	}
	rpu, err := oneOf(raw, "requestsPerUnit", "requests_per_unit")
	if err != nil {
		return 0, 0, err
	}
	if rpu != nil {
		if n, err = jsonCount(rpu); err != nil {
			return 0, 0, fmt.Errorf("requestsPerUnit: %w", err)
		}
	}
	unit, err := oneOf(raw, "unit")
	if err != nil {
		return 0, 0, err
	}
	if unit == nil {
		return 0, 0, errors.New("no unit (protobuf's UNKNOWN, left out): want SECOND, MINUTE, HOUR, DAY, WEEK, MONTH or YEAR")
	}
	name, _ := jsonString(unit)
	w, ok := envoyUnits[name]
	if !ok {
		return 0, 0, fmt.Errorf("unit %.40s: want SECOND, MINUTE, HOUR, DAY, WEEK, MONTH or YEAR", unit)
	}
	return n, w, nil
}

// jsonString is the JSON string raw, when it is one.
func jsonString(raw []byte) (string, bool) {
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// oneOf is the value of the first of names that the object obj has (nil:
// none, or null).
func oneOf(obj []byte, names ...string) ([]byte, error) {
	for _, name := range names {
		start, end, err := lookup(obj, []string{name})
		switch {
		case errors.Is(err, errAbsent):
			continue
		case err != nil:
			return nil, err
		case string(obj[start:end]) == "null":
			return nil, nil
		}
		return obj[start:end], nil
	}
	return nil, nil
}
