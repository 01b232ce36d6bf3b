package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rlconform/rlconform/contract"
)

// Unit windows and a granularity exclude each other.
func TestUnitWindowsExcludeAGranularity(t *testing.T) {
	target := func(c contract.Capabilities) Target { return Target{Name: "t", Capabilities: c} }
	assert.NoError(t, validGranularity(target(contract.Capabilities{UnitWindows: true})))
	assert.Error(t, validGranularity(target(contract.Capabilities{UnitWindows: true, WindowGranularity: time.Second})))
}

// A target of unit windows takes only those; any other, any whole
// multiple of its granularity.
func TestTakesWindowKeepsToUnitWindows(t *testing.T) {
	h := &Harness{target: Target{Capabilities: contract.Capabilities{UnitWindows: true}}, run: &runner{}}
	assert.True(t, h.TakesWindow(time.Minute))
	assert.True(t, h.TakesWindow(24*time.Hour))
	assert.False(t, h.TakesWindow(2*time.Second))
	h = &Harness{target: Target{}, run: &runner{granularity: time.Second}}
	assert.True(t, h.TakesWindow(2*time.Second))
	assert.False(t, h.TakesWindow(1500*time.Millisecond))
}
