package audit

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/rlconform/rlconform/audit/accesslog"
)

// synth writes nginx access log lines (accesslog.NginxFormat) of a
// gateway in front of a limiter deciding users' requests, in the order
// they ended.
type synth struct {
	r     *rand.Rand
	at    time.Time // the instant the next request is decided
	gap   time.Duration
	users int
	// hot, when set, sends half the requests to its first hot users.
	hot int
	// decide decides user u's request at t (the limiter's instant).
	decide func(u int, t time.Time) bool
	// coarse writes $time_local only (whole seconds) for the end.
	coarse bool
}

// sliding is an exact sliding log of n per w over users, as decide.
func sliding(users, n int, w time.Duration) func(int, time.Time) bool {
	logs := make([][]time.Time, users)
	return func(u int, t time.Time) bool {
		l := logs[u]
		for len(l) > 0 && !l[0].After(t.Add(-w)) {
			l = l[1:]
		}
		ok := len(l) < n
		if ok {
			l = append(l, t)
		}
		logs[u] = l
		return ok
	}
}

// fixedWindow is a fixed window of the epoch of n per w, as decide.
func fixedWindow(users, n int, w time.Duration) func(int, time.Time) bool {
	window, count := make([]int64, users), make([]int, users)
	return func(u int, t time.Time) bool {
		k := t.UnixNano() / int64(w)
		if k != window[u] {
			window[u], count[u] = k, 0
		}
		count[u]++
		return count[u] <= n
	}
}

// line appends the next request's line to b: its user drawn (user 0 twice
// as often as the others), decided after the last one (the limiter
// decides in order), its duration up to 20ms around that instant. (So
// the lines are in the order decided, their ends a little out of order,
// as a gateway's workers write them.)
func (s *synth) line(b []byte) []byte {
	defer func() { s.at = s.at.Add(time.Duration(s.r.Int64N(int64(2*s.gap) + 1))) }()
	u := s.r.IntN(s.users + 1)
	switch {
	case s.hot > 0 && s.r.IntN(2) == 0:
		u = s.r.IntN(s.hot)
	case u == s.users:
		u = 0
	}
	took := time.Duration(s.r.IntN(20)) * time.Millisecond
	status := "429"
	if s.decide(u, s.at) {
		status = "200"
	}
	// nginx's clock: the instants truncated to the ms, the time taken
	// their difference.
	end := s.at.Add(time.Duration(s.r.Int64N(int64(took) + 1))).Truncate(time.Millisecond)
	if start := end.Add(-took); start.After(s.at) {
		took = end.Sub(s.at.Truncate(time.Millisecond))
	}
	b = append(b, "10.0.0.1 ["...)
	b = end.UTC().AppendFormat(b, "02/Jan/2006:15:04:05 -0700")
	b = append(b, `] "GET /api HTTP/1.1" `...)
	b = append(b, status...)
	b = append(b, " 12 "...)
	if s.coarse {
		b = append(b, '-')
	} else {
		b = strconv.AppendInt(b, end.Unix(), 10)
		b = fmt.Appendf(b, ".%03d", end.Nanosecond()/1e6)
	}
	b = fmt.Appendf(b, " %d.%03d \"user-%d\"\n", took/time.Second, took%time.Second/time.Millisecond, u)
	return b
}

// log is n lines.
func (s *synth) log(n int) []byte {
	var b []byte
	for range n {
		b = s.line(b)
	}
	return b
}

// disordered is n lines written out of order: line i, decided at at, as
// if it were written late(i, at) after (lines written together keep
// their order).
func (s *synth) disordered(n int, late func(i int, at time.Time) time.Duration) []byte {
	type line struct {
		at   time.Time
		text []byte
	}
	lines := make([]line, n)
	for i := range lines {
		at := s.at
		lines[i] = line{at.Add(late(i, at)), s.line(nil)}
	}
	slices.SortStableFunc(lines, func(a, b line) int { return a.at.Compare(b.at) })
	var b []byte
	for _, l := range lines {
		b = append(b, l.text...)
	}
	return b
}

// reader is an endless-looking log of n lines, made as it is read.
type synthReader struct {
	s   *synth
	n   int
	buf []byte
}

func (r *synthReader) Read(p []byte) (int, error) {
	for len(r.buf) < len(p) && r.n > 0 {
		r.buf = r.s.line(r.buf)
		r.n--
	}
	if len(r.buf) == 0 {
		return 0, io.EOF
	}
	k := copy(p, r.buf)
	r.buf = r.buf[:copy(r.buf, r.buf[k:])]
	return k, nil
}

// coarseFormat is NginxFormat with $time_local for the end: whole seconds.
const coarseFormat = `$remote_addr [$time_local] "$request" $status $body_bytes_sent $msec_unused $request_time "$http_x_user"`

var _ = accesslog.NginxFormat

func gz(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

// memory is a Source of b.
func memory(name string, b []byte) Source {
	return Source{Name: name, Reopen: true, Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }}
}

// testingEnvInt is the environment variable name as a number (0 when
// unset or not one).
func testingEnvInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}
