package adapters

import (
	"context"
	"sync"
	"time"
)

// pacerSlots is how many slots a second is cut into: a pacer counts the
// requests of each millisecond, not their instants, so that its memory is
// the same at 5 requests a second as at two billion.
const pacerSlots = 1000

// pacerSlot is one slot's length.
const pacerSlot = time.Second / pacerSlots

// Pacer bounds the requests sent in any one second to a number: never
// more than that many in any interval of one second, open or closed. It
// counts the requests sent in each millisecond (a ring of 1001 counts: the
// last second and the millisecond it started in) and lets a request go
// when fewer than the bound were sent in those, so it is conservative by
// at most a millisecond: a request waits at most 1 ms longer than under
// an exact log of instants (the sliding window it grades). Its memory does
// not depend on the bound. Safe for concurrent use.
type Pacer struct {
	mu        sync.Mutex
	now       func() time.Time
	perSecond int64
	origin    time.Time // slot k is [origin+k·slot, origin+(k+1)·slot)
	head      int64     // the newest slot counted
	counts    [pacerSlots + 1]int64
	sum       int64 // of counts
}

// NewPacer returns a pacer of perSecond requests in any one second (at
// least 1).
func NewPacer(perSecond int) *Pacer { return newPacer(perSecond, time.Now) }

// newPacer is NewPacer on the clock now.
func newPacer(perSecond int, now func() time.Time) *Pacer {
	return &Pacer{now: now, perSecond: int64(max(1, perSecond)), origin: now()}
}

// Wait blocks until a request may be sent without more than the bound in
// any one second up to it, and counts it as sent; it returns the context's
// error if that ends first.
func (p *Pacer) Wait(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		p.mu.Lock()
		wait := p.reserve(p.now())
		p.mu.Unlock()
		if wait == 0 {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// reserve counts a request sent at now and returns 0 when the bound lets
// it go; otherwise it counts nothing and returns how long to wait before
// asking again (at least a slot). An instant before the last one asked
// about counts as that one (the bound needs a clock that never goes back,
// as the monotonic clock read under the lock does not).
//
// Why the bound holds: a request at u, in slot k, goes only when the
// slots k−1000 to k hold fewer than the bound. Any interval of one second
// [t, t+1s] that holds u as its last request starts in slot k−1000 or
// later, so every request in it lies in those slots: with u, at most the
// bound.
func (p *Pacer) reserve(now time.Time) time.Duration {
	n := int64(len(p.counts))
	k := max(p.head, int64(now.Sub(p.origin)/pacerSlot))
	p.advance(k)
	if p.sum < p.perSecond {
		p.counts[k%n]++
		p.sum++
		return 0
	}
	// The sum falls when the oldest slot with a request leaves the ring.
	oldest := k
	for j := max(0, k-n+1); j <= k; j++ {
		if p.counts[j%n] > 0 {
			oldest = j
			break
		}
	}
	leaves := p.origin.Add(time.Duration(oldest+n) * pacerSlot)
	return max(pacerSlot, leaves.Sub(now))
}

// advance moves the ring on to slot k, forgetting the slots that leave it.
func (p *Pacer) advance(k int64) {
	n := int64(len(p.counts))
	if k-p.head >= n {
		p.counts, p.sum = [pacerSlots + 1]int64{}, 0
	} else {
		for j := p.head + 1; j <= k; j++ {
			p.sum -= p.counts[j%n]
			p.counts[j%n] = 0
		}
	}
	p.head = k
}
