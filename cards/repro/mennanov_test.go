package repro

import (
	"testing"
	"time"

	"github.com/rlconform/rlconform/contract"
)

// mennanov/limiters (v1.13.11) is not served by the Go module proxy, so
// it has no card; these replay its arithmetic, line by line, for the
// card it would have.
//
// Its FixedWindow and SlidingWindow lay windows out with
// now.Truncate(rate) (fixedwindow.go:60, slidingwindow.go:57), which
// counts multiples of the window from Go's zero time, 0001-01-01 UTC, not
// from 1970: the profiles' align=go-zero. For a window that divides a day
// the grids are one; for 365 days Go's edges are 112 days before the
// epoch's, and graded as align=epoch strict/config-range fails it.
func TestMennanovWindowsAreGoZeros(t *testing.T) {
	now := time.UnixMilli(1767225600000) // 2026-01-01T00:00Z
	for _, c := range []struct {
		w      time.Duration
		before time.Duration // Go's edge before the epoch's
	}{{time.Minute, 0}, {24 * time.Hour, 0}, {365 * 24 * time.Hour, 112 * 24 * time.Hour}} {
		wms := c.w.Milliseconds()
		epoch := time.UnixMilli(now.UnixMilli() / wms * wms)
		goZero := now.Truncate(c.w) // the library's window
		if d := (epoch.Sub(goZero)%c.w + c.w) % c.w; d != c.before {
			t.Errorf("%v: Go's window starts %v before the epoch's, want %v", c.w, d, c.before)
		}
	}
}

// SlidingWindow's keys get the TTL ttl+rate (slidingwindow.go:59-61), in
// a time.Duration: for a window over 146 years it wraps negative, go-redis
// sends PEXPIRE with a negative TTL, and Redis deletes the key at once.
// A limiter taking a window of 200 years (above contract.MaxWindow, which
// it may take) then forgets every request: robust/invalid-config fails it
// a minute later, a true fault.
func TestMennanovSlidingWindowTTLOverflows(t *testing.T) {
	rate := 200 * 365 * 24 * time.Hour
	now := time.UnixMilli(1767225600000)
	currWindow := now.Truncate(rate)
	ttl := rate - now.Sub(currWindow)
	if got := ttl + rate; got >= 0 {
		t.Fatalf("ttl+rate = %v: no longer wraps", got)
	}
	if m := contract.MaxWindow; m-now.Sub(now.Truncate(m))+m < 0 {
		t.Fatalf("a window of contract.MaxWindow wraps too")
	}
}

// SlidingWindow weighs the previous window by prev*int64(ttl) in
// nanoseconds (slidingwindow.go:71): with 10,000 requests in the previous
// window of 30 days the product passes 2^63 and wraps, within the range
// every limiter honours (strict/config-range grades a limit of 10,000 and a
// window of 30 days).
func TestMennanovSlidingWindowWeightOverflows(t *testing.T) {
	rate := 30 * 24 * time.Hour
	ttl := rate - time.Hour // an hour into the window
	prev := int64(10_000)
	if w := prev * int64(ttl); w/prev == int64(ttl) {
		t.Fatalf("prev*ttl = %d: no longer wraps", w)
	}
}
