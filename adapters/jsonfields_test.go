package adapters

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
)

// envoyFields are the pointers of Envoy's ratelimit answer, one
// descriptor's status.
const envoyFields = "json:/statuses/0/limitRemaining,/statuses/0/durationUntilReset,/statuses/0/currentLimit"

// Envoy's /json answers, as its protojson marshals them: an allowed
// request, and a refusal, whose limitRemaining of 0 protobuf's JSON
// leaves out.
const (
	envoyOK = `{"overallCode":"OK","statuses":[{"code":"OK","currentLimit":{"requestsPerUnit":20,"unit":"MINUTE"},` +
		`"limitRemaining":19,"durationUntilReset":"12s"}]}`
	envoyOver = `{"overallCode":"OVER_LIMIT","statuses":[{"code":"OVER_LIMIT","currentLimit":{"requestsPerUnit":20,"unit":"MINUTE"},` +
		`"durationUntilReset":"0.500s"}]}`
)

func mustSource(t *testing.T, s string) *jsonPointers {
	t.Helper()
	src, err := ParseFieldSource(s)
	require.NoError(t, err, s)
	p, err := src.pointers()
	require.NoError(t, err)
	return p
}

func TestParseFieldSource(t *testing.T) {
	src, err := ParseFieldSource(envoyFields)
	require.NoError(t, err)
	assert.Equal(t, FieldSource{Kind: "json", Remaining: "/statuses/0/limitRemaining", Reset: "/statuses/0/durationUntilReset", Limit: "/statuses/0/currentLimit"}, src)
	assert.Equal(t, envoyFields, src.String())
	// A comma inside a member's name stays in its pointer.
	src, err = ParseFieldSource("json:/a,b/r,/t")
	require.NoError(t, err)
	assert.Equal(t, FieldSource{Kind: "json", Remaining: "/a,b/r", Reset: "/t"}, src)
	for _, s := range []string{"", "headers"} {
		src, err := ParseFieldSource(s)
		require.NoError(t, err)
		assert.Equal(t, FieldSource{}, src)
		assert.Equal(t, "headers", src.String())
	}
	for bad, says := range map[string]string{
		"json:":                "two or three JSON Pointers, not 1",
		"json:/r":              "two or three JSON Pointers, not 1",
		"json:/r,/t,/l,/x":     "two or three JSON Pointers, not 4",
		"json:r,/t":            `REMAINING: JSON Pointer "r" does not start with /`,
		"json:/r,/t~2":         "RESET: JSON Pointer",
		"json:/r,/t,/l~":       "LIMIT: JSON Pointer",
		"body:/r,/t":           "want headers, or json:REMAINING,RESET[,LIMIT]",
		"Headers":              "want headers",
		"json/statuses/0/x,/y": "want headers",
	} {
		_, err := ParseFieldSource(bad)
		assert.ErrorContains(t, err, says, bad)
	}
}

// Envoy's answers read as its state: the count left, the delay until the
// reset (a protobuf Duration), the policy from currentLimit; the refusal's
// left-out limitRemaining is 0 once an answer carried it, and absent
// before (a pointer with a typo never reads as 0).
func TestJSONFieldsOfEnvoyAnswers(t *testing.T) {
	now := time.Now()
	p := mustSource(t, envoyFields)
	h := http.Header{}
	f, carried := parseJSONFields(p, h, []byte(envoyOK), false, false, now)
	assert.True(t, carried)
	assert.Empty(t, f.Errs)
	assert.Equal(t, Fields{Remaining: 19, HasRemaining: true, Reset: 12 * time.Second, HasReset: true, Form: "json",
		PolicyLimit: 20, PolicyWindow: time.Minute, HasPolicy: true}, f)

	f, carried = parseJSONFields(p, h, []byte(envoyOver), false, false, now)
	assert.False(t, carried)
	assert.Empty(t, f.Errs)
	assert.False(t, f.HasRemaining, "never seen: a missing member is not 0")
	assert.Equal(t, 500*time.Millisecond, f.Reset)

	f, _ = parseJSONFields(p, h, []byte(envoyOver), false, true, now)
	assert.Empty(t, f.Errs)
	assert.True(t, f.HasRemaining)
	assert.Equal(t, 0, f.Remaining, "protobuf's JSON leaves a zero out")

	// Only a member missing from an object that exists is 0: no status
	// (an empty statuses) is no field.
	f, _ = parseJSONFields(p, h, []byte(`{"overallCode":"OK","statuses":[]}`), false, true, now)
	assert.Empty(t, f.Errs)
	assert.False(t, f.HasRemaining || f.HasReset || f.HasPolicy, "%+v", f)

	// Retry-After is still the header's; an empty body has no fields.
	h.Set("Retry-After", "3")
	f, _ = parseJSONFields(p, h, nil, false, true, now)
	assert.Equal(t, Fields{RetryAfter: 3 * time.Second, HasRetryAfter: true, Form: "json"}, f)
	f, _ = parseJSONFields(p, http.Header{}, []byte(" \n"), false, true, now)
	assert.Empty(t, f.Errs)
	assert.False(t, f.HasRemaining)

	// null is not sent; a plain number limit has no window.
	f, _ = parseJSONFields(mustSource(t, "json:/r,/t,/l"), http.Header{}, []byte(`{"r":null,"t":2.25,"l":7}`), false, true, now)
	assert.Empty(t, f.Errs)
	assert.Equal(t, Fields{Reset: 2250 * time.Millisecond, HasReset: true, Form: "json", PolicyLimit: 7, HasPolicy: true}, f)
}

