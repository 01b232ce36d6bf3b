// Package k6 reads the JSON output of k6 (`k6 run --out json=FILE`,
// gzipped or not) from one or many load generators into a
// [bench.Recording], so that rlconform judges the exactness of a limiter
// under load that k6 drove (rlconform bench --from-k6).
//
// # What k6 writes
//
// k6's JSON output is one JSON object a line
// (https://grafana.com/docs/k6/latest/results-output/real-time/json/):
// "Metric" lines declare a metric; "Point" lines are samples, each with
// "data": {"time", "value", "tags"}, where time is "timestamp when the
// sample was collected", time values are in milliseconds, and tags are
// the sample's tags (a request's own, such as a user tag, and k6's system
// tags: status, error_code, url, method, ...).
//
// For an HTTP request k6 writes one point of each http_req_* metric, and
// its built-in metrics reference says when they are stamped
// (https://grafana.com/docs/k6/latest/using-k6/metrics/reference/): "For
// all http_req_* metrics, the timestamp is emitted the end of the request.
// In other words, the timestamp happens when k6 receives the end of the
// response body, or the request times out." The same page defines
// http_req_duration as "total time for the request ... equal to
// http_req_sending + http_req_waiting + http_req_receiving", without the
// time blocked (http_req_blocked: "waiting for a free TCP connection slot
// before initiating the request"), connecting (http_req_connecting) and
// in the TLS handshake (http_req_tls_handshaking). The points of one
// request share its time and its tags; k6 writes them together.
//
// # What k6 measures
//
// k6 times each phase of a request with net/http/httptrace, on the wall
// clock (lib/netext/httpext/tracer.go): http_req_blocked runs from
// GetConn to GotConn, so it holds the DNS lookup, connecting and the TLS
// handshake (http_req_connecting and http_req_tls_handshaking are parts of
// it, not phases after it); http_req_sending runs from the connection
// being ready to the request written, http_req_waiting from then to the
// first byte of the answer, and http_req_receiving from the first byte to
// the end. Sending and receiving can overlap: a server that answers
// before the request is fully written (HTTP/2 does) gets a waiting time
// of 0, and a duration longer than the time since sending began. So the
// duration can be too long, never too short, but in two cases, which the
// reader widens:
//
//   - a negative phase: k6 reads the wall clock, and a clock stepped back
//     during a request shortens one phase, or makes it negative (k6
//     issues #588 and #1872);
//   - a write that failed (an answer came while the request was being
//     written): k6 then counts neither sending nor waiting, both 0, and
//     the duration is the receiving alone.
//
// Such a request began at most the request timeout (60s, k6's default;
// [Options.Timeout]) before its end: its interval is widened to that, and
// counted ([Stats]).
//
// # A request's interval
//
// The limiter decided a request after it reached the server, so after k6
// got its connection, and before k6 received the answer's end. So, on the
// generator's clock:
//
//	returned = time
//	sent     = time − (http_req_duration + http_req_blocked)
//
// The documentation makes time − http_req_duration the instant sending
// began; subtracting the time blocked as well is conservative: it covers
// the request's retries on another connection, and any overlap of the
// phases. A wider interval can only make the check weaker, never
// stricter: an exact limiter is never failed for it. The instants are the
// generator's wall clock, which rlconform bench's --clock-skew bounds
// against the limiter's.
//
// A request's status tag decides its outcome: 2xx allowed, the refusal
// status (429) denied, anything else (status 0 for a request that got no
// answer, error_code says why) an error, which the check counts as
// possibly allowed at any instant from when it was sent to the end of the
// run.
//
// The request's user is its user tag; a script that keeps the identity
// out of the tags (a tag makes a time series per value) may set it as
// metadata (data.metadata, k6's high-cardinality per-request values),
// where the reader finds it too.
//
// A file cut short (k6 killed: a gzip stream without its end, a last line
// cut in its middle) is read up to the cut, and the cut said ([Stats]).
package k6

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rlconform/rlconform/bench"
	"github.com/rlconform/rlconform/internal/loglines"
	"github.com/rlconform/rlconform/internal/plural"
)

