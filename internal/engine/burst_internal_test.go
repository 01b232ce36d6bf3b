package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A burst of many calls to a far target is sent from more goroutines, so
// that it takes about burstSpan: 10,016 calls from 16 at 100 ms a call
// took 63 s, past strict/config-range's spec timeout (issue 62). A near
// target's, or a small burst, keeps the goroutines the spec asked for.
func TestBurstWidthFollowsTheTargetsSpeed(t *testing.T) {
	for _, c := range []struct {
		perCall      time.Duration
		calls, asked int
		want         int
	}{
		{0, 10016, 16, 16},                       // nothing measured yet
		{time.Millisecond, 10016, 16, 16},        // 10,016 ms from 16: 0.6 s
		{100 * time.Millisecond, 10016, 16, 128}, // at most maxBurstWidth
		{100 * time.Millisecond, 50, 4, 4},       // 2.5 calls' worth of burstSpan: no wider
		{100 * time.Millisecond, 200, 4, 10},     // 20 s of calls: 2 s from 10
		{time.Second, 40, 4, 20},                 // 40 s of calls: 20 goroutines for 2 s each
	} {
		h := &Harness{}
		for range 5 {
			if c.perCall > 0 {
				h.calls.sample(c.perCall)
			}
		}
		assert.Equal(t, c.want, h.burstWidth(c.calls, c.asked), "%d calls at %v asked of %d goroutines", c.calls, c.perCall, c.asked)
	}
}
