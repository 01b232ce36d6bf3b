package engine

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rlconform/rlconform/internal/stall"
)

// sampleSize bounds the call times inFlight keeps for their median: the
// last sampleSize calls' (8 KiB, whatever the number of calls).
const sampleSize = 1024

// inFlight tracks the calls to a target that have not returned, and how
// long the returned ones took: in all, the last sampleSize of them, and
// the stalls (calls of stall.After or more), counted exactly.
type inFlight struct {
	mu       sync.Mutex
	started  map[int64]time.Time
	next     int64
	returned int
	total    time.Duration
	recent   [sampleSize]time.Duration // a ring: call i at i % sampleSize
	stalls   stalls
}

// stalls are the calls that took stall.After or more: how many, the
// shortest, the longest and their total time.
type stalls struct {
	n                   int
	least, most, summed time.Duration
}

// callTimes is what inFlight knows of the returned calls' times.
type callTimes struct {
	returned int
	total    time.Duration // every call's, the grader's pacing included
	median   time.Duration // of the last sampleSize calls
	stalls   stalls
}

// mean is the mean time of the calls.
func (c callTimes) mean() time.Duration {
	if c.returned == 0 {
		return 0
	}
	return c.total / time.Duration(c.returned)
}

func (f *inFlight) begin() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started == nil {
		f.started = map[int64]time.Time{}
	}
	f.next++
	f.started[f.next] = time.Now()
	return f.next
}

// end records that call id returned; sent, when not zero, is when its
// request left, after the grader's pacing: its median and stalls are
// timed from then.
func (f *inFlight) end(id int64, sent time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	began := f.started[id]
	delete(f.started, id)
	took := time.Since(began)
	f.total += took
	if sent.After(began) {
		took = time.Since(sent)
	}
	f.sample(took)
}

// sample counts a returned call that took took; f.mu is held.
func (f *inFlight) sample(took time.Duration) {
	f.recent[f.returned%sampleSize] = took
	f.returned++
	if took >= stall.After {
		s := &f.stalls
		if s.n == 0 || took < s.least {
			s.least = took
		}
		s.n, s.most, s.summed = s.n+1, max(s.most, took), s.summed+took
	}
}

// stats says how long the oldest call in flight has been running (0:
// none), and what the returned calls took.
func (f *inFlight) stats() (oldest time.Duration, c callTimes) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.started {
		oldest = max(oldest, time.Since(t))
	}
	c = callTimes{returned: f.returned, total: f.total, stalls: f.stalls}
	if n := min(f.returned, sampleSize); n > 0 {
		sample := slices.Clone(f.recent[:n])
		slices.Sort(sample)
		c.median = sample[n/2]
	}
	return oldest, c
}

// connectionStalls names what a few stalled calls among quick ones are,
// or "" when the calls' times show no such thing: some calls took
// stall.After or more (about 1 s, or 3 s: a SYN's retransmissions) while
// the median call took under stall.QuickMedian, and the stalls took at least
// half of the calls' time. That is a connection that waited for room in
// the target's listen backlog (or a proxy that opens a connection per
// request), not the limiter's speed.
func connectionStalls(c callTimes) string {
	s := c.stalls
	if s.n == 0 || c.median >= stall.QuickMedian || 2*s.summed < c.total {
		return ""
	}
	return fmt.Sprintf("%d calls stalled %s (%v of the %v the calls took) while the median call took %v: connection stalls (a listen backlog too small, or a proxy opening a connection per request), not the limiter's speed",
		s.n, stall.Took(s.n, s.least, s.most, s.summed), s.summed.Round(time.Millisecond), c.total.Round(time.Millisecond), c.median.Round(100*time.Microsecond))
}
