package suite

import (
	"context"
	"errors"
	"sync"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/reference"
)

// ReferenceTarget is the reference Redis limiter on the suite's fake clock,
// its keys under the spec's prefix: it must pass every spec.
func ReferenceTarget() Target {
	return Target{
		Name:         "reference",
		Capabilities: contract.All(),
		NeedsRedis:   true,
		New: func(_ context.Context, env Env) (contract.RateLimiterContract, func() error, error) {
			if env.Redis == nil {
				return nil, nil, errors.New("the reference limiter needs Redis")
			}
			lim, err := reference.New(env.Redis, reference.Options{
				MaxRequests: env.MaxRequests, Window: env.Window, Prefix: env.KeyPrefix, Clock: env.Clock,
			})
			return lim, nil, err
		},
	}
}

// ModelTarget is the model itself, in memory: it must pass every spec that
// does not need a store. Several instances share one model, as instances of
// a limiter share one store.
func ModelTarget() Target {
	caps := contract.All()
	caps.StoreInspection = false
	var (
		mu     sync.Mutex
		shared = map[string]*model.Limiter{} // one model per spec, by key prefix
	)
	return Target{
		Name:         "model",
		Capabilities: caps,
		New: func(_ context.Context, env Env) (contract.RateLimiterContract, func() error, error) {
			mu.Lock()
			defer mu.Unlock()
			if lim, ok := shared[env.KeyPrefix]; ok {
				return lim, nil, nil
			}
			lim, err := model.NewLimiter(env.Clock, env.MaxRequests, env.Window)
			if err != nil {
				return nil, nil, err
			}
			shared[env.KeyPrefix] = lim
			return lim, func() error {
				mu.Lock()
				defer mu.Unlock()
				delete(shared, env.KeyPrefix)
				return nil
			}, nil
		},
	}
}
