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

// TTLOldestEntry sets the key's TTL to when its oldest entry leaves (the
// time until more quota, which it also reports) instead of its newest:
// the key expires, and the entries after the oldest with it, while they
// still count. Caught by robust/key-hygiene.
func TTLOldestEntry(s Store) (contract.RateLimiterContract, error) {
	return newScripted(s, zsetScript, "ttl-oldest-entry")
}

// TTLADay sets every key's TTL to a day, whatever the window: keys
// expire, but an idle user costs memory for hours, far beyond a few windows
// and any spread against expiry storms. Caught by robust/key-hygiene.
func TTLADay(s Store) (contract.RateLimiterContract, error) {
	return newScripted(s, zsetScript, "ttl-a-day")
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

// FailOpenErrors is a correct limiter that declares the policy allow
// (contract.StoreFailureAllow: fail open), and returns errors while its
// store is down, as the default policy does: callers told it fails open
// get errors instead. Caught by robust/store-outage.
func FailOpenErrors(s Store) (contract.RateLimiterContract, error) {
	return variant(s, func(*scripted) {})
}

// DenyAllows declares the policy deny (contract.StoreFailureDeny: fail
// closed), and allows every request while its store is down. Caught by
// robust/store-outage.
func DenyAllows(s Store) (contract.RateLimiterContract, error) {
	return variant(s, func(l *scripted) { l.onError = "allow" })
}

// RetriesPastDeadline retries a failed store call for five seconds of its
// own, on a context of its own: each call during an outage answers (with
// an error) long after the caller's deadline and the store timeout.
// Caught by robust/store-outage.
func RetriesPastDeadline(s Store) (contract.RateLimiterContract, error) {
	return variant(s, func(l *scripted) { l.onError = "retry-5s" })
}

// FallbackLeaks declares the policy allow and, while its store is down,
// allows every request and counts it in a local fallback counter, which it
// never forgets: once the store is back, the requests of the outage still
// spend each user's quota, and a user gets fewer than N. Caught by
// robust/store-outage.
func FallbackLeaks(s Store) (contract.RateLimiterContract, error) {
	return variant(s, func(l *scripted) { l.onError, l.fallback = "fallback", map[string]int64{} })
}

// checkThenAdd is the classic race: read the count, decide in the client,
// then write, for a request of cost n (all or nothing: allowed when
// count + n <= N; n = 0 logs nothing and is allowed while one more fits).
func (l *scripted) checkThenAdd(ctx context.Context, user string, cfg [2]int64, record bool, n int) (bool, int, error) {
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
	if !record || count+int64(max(n, 1)) > cfg[0] {
		return false, max(0, int(cfg[0]-count)), nil
	}
	if n == 0 {
		return true, max(0, int(cfg[0]-count)), nil
	}
	// n <= N entries (it fit), one round trip each, as a loop over a unit
	// add does: the window between check and add grows with the cost.
	for range n {
		suffix := make([]byte, 8)
		rand.Read(suffix)
		if err := r.ZAdd(ctx, key, redisZ(now, fmt.Sprintf("%d-%s", now, hex.EncodeToString(suffix)))).Err(); err != nil {
			return false, 0, fmt.Errorf("%w: %w", contract.ErrStore, err)
		}
	}
	r.PExpire(ctx, key, msDuration(cfg[1]))
	return true, max(0, int(cfg[0]-count-int64(n))), nil
}

func redisZ(score int64, member string) redis.Z {
	return redis.Z{Score: float64(score), Member: member}
}

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// ClockClamped holds a clock that stepped back at the user's newest entry
// (now = max(now, newest)), as a guard against time going backwards: the
// requests made meanwhile are logged later than they were made, and keep
// counting after their window, refusing more than even counting the
// entries later than now would. Caught by strict/clock-step-back.
func ClockClamped(s Store) (contract.RateLimiterContract, error) {
	return zset(s, "clock-clamped")
}

// DropsFuture removes the entries later than now when it adds one, so after
// the clock steps back and forth it forgets requests and over-admits.
// Caught by strict/clock-step-back.
func DropsFuture(s Store) (contract.RateLimiterContract, error) {
	return zset(s, "drops-future")
}

// CappedLimit silently cuts the limit to 1000. Caught by strict/config-range.
func CappedLimit(s Store) (contract.RateLimiterContract, error) {
	return variant(s, func(l *scripted) { l.capLimit = 1000 })
}

// CappedWindow silently cuts the window to one day. Caught by
// strict/config-range.
func CappedWindow(s Store) (contract.RateLimiterContract, error) {
	return variant(s, func(l *scripted) { l.capWindow = 24 * 3600 * 1000 })
}

// WindowIgnored validates the window Configure is given, then keeps the one
// it was built with. Caught by core/reconfigure (and strict/config-range).
func WindowIgnored(s Store) (contract.RateLimiterContract, error) {
	return variant(s, func(l *scripted) { l.keepWindow = true })
}

// PlainErrors rejects invalid input with errors that wrap none of the
// contract's sentinels, so callers cannot tell invalid input from a store
// failure. Caught by robust/invalid-config and robust/empty-user-id.
func PlainErrors(s Store) (contract.RateLimiterContract, error) {
	return variant(s, func(l *scripted) { l.plainErrors = true })
}

// OversizeIgnored answers Configure with a limit above contract.MaxLimit
// or a window above contract.MaxWindow with no error, and keeps the
// configuration it had: the caller believes a value is in force that is
// not. Caught by robust/invalid-config.
func OversizeIgnored(s Store) (contract.RateLimiterContract, error) {
	return variant(s, func(l *scripted) { l.dropOversize = true })
}

// OversizeClamped takes a limit above contract.MaxLimit without an error
// and keeps it in 32 bits, saturated at 2^31-1: a limit far below the
// range every limiter honours is in force where the caller asked for more
// than it. Caught by robust/invalid-config.
func OversizeClamped(s Store) (contract.RateLimiterContract, error) {
	return variant(s, func(l *scripted) { l.clampLimit = true })
}

// IgnoresContext runs its store calls on a context of its own, so a caller
// that gave up still has its request decided. Caught by
// robust/context-cancel.
func IgnoresContext(s Store) (contract.RateLimiterContract, error) {
	return variant(s, func(l *scripted) { l.ignoreCtx = true })
}

// UnderAdmits compares count < N-1 and denies the Nth request. Caught by
// core/allow-within-limit.
func UnderAdmits(s Store) (contract.RateLimiterContract, error) {
	return zset(s, "under-admits")
}

// GlobalLimit keeps one log for every user: one user's requests spend
// everyone's quota. Caught by core/multi-user.
func GlobalLimit(s Store) (contract.RateLimiterContract, error) {
	return variant(s, func(l *scripted) { l.globalKey = true })
}

// LateReset behaves as a Reset retried by a client after a timeout whose
// first attempt had in fact succeeded: the duplicate lands after the user's
// next N decisions on that instance and wipes what they logged, so up to 2N
// pass after Reset returned.
// Caught by strict/reset-race (and core/reset).
func LateReset(s Store) (contract.RateLimiterContract, error) {
	return variant(s, func(l *scripted) { l.lateReset = map[string]int{} })
}
