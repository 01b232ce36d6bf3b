package engine

import (
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/result"
)

// A run's id is 8 random bytes (16 hex digits) at the start of every user
// id and key prefix: runs that share a target or a Redis, as concurrent CI
// jobs do, never meet (3 bytes met once in 4096 runs).
func TestRunIDsAreLongAndRandom(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		r, err := newRunner(context.Background(), Config{}, Catalogue{{ID: "core/x", Level: result.Core, Run: func(*Harness) {}}})
		require.NoError(t, err)
		assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{16}$`), r.runID)
		assert.Regexp(t, `^rlc:[0-9a-f]{16}-$`, r.runPrefix())
		assert.False(t, seen[r.runID], "a run id came twice")
		seen[r.runID] = true
	}
}
