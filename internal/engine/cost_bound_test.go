package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/internal/engine"
	"github.com/rlconform/rlconform/model"
)

// Bound asks the profile's model what fits: a full quota (N, a burst, a
// capacity) and, under cost=debt, no cost that can never fit, so an
// error wrapping ErrInvalidCost is honest there for a cost of 0 alone.
func TestBoundAsksTheModel(t *testing.T) {
	for _, c := range []struct {
		spec string
		want engine.CostBound
	}{
		{"sliding-log", engine.CostBound{Full: 5}},
		{"fixed-window:count-denied=true", engine.CostBound{Full: 5}},
		{"sliding-counter:admit=at-most", engine.CostBound{Full: 5}},
		{"gcra:burst=1", engine.CostBound{Full: 1}},
		{"gcra:burst=1,cost=debt", engine.CostBound{Full: 1, Debt: true}},
		{"token-bucket:capacity=3,refill=interval", engine.CostBound{Full: 3}},
		{"token-bucket:capacity=3,refill=interval,cost=debt", engine.CostBound{Full: 3, Debt: true}},
	} {
		b, err := engine.Bound(model.MustVariant(c.spec), 5, time.Minute)
		require.NoError(t, err, c.spec)
		assert.Equal(t, c.want, b, c.spec)
		assert.True(t, engine.InvalidCostHonest(0, b), "%s: cost 0", c.spec)
		assert.False(t, engine.InvalidCostHonest(c.want.Full, b), "%s: a full quota fits", c.spec)
		assert.Equal(t, !c.want.Debt, engine.InvalidCostHonest(c.want.Full+1, b), "%s: a cost above a full quota", c.spec)
		assert.Equal(t, !c.want.Debt, engine.InvalidCostHonest(1<<60, b), "%s: a cost above any limit", c.spec)
	}
}
