package adapters

import (
	"context"
	"sync"
	"time"
)

// Pacer bounds the requests sent in any one second to a number, exactly:
// it keeps the instants of the last ones sent (a sliding-window log, the
// algorithm rlconform grades) and makes a request wait until the one that
// many before it is a second old. Safe for concurrent use.
type Pacer struct {
	mu   sync.Mutex
	sent []time.Time // ring of the last len(sent) instants
	next int
}

// NewPacer returns a pacer of perSecond requests in any one second.
func NewPacer(perSecond int) *Pacer {
	return &Pacer{sent: make([]time.Time, max(1, perSecond))}
}

// Wait blocks until a request may be sent without more than the bound in
// the second before it, and counts it as sent; it returns the context's
// error if that ends first.
func (p *Pacer) Wait(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		p.mu.Lock()
		now := time.Now()
		oldest := p.sent[p.next]
		if oldest.IsZero() || now.Sub(oldest) >= time.Second {
			p.sent[p.next] = now
			p.next = (p.next + 1) % len(p.sent)
			p.mu.Unlock()
			return nil
		}
		wait := oldest.Add(time.Second).Sub(now)
		p.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}
