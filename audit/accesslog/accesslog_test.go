package accesslog

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/bench"
)

// read parses lines with a parser of format, returning the requests (users
// copied) and the skips by reason.
func read(t *testing.T, format string, opts Options, lines []string) ([]Request, map[Skip]int) {
	t.Helper()
	p, err := New(format, opts)
	require.NoError(t, err)
	var got []Request
	emit := func(r *Request) error {
		c := *r
		c.User = []byte(string(r.User))
		got = append(got, c)
		return nil
	}
	skips := map[Skip]int{}
	for i, l := range lines {
		err := p.Parse([]byte(l), int64(i+1), emit)
		var s Skip
		if errors.As(err, &s) {
			skips[s]++
			continue
		}
		require.NoError(t, err, "line %d", i+1)
	}
	require.NoError(t, p.Close(emit))
	assert.NotEmpty(t, p.Notes())
	return got, skips
}

func fixture(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	require.NoError(t, err)
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

func at(s string) time.Duration {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return time.Duration(t.UnixNano())
}

// nginx: $msec is the end in ms, $request_time the time taken in ms on
// the same clock: [end − time, end + 1ms]. With $time_local alone, whole
// seconds: [end − time, end + 1s].
func TestNginx(t *testing.T) {
	lines := []string{
		`127.0.0.1 [27/Nov/2024:16:32:00 +0000] "GET /ok HTTP/1.1" 200 3 1732725120.123 0.005 "alice"`,
		`127.0.0.1 [27/Nov/2024:16:32:00 +0000] "GET /ok HTTP/1.1" 429 162 1732725120.130 0.000 "alice"`,
		`127.0.0.1 [27/Nov/2024:16:32:00 +0000] "GET /ok HTTP/1.1" 200 3 1732725120.140 0.001 "-"`,
		`127.0.0.1 [27/Nov/2024:16:32:00 +0000] "GET /o\"k HTTP/1.1" 502 3 1732725120.150 60.001 "b\x22ob"`,
		`garbage`,
	}
	got, skips := read(t, "nginx", Options{LogFormat: NginxFormat, User: "$http_x_user"}, lines)
	require.Len(t, got, 3)
	assert.Equal(t, Request{User: []byte("alice"), Start: at("2024-11-27T16:32:00.118Z"), End: at("2024-11-27T16:32:00.124Z"), Status: 200, Outcome: bench.Allowed, Line: 1}, got[0])
	assert.Equal(t, bench.Denied, got[1].Outcome)
	assert.Equal(t, at("2024-11-27T16:32:00.131Z"), got[1].End)
	assert.Equal(t, `b\x22ob`, string(got[2].User), "a value's escapes are kept: the id is the log's")
	assert.Equal(t, bench.Errored, got[2].Outcome)
	assert.Equal(t, map[Skip]int{skipNoUser: 1, skipShape: 1}, skips)

	coarse := `$remote_addr [$time_local] "$request" $status $request_time "$http_x_user"`
	got, _ = read(t, "nginx", Options{LogFormat: coarse, User: "http_x_user"}, []string{`1.2.3.4 [27/Nov/2024:17:32:00 +0100] "GET / HTTP/1.1" 200 0.250 "u"`})
	require.Len(t, got, 1)
	assert.Equal(t, at("2024-11-27T16:31:59.750Z"), got[0].Start)
	assert.Equal(t, at("2024-11-27T16:32:01Z"), got[0].End)

	for format, want := range map[string]string{
		"":                                   "give the log_format string",
		`$remote_addr $status $request_time`: "has no $msec",
		`$msec $status $http_x_user`:         "has no $request_time",
		`$msec $request_time$status $http_x_user`: "cannot be told apart",
		`$msec $request_time $status`:             `no field "http_x_user"`,
	} {
		_, err := New("nginx", Options{LogFormat: format, User: "$http_x_user"})
		assert.ErrorContains(t, err, want, format)
	}
}

// Envoy's documentation's example of its default format, and lines of the
// same shape: a 429 is the limiter's refusal only with the RL flag.
func TestEnvoyDefaultFormat(t *testing.T) {
	got, skips := read(t, "envoy", Options{User: "X-Forwarded-For"}, fixture(t, "envoy-default.log"))
	assert.Equal(t, map[Skip]int{skipNoUser: 1}, skips)
	require.Len(t, got, 4)
	assert.Equal(t, Request{User: []byte("10.0.35.28"), Start: at("2016-04-15T20:17:00.310Z"), End: at("2016-04-15T20:17:00.538Z"), Status: 204, Outcome: bench.Allowed, Line: 1}, got[0])
	assert.Equal(t, bench.Denied, got[1].Outcome, "429 RL: the rate limit filter's")
	assert.Equal(t, bench.Other, got[2].Outcome, "429 without RL: the service's, let through")
	assert.Equal(t, bench.Errored, got[3].Outcome)

	// The operator, as written, says the same; without %RESPONSE_FLAGS%,
	// every 429 is a refusal.
	got, _ = read(t, "envoy", Options{User: "%REQ(x-forwarded-for)%"}, fixture(t, "envoy-default.log"))
	assert.Len(t, got, 4)
	noFlags := `[%START_TIME%] %RESPONSE_CODE% %DURATION% "%REQ(X-USER)%"`
	got, _ = read(t, "envoy", Options{LogFormat: noFlags, User: "X-User"}, []string{`[2024-01-01T00:00:00.000Z] 429 0 "u"`})
	assert.Equal(t, bench.Denied, got[0].Outcome)
	// START_TIME in Unix seconds with µs.
	got, _ = read(t, "envoy", Options{LogFormat: `%START_TIME(%s.%6f)% %RESPONSE_CODE% %DURATION% %REQ(X-USER)%`, User: "X-User"}, []string{`1704067200.000250 200 3 u`})
	assert.Equal(t, at("2024-01-01T00:00:00.00025Z"), got[0].Start)
	assert.Equal(t, at("2024-01-01T00:00:00.004251Z"), got[0].End)
}

// Envoy's JSON format dictionary (json_format), given as JSON: values
// typed (numbers) or not (strings), a null user skipped.
func TestEnvoyJSON(t *testing.T) {
	format, err := os.ReadFile(filepath.Join("testdata", "envoy-json.format"))
	require.NoError(t, err)
	got, skips := read(t, "envoy", Options{LogFormat: string(format), User: "x-user"}, fixture(t, "envoy-json.log"))
	assert.Equal(t, map[Skip]int{skipNoUser: 1}, skips)
	require.Len(t, got, 3)
	assert.Equal(t, Request{User: []byte("alice"), Start: at("2024-03-01T12:00:00.001Z"), End: at("2024-03-01T12:00:00.006Z"), Status: 200, Outcome: bench.Allowed, Line: 1}, got[0])
	assert.Equal(t, bench.Denied, got[1].Outcome)
	assert.Equal(t, at("2024-03-01T12:00:00.034Z"), got[2].End)
	_, err = New("envoy", Options{LogFormat: `{"start":"%START_TIME%","user":"%REQ(X-USER)%"}`, User: "X-User"})
	assert.ErrorContains(t, err, "no key for %DURATION%")
}

// HAProxy's HTTP log with the user captured: %tr (ms, no zone) and %Ta,
// through syslog or not.
func TestHAProxy(t *testing.T) {
	lines := []string{
		`127.0.0.1:41234 [27/Nov/2024:16:32:00.118] api api/<NOSRV> 0/-1/-1/-1/2 200 75 ---- {alice} "GET /ok HTTP/1.1"`,
		`<134>Nov 27 16:32:00 host haproxy[81]: 127.0.0.1:41236 [27/Nov/2024:16:32:00.130] api api/<NOSRV> 0/-1/-1/-1/0 429 212 PR-- {alice|x} "GET /ok HTTP/1.1"`,
		`127.0.0.1:41238 [27/Nov/2024:16:32:00.140] api api/<NOSRV> 0/-1/-1/-1/+3 -1 0 CR-- {} "<BADREQ>"`,
	}
	got, skips := read(t, "haproxy", Options{User: "capture.req.hdr(0)", Location: time.UTC}, lines)
	assert.Equal(t, map[Skip]int{skipNoUser: 1}, skips)
	require.Len(t, got, 2)
	assert.Equal(t, Request{User: []byte("alice"), Start: at("2024-11-27T16:32:00.118Z"), End: at("2024-11-27T16:32:00.122Z"), Status: 200, Outcome: bench.Allowed, Line: 1}, got[0])
	assert.Equal(t, bench.Denied, got[1].Outcome)

	got, _ = read(t, "haproxy", Options{LogFormat: `%ci [%tr] %ST %Ta %[capture.req.hdr(0)]`, User: "%[capture.req.hdr(0)]", Location: time.UTC},
		[]string{`1.2.3.4 [01/Jan/2025:00:00:00.500] 200 10 bob`})
	assert.Equal(t, "bob", string(got[0].User))
	_, err := New("haproxy", Options{LogFormat: `%ci %ST`, User: "%ci"})
	assert.ErrorContains(t, err, "neither %tr and %Ta nor %t and %Tt")
}

// Caddy's JSON access log, as its documentation shows it: ts the end,
// duration in seconds, headers in lists (the user's header found whatever
// its case); another logger's line is skipped.
func TestCaddy(t *testing.T) {
	got, skips := read(t, "caddy", Options{User: "request.headers.X-User"}, fixture(t, "caddy.log"))
	assert.Equal(t, map[Skip]int{skipNotAccess: 1}, skips)
	require.Len(t, got, 2)
	end := time.Duration(1646861401524102400)
	assert.Equal(t, Request{User: []byte("alice"), Start: end - 929675 - 1 - time.Microsecond, End: end + time.Microsecond, Status: 200, Outcome: bench.Allowed, Line: 1}, got[0])
	assert.Equal(t, bench.Denied, got[1].Outcome)

	got, _ = read(t, "caddy", Options{User: "request.client_ip", LogFormat: "time_format=iso8601 duration_format=string"},
		[]string{`{"ts":"2024-01-01T00:00:01.000+0100","logger":"http.log.access","request":{"client_ip":"10.0.0.1"},"duration":"1.5ms","status":200}`})
	assert.Equal(t, at("2024-01-01T00:00:01Z")-time.Hour+time.Millisecond, got[0].End, "ts has ms")
}

// JSON lines and CSV of named columns: Unix times of any unit, or RFC
// 3339, widened by their resolution.
func TestTables(t *testing.T) {
	got, _ := read(t, "jsonl", Options{}, []string{
		`{"start":1700000000.120,"end":1700000000.125,"user":"u","status":200}`,
		`{"start":"2023-11-14T22:13:20.2Z","end":"2023-11-14T22:13:20.3Z","user":"u","status":"429"}`,
	})
	require.Len(t, got, 2)
	assert.Equal(t, time.Duration(1700000000119000000), got[0].Start)
	assert.Equal(t, time.Duration(1700000000126000000), got[0].End)
	assert.Equal(t, bench.Denied, got[1].Outcome)
	assert.Equal(t, at("2023-11-14T22:13:20.1Z"), got[1].Start)

	got, skips := read(t, "csv", Options{User: "client"}, []string{
		`status,start,end,"client"`,
		`200,1700000000120,1700000000125,"a,b"`,
		`200,1700000000120,1700000000125,"unclosed`,
	})
	require.Len(t, got, 1)
	assert.Equal(t, "a,b", string(got[0].User))
	assert.Equal(t, time.Duration(1700000000119000000), got[0].Start)
	assert.Equal(t, map[Skip]int{skipShape: 1}, skips)

	p, err := New("csv", Options{})
	require.NoError(t, err)
	assert.ErrorContains(t, p.Parse([]byte("a,b"), 1, nil), `no column "start"`)
}

// k6's JSON output, read as bench --from-k6 reads it.
func TestK6(t *testing.T) {
	var lines []string
	for _, m := range []string{"http_req_duration", "http_req_blocked", "http_req_connecting", "http_req_tls_handshaking"} {
		lines = append(lines, `{"type":"Point","metric":"`+m+`","data":{"time":"2024-01-01T00:00:00.010Z","value":2,"tags":{"status":"429","user":"u"}}}`)
	}
	lines = append(lines, `not json http_req_duration"`)
	got, skips := read(t, "k6", Options{User: "user"}, lines)
	require.Len(t, got, 1)
	assert.Equal(t, Request{User: []byte("u"), Start: at("2024-01-01T00:00:00.006Z"), End: at("2024-01-01T00:00:00.010Z"), Status: 429, Outcome: bench.Denied, Line: 1}, got[0])
	assert.Equal(t, map[Skip]int{skipK6: 1}, skips)
}

func TestUnknownFormat(t *testing.T) {
	_, err := New("apache", Options{})
	assert.ErrorContains(t, err, "want one of nginx, envoy, haproxy, caddy, k6, jsonl, csv")
	_, err = New("nginx", Options{LimitedStatus: 1000})
	assert.Error(t, err)
	assert.True(t, strings.Contains(NginxFormat, "$msec"))
}
