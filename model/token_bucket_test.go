package model

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// symfonyBucket replays the arithmetic of Symfony RateLimiter's token
// bucket (Policy/TokenBucket.php, TokenBucketLimiter.php, Rate.php, 5.4),
// written apart from the profile: a bucket made full, its timer moved by
// whole intervals as they pass, its key saved with a TTL of the time a
// whole bucket takes to refill on every allowed request and on consume(0),
// never on a denied one.
type symfonyBucket struct {
	burst, amount int
	interval      int64 // ms
	exists        bool
	tokens        int
	timer         int64
	expiresAt     int64
}

func (b *symfonyBucket) available(now int64) int {
	if !b.exists || now >= b.expiresAt { // fetch misses: a new bucket
		b.exists, b.tokens, b.timer = true, b.burst, now
	}
	cycles := max(0, now-b.timer) / b.interval
	if cycles > 0 {
		b.timer += cycles * b.interval
	}
	return min(b.burst, b.tokens+int(cycles)*b.amount)
}

func (b *symfonyBucket) save(now int64, tokens int) {
	b.tokens = tokens
	cycles := (int64(b.burst) + int64(b.amount) - 1) / int64(b.amount)
	b.expiresAt = now + cycles*b.interval
}

func (b *symfonyBucket) consume(now int64, n int) (int, bool) {
	timer, had, exists := b.timer, b.tokens, b.exists
	avail := b.available(now)
	if avail < n { // MaxWaitDurationExceededException: nothing saved
		b.timer, b.tokens, b.exists = timer, had, exists
		return avail, false
	}
	b.save(now, avail-n)
	return avail - n, true
}

// TestIntervalBucketKeepingItsGrid: token-bucket:refill=interval,
// expire=idle,query=write decides as Symfony's token bucket on random
// schedules of requests and queries, and the profile that forgets a full
// bucket does not (the schedule cards/repro found).
func TestIntervalBucketKeepingItsGrid(t *testing.T) {
	for _, c := range []struct{ n, capacity int }{{5, 0}, {2, 3}, {3, 7}} {
		spec := "token-bucket:refill=interval,expire=idle,query=write"
		burst := c.n
		if c.capacity > 0 {
			spec += ",capacity=" + strconv.Itoa(c.capacity)
			burst = c.capacity
		}
		rng := rand.New(rand.NewPCG(uint64(c.n), uint64(c.capacity)))
		for round := range 200 {
			p := profile(t, spec, c.n, time.Second)
			sym := &symfonyBucket{burst: burst, amount: c.n, interval: 1000}
			now := int64(0)
			for i := range 40 {
				now += rng.Int64N(700)
				at := time.UnixMilli(epochMs + now)
				if rng.IntN(4) == 0 {
					want, _ := sym.consume(now, 0)
					got, err := p.Remaining(at, "u")
					require.NoError(t, err)
					require.Equal(t, want, got, "%s, round %d, op %d: Remaining at +%dms", spec, round, i, now)
					continue
				}
				_, want := sym.consume(now, 1)
				got, err := p.Allow(at, "u")
				require.NoError(t, err)
				require.Equal(t, want, got, "%s, round %d, op %d: Allow at +%dms", spec, round, i, now)
			}
		}
	}

	// A burst at 0, a query at +990ms, a request at +1500ms: the bucket
	// made at 0 refills at +2000ms; forgotten when full, it would wait for
	// +2500ms.
	for spec, want := range map[string]int{
		"token-bucket:refill=interval,expire=idle,query=write": 5,
		"token-bucket:refill=interval":                         4,
	} {
		p := profile(t, spec, 5, time.Second)
		assert.Equal(t, []bool{true, true, true, true, true}, answers(p, "u", 0, 10, 10, 10, 10), spec)
		_, _ = p.Remaining(time.UnixMilli(epochMs+990), "u")
		assert.Equal(t, []bool{true}, answers(p, "u", 1500), spec)
		n, _ := p.Remaining(time.UnixMilli(epochMs+2100), "u")
		assert.Equal(t, want, n, spec)
	}
}

// TestQueryWriteMakesABucket: with query=write a query about a user with
// no bucket makes one at its instant; with query=read it makes nothing.
func TestQueryWriteMakesABucket(t *testing.T) {
	for spec, want := range map[string][]bool{
		// The bucket made by the query at 0 refills at +1000ms.
		"token-bucket:refill=interval,query=write": {true, true, false, true},
		// The request at +600ms makes the bucket: it refills at +1600ms.
		"token-bucket:refill=interval": {true, true, false, false},
	} {
		p := profile(t, spec, 2, time.Second)
		_, _ = p.Remaining(time.UnixMilli(epochMs), "u")
		assert.Equal(t, want, answers(p, "u", 600, 600, 600, 1000), spec)
	}
}

// TestFixedWindowQueryWrite: with query=write a query about a user with no
// state opens its window (first-hit) or anchors its grid (first-grid) at
// the query's instant; with query=read the first request does. On the
// epoch a query moves nothing.
func TestFixedWindowQueryWrite(t *testing.T) {
	for spec, want := range map[string][]bool{
		"fixed-window:align=first-hit,query=write":  {true, true, false, true},
		"fixed-window:align=first-hit":              {true, true, false, false},
		"fixed-window:align=first-grid,query=write": {true, true, false, true},
		"fixed-window:align=first-grid":             {true, true, false, false},
		"fixed-window:align=epoch,query=write":      {true, true, false, true},
	} {
		p := profile(t, spec, 2, time.Second)
		_, _ = p.Remaining(time.UnixMilli(epochMs), "u")
		assert.Equal(t, want, answers(p, "u", 600, 600, 600, 1000), spec)
	}
}
