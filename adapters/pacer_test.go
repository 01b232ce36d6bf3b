package adapters

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/fakeclock"
)

// paced sends the requests due at due (in order) through p on a fake
// clock, each asking again after the wait it is told, and returns the
// instants they went. No time passes but the fake clock's.
func paced(p *Pacer, clock *fakeclock.Fake, due []time.Time) []time.Time {
	went := make([]time.Time, 0, len(due))
	for _, d := range due {
		if d.After(clock.Now()) {
			clock.Set(d)
		}
		for {
			wait := p.reserve(clock.Now())
			if wait == 0 {
				break
			}
			if wait < pacerSlot {
				panic("a wait shorter than a slot")
			}
			clock.Advance(wait)
		}
		went = append(went, clock.Now())
	}
	return went
}

// mostInOneSecond is the most instants of at (sorted) in any closed
// interval of one second.
func mostInOneSecond(at []time.Time) int {
	most, j := 0, 0
	for i := range at {
		for at[i].Sub(at[j]) > time.Second {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

// The pacer never lets more than its bound go in any one second, whatever
// the rate and the arrivals (bursts, a steady stream, gaps), and waits at
// most a slot longer than an exact log would: over a long demand it sends
// at least the bound per second and a millisecond.
func TestPacerBoundsEverySecondProperty(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 678_901_234, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		perSecond := 1 + rng.IntN(40)
		if trial%10 == 0 {
			perSecond = 1 + rng.IntN(3000)
		}
		clock := fakeclock.New(start)
		p := newPacer(perSecond, clock.Now)
		var due []time.Time
		at := start.Add(time.Duration(rng.Int64N(int64(time.Second))))
		for range 3*perSecond + rng.IntN(200) {
			switch rng.IntN(4) {
			case 0: // a burst: at once
			case 1:
				at = at.Add(time.Duration(rng.Int64N(int64(3 * time.Millisecond))))
			case 2:
				at = at.Add(time.Duration(rng.Int64N(int64(time.Second / time.Duration(perSecond)))))
			default:
				at = at.Add(time.Duration(rng.Int64N(int64(1500 * time.Millisecond))))
			}
			due = append(due, at)
		}
		went := paced(p, clock, due)
		require.True(t, slices.IsSortedFunc(went, time.Time.Compare))
		require.LessOrEqual(t, mostInOneSecond(went), perSecond, "trial %d: %d per second", trial, perSecond)
	}
	// A demand of 20 seconds, all due at once: at least the bound in every
	// second and a millisecond, and not more in any second.
	for _, perSecond := range []int{1, 7, 1000, 25_000} {
		clock := fakeclock.New(start)
		n := 20 * perSecond
		went := paced(newPacer(perSecond, clock.Now), clock, slices.Repeat([]time.Time{start}, n))
		assert.Equal(t, perSecond, mostInOneSecond(went), "%d per second", perSecond)
		last := went[n-1].Sub(start)
		assert.LessOrEqual(t, last, 19*(time.Second+pacerSlot), "%d per second: the last of 20 s of demand left at %v", perSecond, last)
	}
}

// A pacer's memory does not grow with its rate: two billion requests a
// second (a RateLimit-Policy's q, say) takes what five do.
func TestPacerMemoryIsConstant(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p := NewPacer(2_000_000_000)
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10), "bytes allocated for a pacer of 2e9 per second")
	require.NoError(t, p.Wait(context.Background()))
	runtime.KeepAlive(p)
}

// Wait lets a request go at once when the bound allows it, and returns the
// context's error when that ends first.
func TestPacerWait(t *testing.T) {
	clock := fakeclock.New(time.Now())
	p := newPacer(2, clock.Now)
	require.NoError(t, p.Wait(context.Background()))
	require.NoError(t, p.Wait(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, p.Wait(ctx), context.Canceled)
	// The third waits for a second the fake clock never reaches: the
	// context ends it.
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Wait(ctx) }()
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
}
