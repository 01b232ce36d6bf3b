package honest

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/contract"
)

//go:embed zcard.lua
var zcardSource string

var zcardScript = redis.NewScript(zcardSource)

//go:embed log.lua
var logSource string

var logScript = redis.NewScript(logSource)

// Log is a sliding-window log in one Redis script per decision, keyed by
// the prefix and the id, with a TTL of W refreshed on every write.
type Log struct {
	store  Store
	script *redis.Script
	*settings
}

// NewZCardLog is the canonical ZREMRANGEBYSCORE + ZCARD + ZADD script:
// after a clock that stepped back it counts the entries later than now
// (the conservative reading). It once failed strict/clock-step-back.
func NewZCardLog(s Store) (*Log, error) { return newLog(s, zcardScript) }

// NewExactLog is an exact log (ZCOUNT up to now) whose Configure takes any
// limit from 1 and any window from 1ms, as Go libraries do: 2^53 and 200
// years too. It once failed robust/invalid-config.
func NewExactLog(s Store) (*Log, error) { return newLog(s, logScript) }

func newLog(s Store, script *redis.Script) (*Log, error) {
	st, err := newSettings(s)
	if err != nil {
		return nil, err
	}
	return &Log{store: s, script: script, settings: st}, nil
}

func (l *Log) run(ctx context.Context, op, user string, add bool) (bool, int, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return false, 0, fmt.Errorf("%s: %w", op, err)
	}
	m, err := member()
	if err != nil {
		return false, 0, err
	}
	cfg := l.cfg.Load()
	flag := "0"
	if add {
		flag = "1"
	}
	res, err := l.script.Run(ctx, l.store.Redis, []string{plainKey(l.store.Prefix, user)},
		nowArg(l.store.Clock), cfg.w, cfg.n, m, flag).Int64Slice()
	if err != nil {
		return false, 0, storeErr(ctx, op, err)
	}
	return res[0] == 1, int(res[1]), nil
}

// AllowRequest implements [contract.RateLimiterContract].
func (l *Log) AllowRequest(ctx context.Context, user string) (bool, error) {
	ok, _, err := l.run(ctx, "AllowRequest", user, true)
	return ok, err
}

// GetRemainingRequests implements [contract.RateLimiterContract].
func (l *Log) GetRemainingRequests(ctx context.Context, user string) (int, error) {
	_, n, err := l.run(ctx, "GetRemainingRequests", user, false)
	return n, err
}

// Reset implements [contract.RateLimiterContract].
func (l *Log) Reset(ctx context.Context, user string) error {
	if err := contract.ValidateUserID(user); err != nil {
		return fmt.Errorf("Reset: %w", err)
	}
	if err := l.store.Redis.Del(ctx, plainKey(l.store.Prefix, user)).Err(); err != nil {
		return storeErr(ctx, "Reset", err)
	}
	return nil
}

// Configure implements [contract.RateLimiterContract]: a limit from 1 and
// a window from 1ms, with no upper bound.
func (l *Log) Configure(ctx context.Context, n int, w time.Duration) error {
	return l.configure(ctx, n, w)
}