// The delays and limits services write: a number of seconds or a
// protobuf Duration; a count or Envoy's currentLimit, in any unit.
func TestJSONFieldValues(t *testing.T) {
	for raw, want := range map[string]time.Duration{
		`12`: 12 * time.Second, `0.5`: 500 * time.Millisecond, `0`: 0, `1e1`: 10 * time.Second, `0.30000000000000004`: 300*time.Millisecond + 1,
		`"12s"`: 12 * time.Second, `"0.500s"`: 500 * time.Millisecond, `"1.000000001s"`: time.Second + 1, `"0s"`: 0, `"-0s"`: 0,
		`"3153600000s"`: contract.MaxWindow, `3153600000`: contract.MaxWindow,
	} {
		d, err := jsonSeconds([]byte(raw))
		require.NoError(t, err, raw)
		assert.Equal(t, want, d, raw)
	}
	for raw, want := range map[string][2]int64{
		`20`: {20, 0}, `"20"`: {20, 0},
		`{"requestsPerUnit":20,"unit":"MINUTE"}`:          {20, int64(time.Minute)},
		`{"requests_per_unit":5,"unit":"SECOND"}`:         {5, int64(time.Second)},
		`{"unit":"HOUR","name":"x"}`:                      {0, int64(time.Hour)},
		`{"requestsPerUnit":"9","unit":"YEAR"}`:           {9, int64(365 * 24 * time.Hour)},
		`{"requestsPerUnit":1,"unit":"MONTH","extra":[]}`: {1, int64(30 * 24 * time.Hour)},
	} {
		n, w, err := jsonLimit([]byte(raw))
		require.NoError(t, err, raw)
		assert.Equal(t, want, [2]int64{n, int64(w)}, raw)
	}
}

// Whatever the body holds is a malformed field of the service, named with
// its pointer, never a crash nor a number it is not: wrong types, numbers
// out of range, negative ones, a body that is not JSON, nesting too deep,
// a member named twice.
func TestJSONFieldsMalformed(t *testing.T) {
	p := mustSource(t, "json:/r,/t,/l")
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	for body, says := range map[string]string{
		`{"r":"abc"}`:                   `json remaining /r "\"abc\"": not a non-negative integer`,
		`{"r":-1}`:                      `json remaining /r "-1": not a non-negative integer`,
		`{"r":1.5}`:                     "not a non-negative integer",
		`{"r":1e3}`:                     "not a non-negative integer",
		`{"r":99999999999999999999}`:    "more than 9007199254740991",
		`{"r":9007199254740992}`:        "more than 9007199254740991",
		`{"r":true}`:                    "a boolean, not a count",
		`{"r":{}}`:                      "an object, not a count",
		`{"r":[1]}`:                     "an array, not a count",
		`{"t":"12"}`:                    "not a protobuf JSON Duration",
		`{"t":"12m"}`:                   "not a protobuf JSON Duration",
		`{"t":"1.0000000001s"}`:         "not a protobuf JSON Duration",
		`{"t":"-1s"}`:                   "a negative duration",
		`{"t":-1}`:                      "a negative delay",
		`{"t":1e400}`:                   "not a number of seconds",
		`{"t":3153600001}`:              "more than 3153600000s",
		`{"t":"3153600000.5s"}`:         "more than 3153600000s",
		`{"t":"99999999999999999999s"}`: "more than 3153600000s",
		`{"t":{"seconds":1}}`:           "an object, neither a number of seconds",
		`{"t":true}`:                    "a boolean, neither",
		`{"l":"x"}`:                     `nor an object such as Envoy's currentLimit`,
		`{"l":[20]}`:                    "an array, not a count",
		`{"l":{"requestsPerUnit":20,"unit":"FORTNIGHT"}}`: `unit "FORTNIGHT": want SECOND, MINUTE`,
		`{"l":{"requestsPerUnit":20,"unit":2}}`:           "unit 2: want SECOND",
		`{"l":{"requestsPerUnit":20}}`:                    "no unit (protobuf's UNKNOWN",
		`{"l":{"requestsPerUnit":-20,"unit":"SECOND"}}`:   "requestsPerUnit: not a non-negative integer",
		`{"l":{"unit":"SECOND","unit":"HOUR"}}`:           `names "unit" twice`,
		`{"r":1,"r":2}`:                                   `json remaining /r: at the document's root: the object names "r" twice`,
		`{"r":1`:                                          "json fields: the body is not JSON",
		`too many requests`:                               "json fields: the body is not JSON",
		`{"r":1} {}`:                                      "json fields: the body is not JSON",
		deep:                                              "json fields: the body is not JSON",
		`[1,2]`:                                           `json remaining /r: at the document's root: "r" is not an array index`,
		`{"r":5,"t":"x","l":{}}`:                          "json reset /t",
	} {
		f, _ := parseJSONFields(p, http.Header{}, []byte(body), false, true, time.Now())
		require.NotEmpty(t, f.Errs, "%.60s", body)
		assert.ErrorContains(t, joinErrs(f.Errs), says, "%.60s", body)
	}
	// A body cut at maxBody is not read.
	f, _ := parseJSONFields(p, http.Header{}, []byte(`{"r":1}`), true, true, time.Now())
	assert.ErrorContains(t, joinErrs(f.Errs), "over 1048576 bytes")
	assert.False(t, f.HasRemaining)
}

