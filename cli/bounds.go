package cli

import (
	"fmt"
	"time"
)

// The bounds of the durations flags give, each refused with its flag
// named: far past any real need, and small enough that no sum or multiple
// the commands form of them wraps a time.Duration (which ends near 292
// years).
const (
	// maxCallTimeout bounds --timeout: one call.
	maxCallTimeout = time.Hour
	// maxSpecTimeout bounds --spec-timeout: one spec.
	maxSpecTimeout = 7 * 24 * time.Hour
	// maxRunDuration bounds --max-duration: a whole run.
	maxRunDuration = 366 * 24 * time.Hour
	// maxBenchDuration bounds bench's --duration (bench keeps every
	// decision).
	maxBenchDuration = 7 * 24 * time.Hour
)

// durationIn says why d, the value of flag name, is not more than 0 and
// at most most, or nil.
func durationIn(name string, d, most time.Duration) error {
	if d <= 0 || d > most {
		return fmt.Errorf("%s %v: want more than 0, at most %v", name, d, most)
	}
	return nil
}

// statusIn says why the refusal status s is not one (300 to 599: not a
// success), or nil.
func statusIn(s int) error {
	if s < 300 || s > 599 {
		return fmt.Errorf("--limited-status %d: want a status from 300 to 599 (2xx is allowed)", s)
	}
	return nil
}
