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
// # A request's interval
//
// The limiter decided a request after it reached the server, so after k6
// began to send it, and before k6 received the answer's end. So, on the
// generator's clock:
//
//	returned = time
//	sent     = time − (http_req_duration + http_req_blocked + http_req_connecting + http_req_tls_handshaking)
//
// The documentation makes time − http_req_duration the instant sending
// began; subtracting the phases before it as well is conservative: it
// covers a response that starts before the request is fully written, for
// which k6 counts no waiting time (its http_req_waiting is then 0, so the
// duration falls short of the time since sending began), and any overlap
// of the phases. A wider interval can only make the check weaker, never
// stricter: an exact limiter is never failed for it. The instants are the
// generator's wall clock, which rlconform bench's --clock-skew bounds
// against the limiter's.
//
// A request's status tag decides its outcome: 2xx allowed, the refusal
// status (429) denied, anything else (status 0 for a request that got no
// answer, error_code says why) an error, which the check counts as
// possibly allowed at any instant from when it was sent to the end of the
// run.
package k6

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rlconform/rlconform/bench"
)

// Options say how to read the requests.
type Options struct {
	// UserTag is the tag that names a request's user (default "user"):
	// the script tags every request with the identity it sends.
	UserTag string
	// LimitedStatus is the status of a refusal (default 429).
	LimitedStatus int
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
	// Incomplete counts requests some of whose http_req_* points were
	// missing: not judged.
	Incomplete int
}

// Reader reads k6 outputs, one generator each, into one recording.
type Reader struct {
	opts  Options
	users map[string]int32
	rec   bench.Recording
	stats Stats
	names []string
}

