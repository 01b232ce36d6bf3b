// Package accesslog reads the access logs of gateways into requests: who
// sent each one, the interval its instant lies in, and what it was
// answered. It reads nginx, Envoy (text or JSON), HAProxy and Caddy logs,
// k6's JSON output, and JSON lines or CSV with named columns, one line at
// a time, each in bounded time and memory: a line is untrusted, and one
// that does not fit is skipped with its reason, never a panic.
//
// Each format's instants mean something of their own (the end, or the
// start, of a request; whole seconds, or milliseconds); a parser widens
// every interval to all that its fields can mean, so that it holds the
// instant the limiter decided at, and says how ([Parser.Notes]).
//
// Typical usage:
//
//	p, err := accesslog.New("nginx", accesslog.Options{LogFormat: format, User: "$http_x_user"})
//	for each line b numbered n {
//		err := p.Parse(b, n, func(r *accesslog.Request) error { ...; return nil })
//	}
//	err = p.Close(emit)
package accesslog

import (
	"fmt"
	"strings"
	"time"

	"github.com/rlconform/rlconform/bench"
)

// Request is one request read from a log.
type Request struct {
	// User names its user (valid until the next line is parsed).
	User []byte
	// Start and End bound the instant the limiter decided it, in Unix
	// nanoseconds on the clock of the gateway that logged it.
	Start, End time.Duration
	// Status is the answer's status (0: none), Outcome what it means for
	// the limiter.
	Status  int
	Outcome bench.Outcome
	// Line is the line it was read from (for k6, its duration point's).
	Line int64
}

// Options say how to read a log.
type Options struct {
	// LogFormat is the format the gateway writes, as its configuration
	// states it: nginx's log_format string, Envoy's format string or
	// json_format object, HAProxy's log-format string, Caddy's
	// time_format and duration_format; "" for the format's default.
	LogFormat string
	// User names the field that names a request's user, in the format's
	// terms (nginx: a variable; Envoy: %REQ(X-User)%; HAProxy: a variable
	// or capture.req.hdr(N); Caddy: a path such as
	// request.headers.X-User; k6: a tag; JSON lines and CSV: a column).
	User string
	// LimitedStatus is the status of the limiter's refusal (default 429).
	LimitedStatus int
	// Location is the zone of instants written without one (HAProxy's
	// %tr); default time.Local.
	Location *time.Location
	// Timeout is the longest a k6 request may have taken (k6's timeout,
	// default 60s).
	Timeout time.Duration
}

// Parser reads the lines of one log.
type Parser interface {
	// Parse reads line b, numbered n, and calls emit with each request it
	// completes. A line that is not a request's is skipped: Parse returns
	// a [Skip] that says why.
	Parse(b []byte, n int64, emit func(*Request) error) error
	// Close ends the log: the requests still gathered are emitted.
	Close(emit func(*Request) error) error
	// Notes say how the log's instants were read and widened.
	Notes() []string
}

// Skip is why a line was skipped.
type Skip string

func (s Skip) Error() string { return string(s) }

// The reasons every format may skip a line for.
const (
	skipShape    Skip = "not in the log format given"
	skipNoUser   Skip = "no user"
	skipLongUser Skip = "a user longer than 4096 bytes"
	skipTime     Skip = "an instant out of range (1970 to 2200) or not one"
	skipDuration Skip = "a duration not a number, negative or past a day"
	skipStatus   Skip = "a status not a number from 0 to 999"
)

// Formats are the formats New reads.
var Formats = []string{"nginx", "envoy", "haproxy", "caddy", "k6", "jsonl", "csv"}

// New returns a parser of format for one log.
func New(format string, opts Options) (Parser, error) {
	if opts.LimitedStatus == 0 {
		opts.LimitedStatus = 429
	}
	if opts.Location == nil {
		opts.Location = time.Local
	}
	if opts.LimitedStatus < 100 || opts.LimitedStatus > 999 {
		return nil, fmt.Errorf("limited status %d: want 100 to 999", opts.LimitedStatus)
	}
	switch format {
	case "nginx":
		return newNginx(opts)
	case "envoy":
		return newEnvoy(opts)
	case "haproxy":
		return newHAProxy(opts)
	case "caddy":
		return newCaddy(opts)
	case "k6":
		return newK6(opts)
	case "jsonl":
		return newJSONLines(opts)
	case "csv":
		return newCSV(opts)
	}
	return nil, fmt.Errorf("format %q: want one of %s", format, strings.Join(Formats, ", "))
}

// outcome is what status means for the limiter: 2xx allowed, its refusal
// denied, a failure of the service behind the gateway or of the
// connection (5xx, 0, nginx's 499) an error (it may have been counted,
// even later), anything else (a redirect, a 404) another answer (it may
// have been counted, within its interval).
func outcome(status, limited int) bench.Outcome {
	switch {
	case status == limited:
		return bench.Denied
	case status >= 200 && status < 300:
		return bench.Allowed
	case status == 0 || status == 499 || status >= 500:
		return bench.Errored
	}
	return bench.Other
}

// maxUser bounds a user id: bench.MaxStreamUser.
const maxUser = bench.MaxStreamUser

// user checks a user field's value: "-" and "" are no user (nginx and
// Envoy write "-" for an empty value).
func user(v []byte) ([]byte, error) {
	switch {
	case len(v) == 0 || (len(v) == 1 && v[0] == '-'):
		return nil, skipNoUser
	case len(v) > maxUser:
		return nil, skipLongUser
	}
	return v, nil
}

// statusUser reads a line's status (st) and its user (u), in that order:
// a bad status is the reason a line is skipped before a missing user.
func statusUser(st, u []byte) (int, []byte, error) {
	code, err := status(st)
	if err != nil {
		return 0, nil, err
	}
	id, err := user(u)
	if err != nil {
		return 0, nil, err
	}
	return code, id, nil
}

// status reads a status of at most three digits.
func status(v []byte) (int, error) {
	if len(v) == 0 || len(v) > 3 {
		return 0, skipStatus
	}
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, skipStatus
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}
