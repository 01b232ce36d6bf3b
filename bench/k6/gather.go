package k6

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// the metrics of a request's interval, as bits: duration and blocked make
// it; the others say when it is to be widened.
const (
	hasDuration = 1 << iota
	hasBlocked
	hasConnecting
	hasTLS
	hasSending
	hasWaiting
	hasReceiving
	hasNeeded = hasDuration | hasBlocked
	hasAll    = 1<<iota - 1
)

// pending is a request whose points are being gathered.
type pending struct {
	end        int64 // its points' time, Unix ns
	tags, meta []byte
	has        uint8
	line       int64 // the line of its duration point (or its first)
	// duration and blocked in ms; sending and waiting, to tell a write
	// that failed; negative: a phase was.
	duration, blocked, sending, waiting float64
	negative                            bool
}

// maxPending bounds the requests gathered at once: k6 writes a request's
// points together, so one is almost always enough.
const maxPending = 1024

// point is the part of a line that matters here.
type point struct {
	Type   string `json:"type"`
	Metric string `json:"metric"`
	Data   struct {
		Time     time.Time       `json:"time"`
		Value    float64         `json:"value"`
		Tags     json.RawMessage `json:"tags"`
		Metadata json.RawMessage `json:"metadata"`
	} `json:"data"`
}

// reading is what a point says: its metric, its time (Unix ns), its
// value, its tags and metadata, and its line.
type reading struct {
	metric     []byte
	end        int64
	value      float64
	tags, meta []byte
	line       int64
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
	return reading{metric: f.metric, end: ps.lastEnd, value: value, tags: f.tags, meta: f.metadata}, true, nil
}

// decoded is the point on line b as encoding/json reads it (a line with
// escapes).
func (ps *parser) decoded(b []byte) (reading, bool, error) {
	tags, meta := ps.p.Data.Tags[:0], ps.p.Data.Metadata[:0]
	ps.p = point{}
	ps.p.Data.Tags, ps.p.Data.Metadata = tags, meta
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
	return reading{metric: []byte(ps.p.Metric), end: end, value: ps.p.Data.Value, tags: ps.p.Data.Tags, meta: ps.p.Data.Metadata}, true, nil
}

// metricBit is the bit of metric among those of an interval, 0 for any
// other.
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
	case "http_req_sending":
		return hasSending
	case "http_req_waiting":
		return hasWaiting
	case "http_req_receiving":
		return hasReceiving
	}
	return 0
}

// interesting reports whether line b may be a point of one of the
// metrics of an interval: it names one of them. (The scanner then reads
// the line's own metric.)
func interesting(b []byte) bool {
	for {
		i := bytes.Index(b, []byte("http_req_"))
		if i < 0 {
			return false
		}
		b = b[i+len("http_req_"):]
		for _, m := range [...]string{`duration"`, `blocked"`, `connecting"`, `tls_handshaking"`, `sending"`, `waiting"`, `receiving"`} {
			if bytes.HasPrefix(b, []byte(m)) {
				return true
			}
		}
	}
}

// gatherer gathers the points of the requests of one output, at most
// maxPending at once, and hands each request to the Reader once it has
// all seven (or when it is given up on: complete if it has its duration
// and blocked points, else incomplete).
type gatherer struct {
	r    *Reader
	open []*pending // oldest first
	free []*pending
}

// add adds point p, of the metric bit, to its request (the one open with
// its time, tags and metadata, or a new one), and finishes the request
// when it has every point.
func (g *gatherer) add(p reading, bit uint8) error {
	q := g.find(p)
	if q == nil {
		var err error
		if q, err = g.begin(p); err != nil {
			return err
		}
	}
	if q.has&bit != 0 {
		return fmt.Errorf("a second %s point of one request (same time and tags)", p.metric)
	}
	q.has |= bit
	q.negative = q.negative || p.value < 0
	switch bit {
	case hasDuration:
		q.duration, q.line = p.value, p.line
	case hasBlocked:
		q.blocked = p.value
	case hasSending:
		q.sending = p.value
	case hasWaiting:
		q.waiting = p.value
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

// find is the open request of p's time, tags and metadata, the newest
// first; nil when none.
func (g *gatherer) find(p reading) *pending {
	for i := len(g.open) - 1; i >= 0; i-- {
		if q := g.open[i]; q.end == p.end && bytes.Equal(q.tags, p.tags) && bytes.Equal(q.meta, p.meta) {
			return q
		}
	}
	return nil
}

// begin opens a request of p's time, tags and metadata; when maxPending
// are open, the oldest is handed on first.
func (g *gatherer) begin(p reading) (*pending, error) {
	if len(g.open) == maxPending {
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
	*q = pending{end: p.end, tags: append(q.tags[:0], p.tags...), meta: append(q.meta[:0], p.meta...), line: p.line}
	g.open = append(g.open, q)
	return q, nil
}

// finish hands request q to the Reader (counted incomplete without its
// duration or blocked point) and keeps it for reuse.
func (g *gatherer) finish(q *pending) error {
	var err error
	if q.has&hasNeeded != hasNeeded {
		g.r.stats.Requests++
		g.r.stats.Incomplete++
	} else {
		err = g.r.request(q)
	}
	g.free = append(g.free, q)
	return err
}

// finishAll hands the requests still open to the Reader: the output
// ended.
func (g *gatherer) finishAll() error {
	for _, q := range g.open {
		if err := g.finish(q); err != nil {
			return err
		}
	}
	g.open = g.open[:0]
	return nil
}
