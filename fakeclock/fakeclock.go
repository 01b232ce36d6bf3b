// Package fakeclock gives limiters a clock to read and tests a clock to move.
package fakeclock

import (
	"fmt"
	"sync"
	"time"
)

// Clock tells the time; it is all a limiter may read.
type Clock interface {
	Now() time.Time
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// Fake is a clock that only moves when told to. It is safe for concurrent use.
//
// Typical usage:
//
//	clk := fakeclock.New(time.UnixMilli(1_700_000_000_000))
//	lim := reference.New(client, reference.Options{Clock: clk, ...})
//	clk.Advance(time.Minute) // the limiter sees a minute pass, at once
type Fake struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a fake clock that reads start until moved.
func New(start time.Time) *Fake { return &Fake{now: start} }

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the clock forward by d. A negative d is a programming error
// and panics: time in a test never runs backwards.
func (f *Fake) Advance(d time.Duration) {
	if d < 0 {
		panic(fmt.Sprintf("fakeclock: Advance(%v): negative duration", d))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

// Set moves the clock to t, forwards or backwards.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = t
}
