package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A remote target whose probe met a connection stall is said to answer at
// its median, and the stall is named with what to do, never taken for
// its speed.
func TestCallSpeedNamesStalls(t *testing.T) {
	var out bytes.Buffer
	got := callSpeed([]time.Duration{2 * time.Millisecond, 1010 * time.Millisecond, 3 * time.Millisecond, 2 * time.Millisecond, 2 * time.Millisecond}, &out)
	assert.Equal(t, 2*time.Millisecond, got)
	assert.Contains(t, out.String(), "the target answers in about 2ms a call (the median of 5)")
	assert.Contains(t, out.String(), "1 of 5 calls stalled about 1s")
	assert.Contains(t, out.String(), "listen(…, 128)")

	out.Reset()
	got = callSpeed([]time.Duration{40 * time.Millisecond, 41 * time.Millisecond, 39 * time.Millisecond}, &out)
	assert.Equal(t, 40*time.Millisecond, got)
	assert.NotContains(t, out.String(), "stalled")
	assert.Zero(t, callSpeed(nil, &out))

	out.Reset()
	callSpeed([]time.Duration{400 * time.Microsecond}, &out)
	assert.Contains(t, out.String(), "the target answers in under 1ms a call (the median of 1)")
}
