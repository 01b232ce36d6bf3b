package honest

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
)

// SlidingCounterProfile is the profile [SlidingCounter] implements.
const SlidingCounterProfile = "sliding-counter:align=go-zero,count-denied=true,admit=at-most"

// counterEpsilon is the tolerance of the float comparison, as the library
// takes one: an estimate at most N plus this is within the limit.
const counterEpsilon = 1e-9

// SlidingCounter is the two-window weighted counter as a popular Go
// library writes it (mennanov/limiters' SlidingWindow): one counter per
// window, keyed by the prefix, the id and the window's start, the windows
// laid out by time.Time.Truncate, which counts them from Go's zero time
// (0001-01-01 UTC), not from the epoch (align=go-zero: the same grid for
// every window that divides a day, another for 30 or 365 days),
// INCR'd on every request and given a TTL to the end of the next window;
// the previous window's count is read with it. The estimate includes this
// request, in float arithmetic:
//
//	total = prev × (W − e) / W + cur      (cur counts this request)
//	allowed ⇔ total − N < ε
//
// so it admits while the estimate including this request is at most N.
// The library also caps both counts at N+1 before weighing them, which no
// profile models; this limiter leaves them whole. Its profile is
// [SlidingCounterProfile]; graded as the weighted counter that admits
// while the estimate is below N, it fails where the weighted count is a
// fraction, and identify once said NONE FITS.
type SlidingCounter struct {
	store Store
	clock fakeclock.Clock
	*settings
}

// NewSlidingCounter returns the two-window counter on s; with no clock it
// reads the machine's.
func NewSlidingCounter(s Store) (*SlidingCounter, error) {
	st, err := newSettings(s)
	if err != nil {
		return nil, err
	}
	return &SlidingCounter{store: s, clock: clientClock(s), settings: st}, nil
}

// keys are the counters of user's window holding now and the one before,
// and how far into its window now is (ms).
func (c *SlidingCounter) keys(user string, now, w int64) (cur, prev string, e int64) {
	start := time.UnixMilli(now).Truncate(time.Duration(w) * time.Millisecond).UnixMilli()
	return c.store.Prefix + user + ":" + strconv.FormatInt(start, 10),
		c.store.Prefix + user + ":" + strconv.FormatInt(start-w, 10), now - start
}

// counts reads both windows' counts, INCR'ing the current one first when
// count is set, in one transaction.
func (c *SlidingCounter) counts(ctx context.Context, user string, cfg *config, count bool) (prev, cur, e int64, err error) {
	now := c.clock.Now().UnixMilli()
	curKey, prevKey, e := c.keys(user, now, cfg.w)
	var curCmd, prevCmd *redis.StringCmd
	var incr *redis.IntCmd
	_, err = c.store.Redis.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if count {
			incr = p.Incr(ctx, curKey)
			// Until the end of the next window: as long as the count matters.
			// In ms: a window of centuries overflows a time.Duration.
			p.Do(ctx, "PEXPIRE", curKey, 2*cfg.w-e)
		} else {
			curCmd = p.Get(ctx, curKey)
		}
		prevCmd = p.Get(ctx, prevKey)
		return nil
	})
	if err != nil && err != redis.Nil {
		return 0, 0, 0, err
	}
	if count {
		cur = incr.Val()
	} else if cur, err = readCount(curCmd); err != nil {
		return 0, 0, 0, err
	}
	prev, err = readCount(prevCmd)
	return prev, cur, e, err
}

// readCount is a counter's value, 0 when it does not exist.
func readCount(cmd *redis.StringCmd) (int64, error) {
	v, err := cmd.Int64()
	if err == redis.Nil {
		return 0, nil
	}
	return v, err
}

// weighted is the previous window's count weighed by the part of it still
// inside (now-W, now], in float, as the library computes it.
func weighted(prev, e, w int64) float64 {
	return float64(prev*(w-e)) / float64(w)
}

// AllowRequest implements [contract.RateLimiterContract].
func (c *SlidingCounter) AllowRequest(ctx context.Context, user string) (bool, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return false, fmt.Errorf("AllowRequest: %w", err)
	}
	cfg := c.cfg.Load()
	prev, cur, e, err := c.counts(ctx, user, cfg, true)
	if err != nil {
		return false, storeErr(ctx, "AllowRequest", err)
	}
	total := weighted(prev, e, cfg.w) + float64(cur)
	return total-float64(cfg.n) < counterEpsilon, nil
}

// GetRemainingRequests implements [contract.RateLimiterContract]: the
// requests whose estimate, each including itself, is at most N.
func (c *SlidingCounter) GetRemainingRequests(ctx context.Context, user string) (int, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return 0, fmt.Errorf("GetRemainingRequests: %w", err)
	}
	cfg := c.cfg.Load()
	prev, cur, e, err := c.counts(ctx, user, cfg, false)
	if err != nil {
		return 0, storeErr(ctx, "GetRemainingRequests", err)
	}
	left := math.Floor(float64(cfg.n)-weighted(prev, e, cfg.w)+counterEpsilon) - float64(cur)
	return int(max(0, left)), nil
}

// Reset implements [contract.RateLimiterContract]: both windows' counters
// go.
func (c *SlidingCounter) Reset(ctx context.Context, user string) error {
	if err := contract.ValidateUserID(user); err != nil {
		return fmt.Errorf("Reset: %w", err)
	}
	cur, prev, _ := c.keys(user, c.clock.Now().UnixMilli(), c.cfg.Load().w)
	if err := c.store.Redis.Del(ctx, cur, prev).Err(); err != nil {
		return storeErr(ctx, "Reset", err)
	}
	return nil
}

// Configure implements [contract.RateLimiterContract].
func (c *SlidingCounter) Configure(ctx context.Context, n int, w time.Duration) error {
	return c.configure(ctx, n, w)
}
