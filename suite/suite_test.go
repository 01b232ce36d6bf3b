package suite_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/mutants"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/suite"
)

// TestConformance grades the reference limiter (real Redis, fake clock) and
// the model with the whole catalogue: both must pass every spec.
//
// To grade a remote limiter instead, name it in the environment:
//
//	RLCONFORM_TARGET=http://localhost:8081,http://localhost:8082 \
//	RLCONFORM_STORE_URL=redis://localhost:6379 RLCONFORM_STORE_PREFIX=rl: \
//	go test ./suite
func TestConformance(t *testing.T) {
	RegisterFailHandler(Fail)
	if urls := os.Getenv("RLCONFORM_TARGET"); urls != "" {
		registerRemote(t, strings.Split(urls, ","))
	} else {
		suite.Register(suite.Config{}, suite.ReferenceTarget(), suite.ModelTarget())
	}
	RunSpecs(t, "rlconform conformance")
}

func registerRemote(t *testing.T, urls []string) {
	ctx := context.Background()
	target, err := suite.RemoteTarget(ctx, urls, 5*time.Second)
	if err != nil {
		t.Fatalf("RLCONFORM_TARGET: %v", err)
	}
	cfg := suite.Config{}
	if store := os.Getenv("RLCONFORM_STORE_URL"); store != "" {
		red, err := redisenv.FromURL(ctx, store)
		if err != nil {
			t.Fatalf("RLCONFORM_STORE_URL: %v", err)
		}
		t.Cleanup(func() { red.Close() })
		cfg.Redis, cfg.StorePrefix = red, os.Getenv("RLCONFORM_STORE_PREFIX")
		target.Capabilities.StoreInspection = true
	}
	suite.Register(cfg, target)
}

// TestRunEntryPoint is the fstest-style form: one subtest per spec.
func TestRunEntryPoint(t *testing.T) {
	suite.Run(t, suite.Config{Level: suite.Strict}, suite.ModelTarget())
}

// TestRunHonoursExpectFail: a known failure listed in ExpectFail passes the
// go test form, as it does the command line.
func TestRunHonoursExpectFail(t *testing.T) {
	caps := contract.All()
	broken := suite.Target{Name: "reset-pattern", Capabilities: caps, NeedsRedis: true,
		New: func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
			lim, err := mutants.ResetByPattern(mutants.Store{Redis: env.Redis, Clock: env.Clock, Prefix: env.KeyPrefix, MaxRequests: env.MaxRequests, Window: env.Window})
			return lim, nil, err
		}}
	suite.Run(t, suite.Config{IDs: []string{"core/reset", "core/multi-user"}, ExpectFail: []string{"core/reset"}}, broken)
}
