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

// goZeroBucket replays go-zero's TokenLimiter (core/limit/tokenscript.lua,
// v1.10.3), written apart from the profile: the tokens left and the last
// call's unix second, refilled with rate × the whole seconds since, at
// most capacity; both rewritten on every call, a refused one too, with a
// TTL of ⌊2 × capacity / rate⌋ seconds; missing keys read as a full
// bucket last refilled at second 0.
type goZeroBucket struct {
	rate, capacity int64
	tokens, last   int64 // last: unix seconds
	expiresAt      int64 // unix ms; 0: no keys yet
}

func (b *goZeroBucket) allow(nowMs int64) bool {
	if nowMs >= b.expiresAt {
		b.tokens, b.last = b.capacity, 0
	}
	now := nowMs / 1000
	filled := min(b.capacity, b.tokens+max(0, now-b.last)*b.rate)
	ok := filled >= 1
	if ok {
		filled--
	}
	b.tokens, b.last = filled, now
	b.expiresAt = nowMs + 2*b.capacity/b.rate*1000
	return ok
}

// TestSecondBucketIsGoZerosTokenLimiter: token-bucket:refill=second
// decides as go-zero's TokenLimiter on random schedules, at N per W with
// a whole rate N/W a second; the continuous bucket of the same rate does
// not.
func TestSecondBucketIsGoZerosTokenLimiter(t *testing.T) {
	for _, c := range []struct {
		n int
		w time.Duration
	}{{5, time.Second}, {10, 2 * time.Second}, {3, 3 * time.Second}} {
		rate := int64(c.n) / int64(c.w/time.Second)
		differs := false
		rng := rand.New(rand.NewPCG(uint64(c.n), uint64(c.w)))
		for round := range 200 {
			p := profile(t, "token-bucket:refill=second", c.n, c.w)
			cont := profile(t, "token-bucket", c.n, c.w)
			zero := &goZeroBucket{rate: rate, capacity: int64(c.n)}
			now := int64(0)
			for i := range 40 {
				now += rng.Int64N(300) // about 6.7 requests a second: above every rate here
				at := time.UnixMilli(epochMs + now)
				want := zero.allow(epochMs + now)
				got, err := p.Allow(at, "u")
				require.NoError(t, err)
				require.Equal(t, want, got, "%d per %v, round %d, op %d: Allow at +%dms", c.n, c.w, round, i, now)
				other, _ := cont.Allow(at, "u")
				differs = differs || other != want
			}
		}
		assert.True(t, differs, "%d per %v: the continuous bucket decided as go-zero's on every schedule", c.n, c.w)
	}
}
