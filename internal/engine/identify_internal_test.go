package engine

import (
	"testing"
	"time"
)

// A real-time window raised for slow round trips is five margins, rounded
// up to a tenth of a second, then to the target's granularity.
func TestRaisedWindow(t *testing.T) {
	for _, c := range []struct {
		margin, granularity time.Duration
		want                time.Duration
	}{
		{250 * time.Millisecond, time.Millisecond, 1300 * time.Millisecond},
		{250 * time.Millisecond, time.Second, 2 * time.Second},
		{200 * time.Millisecond, time.Second, time.Second},
		{201 * time.Millisecond, time.Second, 2 * time.Second},
		{201 * time.Millisecond, 300 * time.Millisecond, 1200 * time.Millisecond},
	} {
		if got := raisedWindow(c.margin, c.granularity); got != c.want {
			t.Errorf("raisedWindow(%v, %v) = %v, want %v", c.margin, c.granularity, got, c.want)
		}
	}
}
