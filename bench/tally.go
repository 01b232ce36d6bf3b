package bench

import (
	"time"

	"github.com/rlconform/rlconform/model"
)

// hotTracked is how many users' latencies a tally keeps apart: users 0
// to hotTracked-1, the hottest a Zipf skew draws (user 0 most often).
const hotTracked = 16

// tally is what a run's decisions add up to, added one at a time, in
// memory bounded by the users and the window, never by the run's length:
// the counts, the latency histograms (the run's, and each bucket's of the
// chart), the users of each bucket, the busiest window ending with each
// bucket, and each user's calls, with the latency of the users a skew
// makes hot kept apart. A user costs 12 bytes (its calls and the last
// two buckets it was seen in); the busiest windows hold each user's
// allowed calls of about the last window. It is not safe for concurrent
// use.
type tally struct {
	bucket, window  time.Duration
	allowed, denied int
	total           *histogram
	series          []Bucket
	hists           []*histogram
	seen            [][2]int16 // per user: the last two buckets it was counted in, +1 (0: none)
	calls           []int64    // per user
	hot             []*histogram
	rest            *histogram
	busy            map[int32][]span // per user: its allowed calls that may lie in a window to come
	closed          int              // the buckets whose Busiest is final
	latest          time.Duration    // the latest Returned added
	// lasts bounds a call's time (the run's grace): past a bucket's end
	// by it, no call of the bucket is still to come, and its latencies
	// are summed up (settled counts those) and its histogram reused
	// (spare): a few seconds' worth are held, not the run's.
	lasts   time.Duration
	settled int
	spare   []*histogram
}

// span is one allowed call's instants, offsets from the run's start.
type span struct{ sent, returned time.Duration }

// newTally starts the tally of a run of cfg: users, and buckets of the
// chart for its duration (about 300).
func newTally(cfg Config) *tally {
	bucket := max(100*time.Millisecond, (cfg.Duration / 300).Round(100*time.Millisecond))
	lasts := cfg.Grace
	if lasts <= 0 {
		lasts = 5 * time.Second
	}
	t := &tally{bucket: bucket, window: cfg.Window, total: newHistogram(), rest: newHistogram(), lasts: lasts,
		seen: make([][2]int16, cfg.Users), calls: make([]int64, cfg.Users), busy: map[int32][]span{}}
	for range min(cfg.Users, hotTracked) {
		t.hot = append(t.hot, newHistogram())
	}
	return t
}

// add counts decision d, whose latency was lat.
func (t *tally) add(d Decision, lat time.Duration) {
	b := t.bucketOf(d.Sent)
	t.total.record(lat)
	if h := t.hists[b]; h != nil { // nil: a call later than the grace, settled without it
		h.record(lat)
	}
	s := &t.series[b]
	s.Decisions++
	switch d.Outcome {
	case Allowed:
		t.allowed++
		s.Allowed++
		t.busy[d.User] = append(t.busy[d.User], span{d.Sent, d.Returned})
	case Denied:
		t.denied++
	case Errored:
		s.Errors++
	}
	if u := int(d.User); u >= 0 && u < len(t.seen) {
		t.calls[u]++
		if seen := &t.seen[u]; int(seen[0]) != b+1 && int(seen[1]) != b+1 {
			s.Users++
			seen[1], seen[0] = seen[0], int16(b+1)
		}
		if u < len(t.hot) {
			t.hot[u].record(lat)
		} else {
			t.rest.record(lat)
		}
	}
	if d.Returned > t.latest {
		t.latest = d.Returned
		for t.closed < len(t.series) && t.latest > t.bucketEnd(t.closed)+t.bucket {
			t.close(t.closed, t.bucketEnd(t.closed))
		}
		for t.settled < len(t.series) && t.latest > t.bucketEnd(t.settled)+t.lasts {
			t.settle(t.settled)
		}
	}
}

// settle sums up bucket b's latencies and lets its histogram go to be
// reused.
func (t *tally) settle(b int) {
	if h := t.hists[b]; h != nil {
		p := h.percentiles()
		t.series[b].P50, t.series[b].P99, t.series[b].Max = p.P50, p.P99, p.Max
		h.h.Reset()
		t.spare = append(t.spare, h)
		t.hists[b] = nil
	}
	t.settled = b + 1
}

// bucketOf is the bucket of a call sent at sent, made when new.
func (t *tally) bucketOf(sent time.Duration) int {
	b := min(max(0, int(sent/t.bucket)), 1<<15-2)
	for len(t.series) <= b {
		t.series = append(t.series, Bucket{At: time.Duration(len(t.series)) * t.bucket})
		var h *histogram
		if n := len(t.spare); n > 0 {
			h, t.spare = t.spare[n-1], t.spare[:n-1]
		} else {
			h = newHistogram()
		}
		t.hists = append(t.hists, h)
	}
	return b
}

func (t *tally) bucketEnd(b int) time.Duration { return time.Duration(b+1) * t.bucket }

// close sets bucket b's Busiest, the window ending at end: the most
// allowed calls of one user that surely lay in (end-W, end], by the
// real-time rule (sent after its start, answered by its end: a call
// added later is not counted, which only lowers it), and lets go of the
// calls no window to come may hold.
func (t *tally) close(b int, end time.Duration) {
	from := end - t.window + model.ClockOffset + model.ClockResolution // sent after
	to := end - model.ClockOffset                                      // answered by
	for u, calls := range t.busy {
		n, keep := 0, calls[:0]
		for _, c := range calls {
			if c.sent > from && c.returned <= to {
				n++
			}
			if c.sent > from {
				keep = append(keep, c)
			}
		}
		t.series[b].Busiest = max(t.series[b].Busiest, n)
		if len(keep) == 0 {
			delete(t.busy, u)
		} else {
			t.busy[u] = keep
		}
	}
	t.closed = b + 1
}

// fill writes what the tally holds into r, the run having lasted elapsed
// (the last bucket's window ends there): the counts, the latencies, the
// series and the hot key.
func (t *tally) fill(r *Result, elapsed time.Duration) {
	t.bucketOf(max(0, elapsed-1)) // the series reaches the end
	for b := t.closed; b < len(t.series); b++ {
		t.close(b, min(elapsed, t.bucketEnd(b)))
	}
	r.Allowed, r.Denied = t.allowed, t.denied
	r.Decisions = r.Allowed + r.Denied
	if elapsed > 0 {
		r.Throughput = float64(r.Decisions) / elapsed.Seconds()
	}
	r.Latency = t.total.percentiles()
	for b := t.settled; b < len(t.series); b++ {
		t.settle(b)
	}
	r.Series = t.series
	r.HotKey = t.hotKey()
}

// hotKey is the user with the most calls and how its latency compares
// with the others': nil with one user, or when the hottest is not one of
// the users whose latency is kept apart (a uniform draw has no hot key).
func (t *tally) hotKey() *HotKey {
	var n int64
	hot := 0
	for u, c := range t.calls {
		n += c
		if c > t.calls[hot] {
			hot = u
		}
	}
	if len(t.calls) < 2 || n == 0 || hot >= len(t.hot) {
		return nil
	}
	others := newHistogram()
	others.h.Merge(t.rest.h)
	for u, h := range t.hot {
		if u != hot {
			others.h.Merge(h.h)
		}
	}
	return &HotKey{User: int32(hot), Share: float64(t.calls[hot]) / float64(n), P99: t.hot[hot].percentiles().P99, OthersP99: others.percentiles().P99}
}