// Options say how to read the requests.
type Options struct {
	// UserTag is the tag that names a request's user (default "user"):
	// the script tags every request with the identity it sends (or sets
	// it as metadata of the request, where it is read too).
	UserTag string
	// LimitedStatus is the status of a refusal (default 429).
	LimitedStatus int
	// Timeout is the longest a request may have taken: k6's request
	// timeout (default 60s, k6's; at most a day). A request whose phases
	// say less than it took (a negative phase, a write that failed) is
	// widened to it.
	Timeout time.Duration
	// OnRequest, when set, is given each request as it is read, instead
	// of the Reader keeping it: a Recording then holds none.
	OnRequest func(Request) error
}

// DefaultTimeout is k6's default request timeout.
const DefaultTimeout = 60 * time.Second

// Request is one request read, as [Options.OnRequest] is given it.
type Request struct {
	// User is its user (valid during the call).
	User []byte
	// Outcome, from its Status (0: no answer).
	Outcome bench.Outcome
	Status  int
	// Sent and Returned bound the instant the limiter decided it, in Unix
	// ns on the generator's clock.
	Sent, Returned time.Duration
	// Line is the line of its http_req_duration point.
	Line int64
	// Widened says why its interval was widened to the timeout ("" when
	// it was not): "a negative phase", "a failed write".
	Widened string
}

// Stats count what was read.
type Stats struct {
	// Generators is how many outputs were read, Lines their lines.
	Generators int
	Lines      int64
	// Requests is how many requests were read, Decisions how many of them
	// were kept (those with the user tag).
	Requests  int
	Decisions int
	// Untagged counts requests without the user tag: not judged (the
	// script's other requests, a login say).
	Untagged int
	// Incomplete counts requests whose http_req_duration or
	// http_req_blocked point was missing: not judged.
	Incomplete int
	// FromMetadata counts requests whose user was in the request's
	// metadata, not in its tags.
	FromMetadata int
	// NegativePhase counts requests with a negative phase (the clock
	// stepped back during them), FailedWrite those whose write failed:
	// each was widened to the timeout.
	NegativePhase int
	FailedWrite   int
	// TooLong counts lines longer than 64 KiB, skipped.
	TooLong int64
	// Cuts says, for each output read up to a cut, where and why.
	Cuts []string
}

// Reader reads k6 outputs, one generator each, into one recording.
type Reader struct {
	opts  Options
	users map[string]int32
	rec   bench.Recording
	stats Stats
	names []string
	// the output being read: its name, parser and gatherer.
	name string
	ps   parser
	g    gatherer
}

// NewReader returns a Reader with opts (defaults filled in).
func NewReader(opts Options) *Reader {
	if opts.UserTag == "" {
		opts.UserTag = "user"
	}
	if opts.LimitedStatus == 0 {
		opts.LimitedStatus = 429
	}
	if opts.Timeout <= 0 || opts.Timeout > 24*time.Hour {
		opts.Timeout = DefaultTimeout
	}
	return &Reader{opts: opts, users: map[string]int32{},
		rec: bench.Recording{Errors: map[string]int{}, ErrorExamples: map[string]string{}}}
}

