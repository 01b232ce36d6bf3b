package mutants

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/model"
)

// The profile mutants are the reference's profile scripts
// (reference/*.lua) with a fault switched on by their last argument, and
// a float GCRA written as many libraries write it.
var (
	//go:embed profile-fixed-window.lua
	profileFixedSource string
	//go:embed profile-sliding-counter.lua
	profileCounterSource string
	//go:embed profile-gcra.lua
	profileGCRASource string
	//go:embed profile-token-bucket.lua
	profileBucketSource string
	//go:embed gcra-float.lua
	gcraFloatSource string

	profileFixedScript   = redis.NewScript(profileFixedSource)
	profileCounterScript = redis.NewScript(profileCounterSource)
	profileGCRAScript    = redis.NewScript(profileGCRASource)
	profileBucketScript  = redis.NewScript(profileBucketSource)
	gcraFloatScript      = redis.NewScript(gcraFloatSource)
)

// The profiles the profile mutants claim.
const (
	fixedHitProfile = "fixed-window:align=first-hit,count-denied=true"
	counterProfile  = "sliding-counter"
	gcraProfile     = "gcra"
	bucketProfile   = "token-bucket"
)

// profiled is a Redis limiter of a profile whose script carries a fault.
type profiled struct {
	store  Store
	spec   model.Spec
	script *redis.Script
	fault  string
	cfg    atomic.Pointer[[2]int64] // N, W in ms
}

func newProfiled(s Store, profile string, script *redis.Script, fault string) (*profiled, error) {
	if s.Redis == nil {
		return nil, fmt.Errorf("mutant needs Redis")
	}
	if err := contract.ValidateConfig(s.MaxRequests, s.Window); err != nil {
		return nil, err
	}
	spec, err := model.ParseSpec(profile)
	if err != nil {
		return nil, err
	}
	l := &profiled{store: s, spec: spec, script: script, fault: fault}
	l.cfg.Store(&[2]int64{int64(s.MaxRequests), s.Window.Milliseconds()})
	return l, nil
}

func (l *profiled) key(user string) string { return l.store.Prefix + "{" + user + "}" }

// args are the script's arguments after now, W and N.
func (l *profiled) args(user string, n int64, record bool) []any {
	rec := "0"
	if record {
		rec = "1"
	}
	p := l.spec.Params
	sized := func(v string) int64 {
		if b, err := strconv.ParseInt(v, 10, 64); err == nil {
			return b
		}
		return n
	}
	switch l.script {
	case profileFixedScript:
		crash := "0"
		if user[len(user)-1]%2 == 0 { // the process dies for these users
			crash = "1"
		}
		return []any{rec, p["align"], boolFlag(p["count-denied"] == "true"), l.fault, crash}
	case profileCounterScript:
		return []any{rec, boolFlag(p["count-denied"] == "true"), l.fault}
	case profileGCRAScript:
		return []any{sized(p["burst"]), rec, l.fault}
	case gcraFloatScript:
		return []any{sized(p["burst"]), rec}
	}
	return []any{sized(p["capacity"]), rec, p["refill"], l.fault}
}

func boolFlag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func (l *profiled) call(ctx context.Context, user string, record bool) (bool, int, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return false, 0, err
	}
	cfg := *l.cfg.Load()
	now := ""
	if l.store.Clock != nil {
		now = strconv.FormatInt(l.store.Clock.Now().UnixMilli(), 10)
	}
	args := append([]any{now, cfg[1], cfg[0]}, l.args(user, cfg[0], record)...)
	res, err := l.script.Run(ctx, l.store.Redis, []string{l.key(user)}, args...).Int64Slice()
	if err != nil {
		return false, 0, fmt.Errorf("%w: %w", contract.ErrStore, err)
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("%w: script answered %v", contract.ErrStore, res)
	}
	return res[0] == 1, int(res[1]), nil
}

