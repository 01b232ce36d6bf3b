package mutants

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
)

// variant builds a correct ZSET limiter and lets change break it.
func variant(s Store, change func(*scripted)) (contract.RateLimiterContract, error) {
	l, err := newScripted(s, zsetScript, "")
	if err != nil {
		return nil, err
	}
	change(l)
	return l, nil
}

// NonAtomic prunes and counts in one round trip and adds in another, so
// concurrent requests all pass the same check. Caught by core/concurrent-4
// (and strict/linearizable, strict/shared-store-concurrent).
func NonAtomic(s Store) (contract.RateLimiterContract, error) {
	return variant(s, func(l *scripted) { l.nonAtomic = true })
}

// ResetByPattern deletes every key matching prefix{id* on Reset, so
// Reset("a") also wipes "ab". Caught by core/reset.
func ResetByPattern(s Store) (contract.RateLimiterContract, error) {
	return variant(s, func(l *scripted) { l.resetPattern = true })
}

// CaseFolded lower-cases user ids, so "A" spends "a"'s quota. Caught by
// robust/user-id-zoo.
func CaseFolded(s Store) (contract.RateLimiterContract, error) {
	return variant(s, func(l *scripted) { l.foldCase = true })
}

// TruncatedID keys users by their first 256 bytes, so long ids that share
// them share one quota. Caught by robust/user-id-zoo.
func TruncatedID(s Store) (contract.RateLimiterContract, error) {
	return variant(s, func(l *scripted) { l.truncate = 256 })
}

// NoTTL never sets an expiry: every user ever seen stays in Redis. Caught by
// robust/key-hygiene.
func NoTTL(s Store) (contract.RateLimiterContract, error) {
	return newScripted(s, zsetScript, "no-ttl")
}

// HangsWhenDown retries a failed call forever with a fresh context, so a
// Redis outage hangs every caller. Caught by robust/store-outage.
func HangsWhenDown(s Store) (contract.RateLimiterContract, error) {
	return variant(s, func(l *scripted) { l.onError = "hang" })
}

// AllowsWhenDown swallows store errors and allows the request, without
// declaring fail-open: an outage switches the limiter off silently. Caught by
// robust/store-outage.
func AllowsWhenDown(s Store) (contract.RateLimiterContract, error) {
	return variant(s, func(l *scripted) { l.onError = "allow" })
}

// checkThenAdd is the classic race: read the count, decide in the client,
// then write.
func (l *scripted) checkThenAdd(ctx context.Context, user string, cfg [2]int64, record bool) (bool, int, error) {
	r, key := l.store.Redis, l.key(user)
	clock := l.store.Clock
	if clock == nil {
		clock = fakeclock.Real{}
	}
	now := clock.Now().UnixMilli()
	if err := r.ZRemRangeByScore(ctx, key, "-inf", fmt.Sprint(now-cfg[1])).Err(); err != nil {
		return false, 0, fmt.Errorf("%w: %w", contract.ErrStore, err)
	}
	count, err := r.ZCard(ctx, key).Result()
	if err != nil {
		return false, 0, fmt.Errorf("%w: %w", contract.ErrStore, err)
	}
	if !record || count >= cfg[0] {
		return false, max(0, int(cfg[0]-count)), nil
	}
	suffix := make([]byte, 4)
	rand.Read(suffix)
	member := fmt.Sprintf("%d-%s", now, hex.EncodeToString(suffix))
	if err := r.ZAdd(ctx, key, redisZ(now, member)).Err(); err != nil {
		return false, 0, fmt.Errorf("%w: %w", contract.ErrStore, err)
	}
	r.PExpire(ctx, key, msDuration(cfg[1]))
	return true, max(0, int(cfg[0]-count-1)), nil
}

func redisZ(score int64, member string) redis.Z {
	return redis.Z{Score: float64(score), Member: member}
}

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }
