package freeport

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Ports found together are distinct: each is held until all are found.
func TestLoopbackNGivesDistinctPorts(t *testing.T) {
	ports, err := LoopbackN(64)
	require.NoError(t, err)
	require.Len(t, ports, 64)
	seen := map[int]bool{}
	for _, p := range ports {
		assert.False(t, seen[p], "port %d twice", p)
		assert.Positive(t, p)
		seen[p] = true
	}
}
