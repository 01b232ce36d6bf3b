package engine

import (
	"testing"
	"time"
)

// A real-time window raised for slow round trips is five margins, rounded
// up to a tenth of a second, or to a whole second for a target that takes
// no other (identify's second try).
func TestRaisedWindow(t *testing.T) {
	for _, c := range []struct {
		margin time.Duration
		whole  bool
		want   time.Duration
	}{
		{250 * time.Millisecond, false, 1300 * time.Millisecond},
		{250 * time.Millisecond, true, 2 * time.Second},
		{200 * time.Millisecond, true, time.Second},
		{201 * time.Millisecond, true, 2 * time.Second},
	} {
		if got := raisedWindow(c.margin, c.whole); got != c.want {
			t.Errorf("raisedWindow(%v, %v) = %v, want %v", c.margin, c.whole, got, c.want)
		}
	}
}