// ReadFile reads the output of one generator from path.
func (r *Reader) ReadFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("k6 output: %w", err)
	}
	defer f.Close()
	if err := r.Read(filepath.Base(path), f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// The bounds on what a point may say: its time between 1970 and 2200
// (instants of Unix nanoseconds, far from where an int64 wraps), a
// duration in ms of at most a day either way (k6's request timeout
// defaults to 60 s): anything else is an error naming the line, never a
// wrapped instant.
var (
	earliest = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	latest   = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

const maxMillis = float64(24 * time.Hour / time.Millisecond)

// instant is t in Unix nanoseconds, or an error when it is out of bounds.
func instant(t time.Time) (int64, error) {
	if t.Before(earliest) || !t.Before(latest) {
		return 0, fmt.Errorf("time %v: want an instant from %d to %d", t, earliest.Year(), latest.Year())
	}
	return t.UnixNano(), nil
}

// Read reads the output of one generator (JSON lines, gzipped or not),
// streaming: only the decisions are kept. An output cut short (a gzip
// stream without its end, a last line cut in its middle) is read up to
// the cut, which Stats says.
func (r *Reader) Read(name string, in io.Reader) error {
	lr, err := loglines.New(in)
	if err != nil {
		return err
	}
	r.Begin(name)
	for {
		b, ok := lr.Next()
		if !ok {
			break
		}
		if err := r.Feed(b, lr.Line()); err != nil && !lr.Unterminated() {
			return err
		}
	}
	r.stats.Lines += lr.Line()
	r.stats.TooLong += lr.TooLong()
	if err := lr.Err(); err != nil {
		return fmt.Errorf("after line %d: %w", lr.Line(), err)
	}
	switch {
	case lr.Cut() != nil:
		r.stats.Cuts = append(r.stats.Cuts, fmt.Sprintf("%s: after line %d, %v", name, lr.Line(), lr.Cut()))
	case lr.Unterminated():
		// k6 ends every line: the last one was cut in its middle.
		r.stats.Cuts = append(r.stats.Cuts, fmt.Sprintf("%s: its last line (%d) has no end (k6 stopped while writing it): read up to it", name, lr.Line()))
	}
	return r.End()
}

// Begin starts reading the output of another generator, line by line
// ([Reader.Feed], then [Reader.End]).
func (r *Reader) Begin(name string) {
	r.stats.Generators++
	r.names = append(r.names, name)
	r.name, r.ps, r.g = name, parser{}, gatherer{r: r}
}

// Feed reads one line of the output begun, numbered line.
func (r *Reader) Feed(b []byte, line int64) error {
	// Only the points of the metrics of an interval matter.
	if !interesting(b) {
		return nil
	}
	p, ok, err := r.ps.parse(b)
	if err != nil {
		return fmt.Errorf("line %d: %w", line, err)
	}
	if !ok {
		return nil // a metric's declaration
	}
	bit := metricBit(p.metric)
	if bit == 0 {
		return nil
	}
	if !(p.value >= -maxMillis && p.value <= maxMillis) { // NaN too
		return fmt.Errorf("line %d: not a point of a duration in ms (-%.0f to %.0f, a day): %.200s", line, maxMillis, maxMillis, b)
	}
	p.line = line
	if err := r.g.add(p, bit); err != nil {
		return fmt.Errorf("line %d: %w", line, err)
	}
	return nil
}

// End ends the output begun: its requests still gathered are handed on.
func (r *Reader) End() error { return r.g.finishAll() }

// Stats says what was read so far.
func (r *Reader) Stats() Stats { return r.stats }

// Recording returns what was read, the decisions of every generator
// merged (the Reader must not be used after). It fails when no request
// carried the user tag.
func (r *Reader) Recording() (*bench.Recording, error) {
	if len(r.rec.Decisions) == 0 {
		return nil, fmt.Errorf("k6 output: %s", r.nothingJudged())
	}
	rec := r.rec
	rec.Source = fmt.Sprintf("k6 JSON output of %s (%s)", plural.Count(r.stats.Generators, "generator"), strings.Join(r.names, ", "))
	r.rec = bench.Recording{}
	return &rec, nil
}

// nothingJudged says why no request was kept.
func (r *Reader) nothingJudged() string {
	if r.stats.Untagged > 0 {
		return fmt.Sprintf("none of its %d requests carries the tag %q that names the user, in its tags or its metadata (tag each request with the identity it sends, or give --user-tag)", r.stats.Requests, r.opts.UserTag)
	}
	return "no HTTP request points: is it the output of k6 run --out json=FILE?"
}

// millis is ms as a duration, rounded up to the nanosecond (k6 writes
// float64 milliseconds: a rounding can only widen the interval).
func millis(ms float64) time.Duration { return time.Duration(math.Ceil(ms * 1e6)) }