func joinErrs(errs []error) error {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.Error() + "; ")
	}
	return fmt.Errorf("%s", b.String())
}

// Through the endpoint: an Envoy-shaped service's 200s and 429s read as
// its state (the 429's missing limitRemaining as 0 after a 200 carried
// it); a body over maxBody is a malformed field, not read whole; pointers
// that do not parse are refused before any request.
func TestEndpointReadsJSONFields(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		switch n.Add(1) {
		case 1:
			fmt.Fprint(w, envoyOK)
		case 2:
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, envoyOver)
		default:
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"statuses":[{"pad":"`+strings.Repeat("x", maxBody)+`"}]}`)
		}
	}))
	defer srv.Close()
	src, err := ParseFieldSource(envoyFields)
	require.NoError(t, err)
	e := NewEndpoint(srv.URL, EndpointOptions{Identity: Identity{Kind: "none"}, Fields: src})
	ctx := context.Background()
	r, err := e.Do(ctx, "u")
	require.NoError(t, err)
	assert.True(t, r.Allowed)
	assert.Equal(t, 19, r.Fields.Remaining)
	r, err = e.Do(ctx, "u")
	require.NoError(t, err)
	assert.False(t, r.Allowed)
	assert.Empty(t, r.Fields.Errs)
	assert.True(t, r.Fields.HasRemaining)
	assert.Equal(t, 0, r.Fields.Remaining)
	r, err = e.Do(ctx, "u")
	require.NoError(t, err, "a huge body is the service's malformed field, not an error of the call")
	assert.ErrorContains(t, joinErrs(r.Fields.Errs), "over 1048576 bytes")

	// A body that echoes a credential in a field shows it REDACTED.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"statuses":[{"limitRemaining":%q}]}`, r.Header.Get("X-Api-Key"))
	}))
	defer echo.Close()
	r, err = NewEndpoint(echo.URL, EndpointOptions{Identity: Identity{Kind: "none"}, Fields: src,
		Header: http.Header{"X-Api-Key": {"sk-live-0123456789abcdef"}}}).Do(ctx, "u")
	require.NoError(t, err)
	require.NotEmpty(t, r.Fields.Errs)
	assert.NotContains(t, joinErrs(r.Fields.Errs).Error(), "0123456789abcdef")
	assert.Contains(t, joinErrs(r.Fields.Errs).Error(), "REDACTED")

	_, err = NewEndpoint(srv.URL, EndpointOptions{Identity: Identity{Kind: "none"}, Fields: FieldSource{Kind: "json", Remaining: "r", Reset: "/t"}}).Do(ctx, "u")
	assert.ErrorContains(t, err, "does not start with /")
	_, err = NewEndpoint(srv.URL, EndpointOptions{Identity: Identity{Kind: "none"}, Fields: FieldSource{Kind: "xml"}}).Do(ctx, "u")
	assert.ErrorContains(t, err, `kind "xml"`)
	assert.Equal(t, int32(3), n.Load(), "refused before any request")
}
