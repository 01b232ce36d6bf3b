package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
)

// redisRateTarget is the redis_rate card's shim as a target, in process,
// on Redis TIME (no clock control), as a Go program grades it with
// suite.Run: no protocol v1 in between, whose server refuses a limit
// above contract.MaxLimit before the library sees it. Its Configure
// refuses what the contract refuses at every size (the card leaves that
// to the protocol's server) and gives redis_rate the rest.
func redisRateTarget() suite.Target {
	caps := contract.All()
	caps.Clock = false
	return suite.Target{Name: "redis_rate", Capabilities: caps, NeedsRedis: true,
		New: func(_ context.Context, se suite.Env) (contract.RateLimiterContract, func() error, error) {
			rdb, ok := se.Redis.(*redis.Client)
			if !ok {
				return nil, nil, fmt.Errorf("redis_rate: want a *redis.Client, got %T", se.Redis)
			}
			lim, err := newRedisRate(&env{rdb: rdb, prefix: se.KeyPrefix, limit: se.MaxRequests, window: se.Window})
			return belowRange{lim}, nil, err
		}}
}

// belowRange refuses a limit below 1 or a window below 1ms.
type belowRange struct{ contractLimiter }

func (b belowRange) Configure(ctx context.Context, n int, w time.Duration) error {
	if n < 1 || w < time.Millisecond {
		return fmt.Errorf("%w: limit %d, window %v", contract.ErrInvalidConfig, n, w)
	}
	return b.contractLimiter.Configure(ctx, n, w)
}

// redis_rate takes Configure(2^53, W) and, counting in Lua's doubles,
// answers 2^53 remaining after N+1 requests: 1/2^53 of a window added to
// an arrival time adds nothing. Above contract.MaxLimit nothing is held to
// exact arithmetic, only to a limit of at least MaxLimit, so
// robust/invalid-config passes (it once wanted 2^53 - (N+1) exactly).
func TestRedisRateTakesALimitAboveTheRange(t *testing.T) {
	if testing.Short() {
		t.Skip("grades redis_rate in real time")
	}
	red, err := redisenv.Start(context.Background())
	if err != nil {
		t.Fatalf("a Redis: %v", err)
	}
	t.Cleanup(func() { red.Close() })
	rdb, ok := red.Client.(*redis.Client)
	if !ok {
		t.Skipf("REDIS_URL names a cluster (%T): the card runs on one server", red.Client)
	}
	lim, err := newRedisRate(&env{rdb: rdb, prefix: "direct:", limit: 5, window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := lim.Configure(ctx, contract.MaxLimit+1, time.Second); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if ok, err := lim.AllowRequest(ctx, "u"); err != nil || !ok {
			t.Fatalf("request %d: %v, %v", i+1, ok, err)
		}
	}
	left, err := lim.GetRemainingRequests(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after 6 requests under a limit of 2^53: %d remaining (exact: %d)", left, contract.MaxLimit+1-6)
	if left < contract.MaxLimit-6 || left > contract.MaxLimit+1 {
		t.Errorf("remaining %d is out of [MaxLimit-6, 2^53]", left)
	}

	rep, err := suite.Check(ctx, suite.Config{Redis: red, Profile: "gcra", IDs: []string{"robust/invalid-config"}, ReportDir: t.TempDir()}, redisRateTarget())
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	if r.Status == result.Inconclusive {
		t.Skipf("inconclusive in real time on this machine (never a pass): %s", r.Message)
	}
	if r.Status != result.Passed {
		t.Fatalf("robust/invalid-config: %s\n%s", r.Status, r.Message)
	}
}
