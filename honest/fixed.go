package honest

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
)

//go:embed fixed.lua
var fixedSource string

var fixedScript = redis.NewScript(fixedSource)

// FixedWindowProfile is the profile [FixedWindow] implements.
const FixedWindowProfile = "fixed-window:align=epoch,count-denied=true"

// FixedWindow is a fixed window aligned to the epoch, keyed by the prefix,
// the id and the window's number, as libraries write it: INCR first (a
// denied request counts too), PEXPIRE by W on the window's first hit. The
// window starts with its first hit in rlconform's key-hygiene spec, so the
// key's TTL is exactly how long its count still matters; that spec once
// failed it at random, comparing whole milliseconds with nanoseconds.
type FixedWindow struct {
	store Store
	clock fakeclock.Clock
	*settings
}

// NewFixedWindow returns a fixed window on s; with no clock it reads the
// machine's.
func NewFixedWindow(s Store) (*FixedWindow, error) {
	st, err := newSettings(s)
	if err != nil {
		return nil, err
	}
	return &FixedWindow{store: s, clock: clientClock(s), settings: st}, nil
}

// key is the counter of user's window at now.
func (f *FixedWindow) key(user string, w int64) string {
	return f.store.Prefix + user + ":" + strconv.FormatInt(f.clock.Now().UnixMilli()/w, 10)
}

func (f *FixedWindow) run(ctx context.Context, op, user string, count bool) (bool, int, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return false, 0, fmt.Errorf("%s: %w", op, err)
	}
	cfg := f.cfg.Load()
	flag := "0"
	if count {
		flag = "1"
	}
	res, err := fixedScript.Run(ctx, f.store.Redis, []string{f.key(user, cfg.w)}, cfg.n, cfg.w, flag).Int64Slice()
	if err != nil {
		return false, 0, storeErr(ctx, op, err)
	}
	return res[0] == 1, int(res[1]), nil
}

// AllowRequest implements [contract.RateLimiterContract].
func (f *FixedWindow) AllowRequest(ctx context.Context, user string) (bool, error) {
	ok, _, err := f.run(ctx, "AllowRequest", user, true)
	return ok, err
}

// GetRemainingRequests implements [contract.RateLimiterContract].
func (f *FixedWindow) GetRemainingRequests(ctx context.Context, user string) (int, error) {
	_, n, err := f.run(ctx, "GetRemainingRequests", user, false)
	return n, err
}

// Reset implements [contract.RateLimiterContract]: the counter of the
// current window goes; those of earlier windows count for nothing.
func (f *FixedWindow) Reset(ctx context.Context, user string) error {
	if err := contract.ValidateUserID(user); err != nil {
		return fmt.Errorf("Reset: %w", err)
	}
	if err := f.store.Redis.Del(ctx, f.key(user, f.cfg.Load().w)).Err(); err != nil {
		return storeErr(ctx, "Reset", err)
	}
	return nil
}

// Configure implements [contract.RateLimiterContract].
func (f *FixedWindow) Configure(ctx context.Context, n int, w time.Duration) error {
	return f.configure(ctx, n, w)
}