func (l *profiled) AllowRequest(ctx context.Context, user string) (bool, error) {
	ok, _, err := l.call(ctx, user, true)
	return ok, err
}

func (l *profiled) GetRemainingRequests(ctx context.Context, user string) (int, error) {
	_, n, err := l.call(ctx, user, false)
	return n, err
}

func (l *profiled) Reset(ctx context.Context, user string) error {
	if err := contract.ValidateUserID(user); err != nil {
		return err
	}
	if err := l.store.Redis.Del(ctx, l.key(user)).Err(); err != nil {
		return fmt.Errorf("%w: %w", contract.ErrStore, err)
	}
	return nil
}

func (l *profiled) Configure(_ context.Context, n int, w time.Duration) error {
	if err := contract.ValidateConfig(n, w); err != nil {
		return err
	}
	l.cfg.Store(&[2]int64{int64(n), w.Milliseconds()})
	return nil
}

// FixedWindowExpireEveryHit is the INCR + EXPIRE fixed window with the
// EXPIRE sent on every hit, not only the window's first: a user who keeps
// sending, even denied, pushes the window's end ahead and is never let
// through again. Graded as a fixed window opened by the first request,
// counting denied requests. Caught by strict/boundary-burst-first.
func FixedWindowExpireEveryHit(s Store) (contract.RateLimiterContract, error) {
	return newProfiled(s, fixedHitProfile, profileFixedScript, "expire-every-hit")
}

// FixedWindowIncrExpireSplit sends INCR and the window's EXPIRE in two
// round trips; a process dying between them leaves a key that never
// expires. The crash is made deterministic: it happens on the first hit of
// every window of a user whose id ends in an even byte. Graded as a fixed
// window opened by the first request, counting denied requests. Caught by
// robust/key-hygiene.
func FixedWindowIncrExpireSplit(s Store) (contract.RateLimiterContract, error) {
	return newProfiled(s, fixedHitProfile, profileFixedScript, "split")
}

// GCRABurstOffByOne allows a request while the theoretical arrival time is
// at most B×T ahead, not (B-1)×T: B+1 requests from idle. Caught by
// core/block-over-limit.
func GCRABurstOffByOne(s Store) (contract.RateLimiterContract, error) {
	return newProfiled(s, gcraProfile, profileGCRAScript, "burst-off-by-one")
}

// GCRAFloatDrift computes GCRA in float64 seconds, as many libraries do:
// the emission interval W/N and the arrival times round, so on the exact
// edge of a decision the answer flips. Caught by strict/differential, whose
// clock steps land on those edges.
func GCRAFloatDrift(s Store) (contract.RateLimiterContract, error) {
	return newProfiled(s, gcraProfile, gcraFloatScript, "")
}

// TokenBucketRefillWrongInstant adds only the whole tokens earned since the
// last refill and moves the last refill to now, so the fraction earned is
// lost: requests closer together than W/N never refill the bucket. Caught
// by strict/differential.
func TokenBucketRefillWrongInstant(s Store) (contract.RateLimiterContract, error) {
	return newProfiled(s, bucketProfile, profileBucketScript, "wrong-instant")
}

// TokenBucketOverCapacity does not cap refills at the capacity: an idle
// user banks tokens and bursts past C. Caught by core/sliding-expiry.
func TokenBucketOverCapacity(s Store) (contract.RateLimiterContract, error) {
	return newProfiled(s, bucketProfile, profileBucketScript, "over-capacity")
}

// SlidingCounterWrongWindow weights the previous window's count by the part
// of the current window gone (e/W) instead of the part of the previous one
// still inside (t-W, t] ((W-e)/W): just after a boundary it forgets the
// previous window, late in the window it counts it whole. Caught by
// strict/boundary-burst-epoch.
func SlidingCounterWrongWindow(s Store) (contract.RateLimiterContract, error) {
	return newProfiled(s, counterProfile, profileCounterScript, "wrong-window")
}
