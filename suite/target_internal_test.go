package suite

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/engine"
)

// TestTargetConversionCarriesEveryField: a target with every field set
// reaches the engine with every field set.
func TestTargetConversionCarriesEveryField(t *testing.T) {
	full := Target{
		Name: "t", Addresses: []string{"a"}, Capabilities: contract.Capabilities{Clock: true}, NeedsRedis: true,
		New:     func(context.Context, Env) (contract.RateLimiterContract, func() error, error) { return nil, nil, nil },
		KeyOf:   func(string, string) string { return "" },
		Alive:   func(context.Context) error { return nil },
		Request: func(context.Context, int, string) (HTTPAnswer, error) { return HTTPAnswer{}, nil },
		MaxRPS:  1, SharedLimit: true,
	}
	assert.Empty(t, engine.ZeroFields(full), "set every field of Target here")
	assert.Empty(t, engine.ZeroFields(engineTarget(full)))
}
