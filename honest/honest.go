// Package honest holds correct rate limiters written the way popular
// libraries and services write them, each graded against the algorithm it
// claims: rlconform must pass every one of them, every time. Each was once
// failed by a rule that saw harm where there is none; it stays here so
// that such a rule cannot come back. They are the counterpart of package
// mutants, whose limiters must be failed.
package honest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
)

// Store is what a limiter of this package is built on: the same things
// the suite gives a target for one spec. A nil Clock means the Redis
// server's TIME, or for a limiter that reads time in the client, the
// machine's clock.
type Store struct {
	Redis       redis.UniversalClient
	Clock       fakeclock.Clock
	Prefix      string
	MaxRequests int
	Window      time.Duration
}

// Limiter is one entry of the self-test table.
type Limiter struct {
	// Name is how the tests call it.
	Name string
	// Profile is the algorithm it implements, as model.ParseVariant reads it
	// ("" is the sliding log): it is graded against that profile.
	Profile string
	// Once is the rule that once failed it, with no harm to show.
	Once string
	// New makes one instance; instances made from one Store share it.
	New func(Store) (contract.RateLimiterContract, error)
	// KeyOf is the key it keeps a user's state under, when it has one.
	KeyOf func(prefix, userID string) string
	// Cost says that its instances take weighted requests
	// ([contract.CostLimiter]): it is graded with Capabilities.Cost.
	Cost bool
}

// All lists the in-process limiters. [NewHashedService] and [GCRAMiddleware]
// are HTTP services, graded over the protocol and as an endpoint.
func All() []Limiter {
	return []Limiter{
		{Name: "zcard-log", Once: "strict/clock-step-back failed the conservative reading of entries later than now",
			New: func(s Store) (contract.RateLimiterContract, error) { return NewZCardLog(s) }, KeyOf: plainKey},
		{Name: "exact-log", Once: "robust/invalid-config failed a limiter that takes a limit of 2^53 and a window of 200 years",
			New: func(s Store) (contract.RateLimiterContract, error) { return NewExactLog(s) }, KeyOf: plainKey},
		{Name: "fixed-window", Profile: FixedWindowProfile, Once: "robust/key-hygiene failed a TTL equal to the state's lifetime, at random",
			New: func(s Store) (contract.RateLimiterContract, error) { return NewFixedWindow(s) }},
		{Name: "cost-log", Cost: true, Once: "strict/cost-differential failed an answer of invalid input (ErrInvalidCost) to a cost that a Configure lowering the limit had made too large to ever fit, where the contract takes it",
			New: func(s Store) (contract.RateLimiterContract, error) { return NewCostLog(s) }, KeyOf: plainKey},
		{Name: "cost-log-positive", Cost: true, Once: "strict/cost-differential failed an answer of invalid input (ErrInvalidCost) to a cost of 0, where the contract takes it",
			New: func(s Store) (contract.RateLimiterContract, error) { return NewPositiveCostLog(s) }, KeyOf: plainKey},
		{Name: "sliding-counter", Profile: SlidingCounterProfile, Once: "identify said NONE FITS, and the weighted counter's profile failed it: it admitted only while the estimate was below N, not while the estimate including this request is at most N",
			New: func(s Store) (contract.RateLimiterContract, error) { return NewSlidingCounter(s) }},
		{Name: "pacer", Profile: PacerProfile, Once: "robust/invalid-config failed a pacer (one request every W/N, a burst of 1) that takes a window above the range: its check assumed a fresh user gets N requests at once",
			New: func(s Store) (contract.RateLimiterContract, error) { return NewPacer(s) }, KeyOf: plainKey},
	}
}

// plainKey is the key of the logs: the prefix and the id, as most
// libraries build it.
func plainKey(prefix, userID string) string { return prefix + userID }

// checkConfig is the check most libraries make: a positive limit and a
// window of at least a millisecond, with no upper bound of their own.
func checkConfig(n int, w time.Duration) error {
	if n < 1 || w < time.Millisecond {
		return fmt.Errorf("%w: limit %d and window %v: want a limit of at least 1 and a window of at least 1ms", contract.ErrInvalidConfig, n, w)
	}
	return nil
}

// config is the limit and the window (ms) in force.
type config struct{ n, w int64 }

// settings holds the configuration every instance of a limiter starts
// with and Configure changes.
type settings struct{ cfg atomic.Pointer[config] }

func newSettings(s Store) (*settings, error) {
	if s.Redis == nil {
		return nil, errors.New("honest: nil Redis client")
	}
	if err := checkConfig(s.MaxRequests, s.Window); err != nil {
		return nil, err
	}
	st := &settings{}
	st.cfg.Store(&config{int64(s.MaxRequests), s.Window.Milliseconds()})
	return st, nil
}

func (st *settings) configure(ctx context.Context, n int, w time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkConfig(n, w); err != nil {
		return err
	}
	st.cfg.Store(&config{int64(n), w.Milliseconds()})
	return nil
}

// storeErr wraps a failure of Redis; a done context is returned as is.
func storeErr(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	return fmt.Errorf("%s: %w: %w", op, contract.ErrStore, err)
}

// clientClock is the clock of a limiter that reads time in the client: the
// store's, or with none the machine's.
func clientClock(s Store) fakeclock.Clock {
	if s.Clock == nil {
		return fakeclock.Real{}
	}
	return s.Clock
}

// nowArg is now in ms for a script, or "" for the server's TIME.
func nowArg(c fakeclock.Clock) string {
	if c == nil {
		return ""
	}
	return fmt.Sprint(c.Now().UnixMilli())
}

// member is a ZSET member unique to one request, as libraries make them.
func member() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("honest: a unique member: %w", err)
	}
	return hex.EncodeToString(b), nil
}
