package stall

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

const ms = time.Millisecond

// A second-long call among quick ones is a stall; among slow ones, or
// under a second, it is the target's speed.
func TestSplit(t *testing.T) {
	quick, stalled := Split([]time.Duration{2 * ms, 1010 * ms, 3 * ms, 2 * ms, 3002 * ms})
	assert.Equal(t, []time.Duration{2 * ms, 3 * ms, 2 * ms}, quick)
	assert.Equal(t, []time.Duration{1010 * ms, 3002 * ms}, stalled)

	for name, times := range map[string][]time.Duration{
		"a slow median":   {60 * ms, 70 * ms, 1000 * ms, 60 * ms, 65 * ms},
		"under a second":  {2 * ms, 2 * ms, 800 * ms, 2 * ms, 2 * ms},
		"mostly stalled":  {2 * ms, 1000 * ms, 1000 * ms, 1000 * ms, 2 * ms},
		"one call":        {1000 * ms},
		"none":            nil,
		"all quick alike": {ms, ms, ms},
	} {
		quick, stalled := Split(times)
		assert.Empty(t, stalled, name)
		assert.Equal(t, times, quick, name)
		assert.Empty(t, Describe(times), name)
	}
}

func TestDescribe(t *testing.T) {
	got := Describe([]time.Duration{2 * ms, 1010 * ms, 3 * ms, 2 * ms, 1003 * ms})
	assert.Equal(t, "2 of 5 calls stalled about 1s while the median call took 3ms: connection stalls (a listen backlog too small, or a proxy opening a connection per request), not the limiter's speed", got)
	got = Describe([]time.Duration{2 * ms, 1010 * ms, 3 * ms, 2 * ms, 3002 * ms})
	assert.Contains(t, got, "2 of 5 calls stalled 1s to 3s")
}

func TestMedianKeepsOrder(t *testing.T) {
	times := []time.Duration{3 * ms, 1 * ms, 2 * ms}
	assert.Equal(t, 2*ms, Median(times))
	assert.Equal(t, []time.Duration{3 * ms, 1 * ms, 2 * ms}, times)
	assert.Zero(t, Median(nil))
}
