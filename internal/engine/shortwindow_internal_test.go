package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rlconform/rlconform/contract"
)

// A real-time window left to the run is shortened to ten margins, rounded
// up to a tenth of a second, only for a target that declares millisecond
// windows and takes Configure; any other keeps the window in force.
func TestShortWindowNeedsMillisecondWindowsDeclared(t *testing.T) {
	harness := func(sized bool, caps contract.Capabilities) *Harness {
		return &Harness{run: &runner{sized: sized}, target: Target{Capabilities: caps}, cfg: Config{RealTimeWindow: time.Second}}
	}
	ms := contract.Capabilities{Configure: true, WindowGranularity: time.Millisecond}
	for _, c := range []struct {
		name   string
		h      *Harness
		margin time.Duration
		want   time.Duration
	}{
		{"loopback", harness(true, ms), 20 * time.Millisecond, 200 * time.Millisecond},
		{"rounded up", harness(true, ms), 26 * time.Millisecond, 300 * time.Millisecond},
		{"never longer", harness(true, ms), 120 * time.Millisecond, time.Second},
		{"--realtime-window given", harness(false, ms), 20 * time.Millisecond, time.Second},
		{"no granularity declared", harness(true, contract.Capabilities{Configure: true}), 20 * time.Millisecond, time.Second},
		{"whole seconds", harness(true, contract.Capabilities{Configure: true, WindowGranularity: time.Second}), 20 * time.Millisecond, time.Second},
		{"its own window", harness(true, contract.Capabilities{WindowGranularity: time.Millisecond}), 20 * time.Millisecond, time.Second},
	} {
		assert.Equal(t, c.want, c.h.shortWindow(c.margin), c.name)
	}
}
