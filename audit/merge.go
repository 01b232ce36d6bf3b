package audit

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rlconform/rlconform/audit/accesslog"
	"github.com/rlconform/rlconform/bench"
	"github.com/rlconform/rlconform/internal/loglines"
)

// log is one source being read.
type log struct {
	index  int
	name   string
	in     io.ReadCloser
	lines  *loglines.Reader
	parser accesslog.Parser
	stats  FileStats
	// queue holds the requests read and not yet judged (with several
	// logs), their users in arena; done: the log is read.
	queue []accesslog.Request
	head  int
	arena []byte
	done  bool
}

// merger reads the logs in the order their requests ended (each log in
// about that order already): the requests of several gateways in front
// of one limiter, merged.
type merger struct {
	logs  []*log
	ready logHeap
}

func (m *merger) close() {
	for _, l := range m.logs {
		l.in.Close()
	}
}

// ref is where a request was read: its log, and its line.
func ref(log int, line int64) uint64 { return uint64(log)<<48 | uint64(line)&(1<<48-1) }

func unref(r uint64) (log int, line int64) { return int(r >> 48), int64(r & (1<<48 - 1)) }

// checkEvery is how many lines are read between two looks at the context.
const checkEvery = 1 << 16

// feed reads every log into stream; interrupted when ctx ended first.
func (m *merger) feed(ctx context.Context, stream *bench.Stream, res *Result) (interrupted bool, err error) {
	add := func(l *log, r *accesslog.Request) error {
		err := stream.Add(bench.StreamCall{User: r.User, Outcome: r.Outcome, Sent: r.Start, Returned: r.End, Ref: ref(l.index, r.Line)})
		switch {
		case errors.Is(err, bench.ErrTooDense):
			// No verdict from part of a log: the audit stops (exit 2).
			// (read names the log and the line; the merge below does.)
			return fmt.Errorf("%w: the log holds more requests in that span than the audit keeps in memory; give a shorter --settle, or audit a shorter span of the log", err)
		case err != nil:
			l.stats.skip("an interval the judge does not take", r.Line)
		}
		l.stats.Requests++
		return nil
	}
	if len(m.logs) == 1 {
		l := m.logs[0]
		return l.read(ctx, func(r *accesslog.Request) error { return add(l, r) }, false)
	}
	for _, l := range m.logs {
		if interrupted, err := l.fill(ctx); interrupted || err != nil {
			return interrupted, err
		}
		if l.head < len(l.queue) {
			heap.Push(&m.ready, l)
		}
	}
	for m.ready.Len() > 0 {
		l := m.ready.logs[0]
		if err := add(l, &l.queue[l.head]); err != nil {
			return false, fmt.Errorf("audit: %s: line %d: %w", l.name, l.queue[l.head].Line, err)
		}
		l.head++
		if l.head == len(l.queue) {
			if interrupted, err := l.fill(ctx); interrupted || err != nil {
				return interrupted, err
			}
		}
		if l.head < len(l.queue) {
			heap.Fix(&m.ready, 0)
		} else {
			heap.Pop(&m.ready)
		}
	}
	return false, nil
}

// fill reads l until it holds a request (or is read).
func (l *log) fill(ctx context.Context) (interrupted bool, err error) {
	l.queue, l.head, l.arena = l.queue[:0], 0, l.arena[:0]
	emit := func(r *accesslog.Request) error {
		from := len(l.arena)
		l.arena = append(l.arena, r.User...)
		q := *r
		q.User = l.arena[from:len(l.arena):len(l.arena)]
		l.queue = append(l.queue, q)
		return nil
	}
	for !l.done && len(l.queue) == 0 {
		if interrupted, err := l.read(ctx, emit, true); interrupted || err != nil {
			return interrupted, err
		}
	}
	return false, nil
}

// read reads l's lines, calling emit with each request, to its end (or,
// with one set, until a line made a request).
func (l *log) read(ctx context.Context, emit func(*accesslog.Request) error, one bool) (interrupted bool, err error) {
	for !l.done {
		b, ok := l.lines.Next()
		if !ok {
			return false, l.end(emit)
		}
		n := l.lines.Line()
		if n%checkEvery == 0 && ctx.Err() != nil {
			return true, nil
		}
		before := l.stats.Requests + int64(len(l.queue))
		if err := l.parser.Parse(b, n, emit); err != nil {
			var s accesslog.Skip
			if !errors.As(err, &s) {
				return false, fmt.Errorf("audit: %s: line %d: %w", l.name, n, err)
			}
			l.stats.skip(string(s), n)
		}
		if one && l.stats.Requests+int64(len(l.queue)) > before {
			return false, nil
		}
	}
	return false, nil
}

// end ends l: the requests its parser still gathers are emitted, and
// how it ended is kept.
func (l *log) end(emit func(*accesslog.Request) error) error {
	l.done = true
	if err := l.lines.Err(); err != nil {
		return fmt.Errorf("audit: %s: after line %d: %w", l.name, l.lines.Line(), err)
	}
	if err := l.parser.Close(emit); err != nil {
		var s accesslog.Skip
		if !errors.As(err, &s) {
			return fmt.Errorf("audit: %s: %w", l.name, err)
		}
		l.stats.skip(string(s), l.lines.Line())
	}
	l.stats.Lines, l.stats.TooLong = l.lines.Line(), l.lines.TooLong()
	if cut := l.lines.Cut(); cut != nil {
		l.stats.Cut = fmt.Sprintf("after line %d, %v", l.lines.Line(), cut)
	}
	l.stats.Notes = l.parser.Notes()
	return nil
}

// report adds every log's figures to res.
func (m *merger) report(res *Result) {
	for _, l := range m.logs {
		if !l.done { // interrupted
			l.stats.Lines, l.stats.TooLong = l.lines.Line(), l.lines.TooLong()
			l.stats.Notes = l.parser.Notes()
		}
		res.Files = append(res.Files, l.stats)
		res.Lines += l.stats.Lines
	}
	if len(m.logs) > 0 {
		res.Notes = m.logs[0].stats.Notes
	}
}

// skip counts a line skipped for why.
func (s *FileStats) skip(why string, line int64) {
	c := s.Skipped[why]
	if c == nil {
		c = &SkipCount{First: line}
		s.Skipped[why] = c
	}
	c.Lines++
}

// logHeap is a heap of logs by the end of the request each holds next.
type logHeap struct{ logs []*log }

func (h *logHeap) Len() int { return len(h.logs) }
func (h *logHeap) Less(a, b int) bool {
	x, y := h.logs[a], h.logs[b]
	return x.queue[x.head].End < y.queue[y.head].End
}
func (h *logHeap) Swap(a, b int) { h.logs[a], h.logs[b] = h.logs[b], h.logs[a] }
func (h *logHeap) Push(x any)    { h.logs = append(h.logs, x.(*log)) }
func (h *logHeap) Pop() any {
	l := h.logs[len(h.logs)-1]
	h.logs = h.logs[:len(h.logs)-1]
	return l
}