// NewReader returns a Reader with opts (defaults filled in).
func NewReader(opts Options) *Reader {
	if opts.UserTag == "" {
		opts.UserTag = "user"
	}
	if opts.LimitedStatus == 0 {
		opts.LimitedStatus = 429
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

// the metrics a request's interval is made of, as bits.
const (
	hasDuration = 1 << iota
	hasBlocked
	hasConnecting
	hasTLS
	hasAll = hasDuration | hasBlocked | hasConnecting | hasTLS
)

// pending is a request whose points are being gathered.
type pending struct {
	end  int64 // its points' time, Unix ns
	tags []byte
	has  uint8
	// duration and before (blocked, connecting and TLS) in ms.
	duration, before float64
}

// The bounds on what a point may say: its time between 1970 and 2200
// (instants of Unix nanoseconds, far from where an int64 wraps), a
// duration in ms of at most a day (k6's request timeout defaults to 60 s):
// anything else is an error naming the line, never a wrapped instant.
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

// maxPending bounds the requests gathered at once: k6 writes a request's
// points together, so one is almost always enough.
const maxPending = 1024

// point is the part of a line that matters here.
type point struct {
	Type   string `json:"type"`
	Metric string `json:"metric"`
	Data   struct {
		Time  time.Time       `json:"time"`
		Value float64         `json:"value"`
		Tags  json.RawMessage `json:"tags"`
	} `json:"data"`
}

// Read reads the output of one generator (JSON lines, gzipped or not),
// streaming: only the decisions are kept.
func (r *Reader) Read(name string, in io.Reader) error {
	br := bufio.NewReaderSize(in, 1<<16)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
		defer gz.Close()
		br = bufio.NewReaderSize(gz, 1<<16)
	}
	r.stats.Generators++
	r.names = append(r.names, name)
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
	var (
		ps   parser
		g    = gatherer{r: r}
		line int64
	)
	for sc.Scan() {
		line++
		b := sc.Bytes()
		// Only the points of the four metrics of an interval matter.
		if !interesting(b) {
			continue
		}
		p, ok, err := ps.parse(b)
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if !ok {
			continue // a metric's declaration
		}
		bit := metricBit(p.metric)
		if bit == 0 {
			continue
		}
		if !(p.value >= 0 && p.value <= maxMillis) { // NaN too
			return fmt.Errorf("line %d: not a point of a duration in ms (0 to %.0f, a day): %.200s", line, maxMillis, b)
		}
		if err := g.add(p, bit); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
	}
	r.stats.Lines += line
	if err := sc.Err(); err != nil {
		return fmt.Errorf("after line %d: %w", line, err)
	}
	return g.finishAll()
}

// reading is what a point says: its metric, its time (Unix ns), its
// value and its tags.
type reading struct {
	metric []byte
	end    int64
	value  float64
	tags   []byte
}

// parser reads the points of one output's lines, keeping from line to
// line what the next may reuse. What a reading holds is valid until the
// next line is read.
type parser struct {
	f fields
	p point
	// lastTime is the time last parsed, lastEnd its instant.
	lastTime []byte
	lastEnd  int64
}

// parse reads the point on line b: with the fast scanner, or with
// encoding/json when the line has escapes. ok is false for a line that is
// not a point (a metric's declaration).
func (ps *parser) parse(b []byte) (p reading, ok bool, err error) {
	err = scanPoint(b, &ps.f)
	switch {
	case err == nil:
		return ps.scanned(b)
	case errors.Is(err, errSlow):
		return ps.decoded(b)
	}
	return reading{}, false, fmt.Errorf("%w: %.200s", err, b)
}

// scanned is the point on line b that the fast scanner read into ps.f.
func (ps *parser) scanned(b []byte) (reading, bool, error) {
	f := &ps.f
	if string(f.typ) != "Point" {
		return reading{}, false, nil
	}
	if len(f.time) == 0 {
		return reading{}, false, fmt.Errorf("a point without its time: %.200s", b)
	}
	if !bytes.Equal(f.time, ps.lastTime) {
		at, err := time.Parse(time.RFC3339Nano, string(f.time))
		if err != nil {
			return reading{}, false, fmt.Errorf("time: %w", err)
		}
		ns, err := instant(at)
		if err != nil {
			return reading{}, false, err
		}
		ps.lastTime, ps.lastEnd = append(ps.lastTime[:0], f.time...), ns
	}
	value, err := strconv.ParseFloat(string(f.value), 64)
	if err != nil {
		return reading{}, false, fmt.Errorf("value: %w", err)
	}
	return reading{metric: f.metric, end: ps.lastEnd, value: value, tags: f.tags}, true, nil
}

// decoded is the point on line b as encoding/json reads it (a line with
// escapes).
func (ps *parser) decoded(b []byte) (reading, bool, error) {
	raw := ps.p.Data.Tags[:0]
	ps.p = point{}
	ps.p.Data.Tags = raw
	if err := json.Unmarshal(b, &ps.p); err != nil {
		return reading{}, false, err
	}
	if ps.p.Type != "Point" {
		return reading{}, false, nil
	}
	if ps.p.Data.Time.IsZero() {
		return reading{}, false, fmt.Errorf("a point without its time: %.200s", b)
	}
	end, err := instant(ps.p.Data.Time)
	if err != nil {
		return reading{}, false, err
	}
	return reading{metric: []byte(ps.p.Metric), end: end, value: ps.p.Data.Value, tags: ps.p.Data.Tags}, true, nil
}

// metricBit is the bit of metric among the four of an interval, 0 for
// any other.
func metricBit(metric []byte) uint8 {
	switch string(metric) {
	case "http_req_duration":
		return hasDuration
	case "http_req_blocked":
		return hasBlocked
	case "http_req_connecting":
		return hasConnecting
	case "http_req_tls_handshaking":
		return hasTLS
	}
	return 0
}

// gatherer gathers the points of the requests of one output, at most
// maxPending at once, and hands each request to the Reader once it has
// all four (or when it is given up on, incomplete).
type gatherer struct {
	r    *Reader
	open []*pending // oldest first
	free []*pending
}

// add adds point p, of the metric bit, to its request (the one open with
// its time and tags, or a new one), and finishes the request when it is
// complete.
func (g *gatherer) add(p reading, bit uint8) error {
	q := g.find(p.end, p.tags)
	if q == nil {
		var err error
		if q, err = g.begin(p.end, p.tags); err != nil {
			return err
		}
	}
	if q.has&bit != 0 {
		return fmt.Errorf("a second %s point of one request (same time and tags)", p.metric)
	}
	q.has |= bit
	if bit == hasDuration {
		q.duration = p.value
	} else {
		q.before += p.value
	}
	if q.has != hasAll {
		return nil
	}
	for i := len(g.open) - 1; i >= 0; i-- {
		if g.open[i] == q {
			g.open = append(g.open[:i], g.open[i+1:]...)
			break
		}
	}
	return g.finish(q)
}

// find is the open request with time end and tags, the newest first; nil
// when none.
func (g *gatherer) find(end int64, tags []byte) *pending {
	for i := len(g.open) - 1; i >= 0; i-- {
		if g.open[i].end == end && bytes.Equal(g.open[i].tags, tags) {
			return g.open[i]
		}
	}
	return nil
}

// begin opens a request with time end and tags; when maxPending are
// open, the oldest is given up on first (incomplete).
func (g *gatherer) begin(end int64, tags []byte) (*pending, error) {
	if len(g.open) == maxPending {
		g.r.stats.Incomplete++
		if err := g.finish(g.open[0]); err != nil {
			return nil, err
		}
		g.open = g.open[1:]
	}
	var q *pending
	if n := len(g.free); n > 0 {
		q, g.free = g.free[n-1], g.free[:n-1]
	} else {
		q = &pending{}
	}
	q.end, q.tags, q.has, q.duration, q.before = end, append(q.tags, tags...), 0, 0, 0
	g.open = append(g.open, q)
	return q, nil
}

// finish hands request q to the Reader and keeps it for reuse.
func (g *gatherer) finish(q *pending) error {
	err := g.r.request(q)
	q.tags = q.tags[:0]
	g.free = append(g.free, q)
	return err
}

// finishAll hands the requests still open to the Reader, incomplete: the
// output ended before their every point.
func (g *gatherer) finishAll() error {
	for _, q := range g.open {
		g.r.stats.Incomplete++
		if err := g.finish(q); err != nil {
			return err
		}
	}
	return nil
}

// interesting reports whether line b may be a point of one of the four
// metrics of an interval: it names one of them. (The scanner then reads
// the line's own metric.)
func interesting(b []byte) bool {
	for {
		i := bytes.Index(b, []byte("http_req_"))
		if i < 0 {
			return false
		}
		b = b[i+len("http_req_"):]
		for _, m := range [...]string{`duration"`, `blocked"`, `connecting"`, `tls_handshaking"`} {
			if bytes.HasPrefix(b, []byte(m)) {
				return true
			}
		}
	}
}

// request turns a gathered request into a decision (when complete and
// tagged).
func (r *Reader) request(q *pending) error {
	r.stats.Requests++
	if q.has != hasAll {
		return nil // counted as incomplete by the caller
	}
	var t requestTags
	if err := tagsOf(q.tags, r.opts.UserTag, &t); err != nil {
		if !errors.Is(err, errSlow) {
			return fmt.Errorf("tags %.200s: %w", q.tags, err)
		}
		// Escapes, or values not strings: encoding/json reads them.
		var m map[string]any
		if err := json.Unmarshal(q.tags, &m); err != nil {
			return fmt.Errorf("tags %.200s: %w", q.tags, err)
		}
		t = requestTags{}
		for k, dst := range map[string]*[]byte{r.opts.UserTag: &t.user, "status": &t.status, "error_code": &t.errorCode, "error": &t.error, "url": &t.url} {
			if v, ok := m[k]; ok && v != nil {
				*dst = fmt.Append(nil, v)
				t.hasUser = t.hasUser || k == r.opts.UserTag
				t.hasStatus = t.hasStatus || k == "status"
			}
		}
	}
	if !t.hasUser || len(t.user) == 0 {
		r.stats.Untagged++
		return nil
	}
	if !t.hasStatus {
		return errors.New("a request without the status tag: k6 was run with --system-tags that leave it out (keep status and error_code)")
	}
	status, err := strconv.Atoi(string(t.status))
	if err != nil {
		return fmt.Errorf("status tag %q: %w", t.status, err)
	}
	u, ok := r.users[string(t.user)]
	if !ok && len(r.rec.UserIDs) == math.MaxInt32 {
		return fmt.Errorf("more than %d users", math.MaxInt32)
	}
	if !ok {
		user := string(t.user)
		u = int32(len(r.rec.UserIDs))
		r.users[user] = u
		r.rec.UserIDs = append(r.rec.UserIDs, user)
	}
	d := bench.Decision{User: u, Returned: time.Duration(q.end),
		Sent: time.Duration(q.end) - millis(q.duration+q.before)}
	switch {
	case status >= 200 && status < 300:
		d.Outcome = bench.Allowed
	case status == r.opts.LimitedStatus:
		d.Outcome = bench.Denied
	default:
		d.Outcome = bench.Errored
		kind, example := errorKind(status, &t)
		r.rec.Errors[kind]++
		if _, seen := r.rec.ErrorExamples[kind]; !seen {
			r.rec.ErrorExamples[kind] = example
		}
	}
	r.rec.Decisions = append(r.rec.Decisions, d)
	r.rec.Latency = append(r.rec.Latency, millis(q.duration))
	r.stats.Decisions++
	return nil
}

// millis is ms as a duration, rounded up to the nanosecond (k6 writes
// float64 milliseconds: a rounding can only widen the interval).
func millis(ms float64) time.Duration { return time.Duration(math.Ceil(ms * 1e6)) }

// errorKind names the kind of a failed request as bench does (timeout,
// connection, status, other), from k6's status and error_code tags (k6's
// error codes: 1050 a request timeout, 1100–1199 DNS, 1200–1299 TCP,
// 1300–1399 TLS).
func errorKind(status int, t *requestTags) (string, string) {
	if status != 0 {
		return "status", fmt.Sprintf("HTTP %d from %s", status, t.url)
	}
	msg := string(t.error)
	if msg == "" {
		msg = "no answer"
	}
	if len(t.errorCode) > 0 {
		msg += " (error_code " + string(t.errorCode) + ")"
	}
	code, _ := strconv.Atoi(string(t.errorCode))
	switch {
	case code == 1050:
		return "timeout", msg
	case code >= 1100 && code < 1400:
		return "connection", msg
	}
	return "other", msg
}

// Stats says what was read so far.
func (r *Reader) Stats() Stats { return r.stats }

// Recording returns what was read, the decisions of every generator
// merged (the Reader must not be used after). It fails when no request
// carried the user tag.
func (r *Reader) Recording() (*bench.Recording, error) {
	if len(r.rec.Decisions) == 0 {
		why := "no HTTP request points: is it the output of k6 run --out json=FILE?"
		if r.stats.Untagged > 0 {
			why = fmt.Sprintf("none of its %d requests carries the tag %q that names the user (tag each request with the identity it sends, or give --user-tag)", r.stats.Requests, r.opts.UserTag)
		}
		return nil, fmt.Errorf("k6 output: %s", why)
	}
	rec := r.rec
	rec.Source = fmt.Sprintf("k6 JSON output of %s (%s)", plural(r.stats.Generators, "generator"), strings.Join(r.names, ", "))
	r.rec = bench.Recording{}
	return &rec, nil
}

func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
