package mutants

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/luaprelude"
	"github.com/rlconform/rlconform/internal/scripthook"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/reference"
)

// The profile mutants are the reference's profile scripts
// (reference/*.lua) with one fault planted by an edit of their source, and
// a float GCRA written as many libraries write it.

//go:embed gcra-float.lua
var gcraFloatBody string

// gcraFloatSource is the script Redis runs: the prelude, then the file.
var gcraFloatSource = luaprelude.Source(gcraFloatBody)

// The profiles the profile mutants claim.
const (
	fixedHitProfile = "fixed-window:align=first-hit,count-denied=true"
	counterProfile  = "sliding-counter"
	gcraProfile     = "gcra"
	gcraDebtProfile = "gcra:cost=debt"
	bucketProfile   = "token-bucket"
)

// edit replaces old, which must occur exactly once, by new.
type edit struct{ old, new string }

// edits is a rewrite of a script making each edit in turn.
func edits(es ...edit) func(string) (string, error) {
	return func(src string) (string, error) {
		for _, e := range es {
			if n := strings.Count(src, e.old); n != 1 {
				return "", fmt.Errorf("the fault's anchor %q occurs %d times in the script, want once", e.old, n)
			}
			src = strings.Replace(src, e.old, e.new, 1)
		}
		return src, nil
	}
}

// mutated is the reference implementation of profile with its script
// rewritten.
func mutated(s Store, profile string, rewrite func(string) (string, error)) (contract.RateLimiterContract, error) {
	if s.Redis == nil {
		return nil, fmt.Errorf("mutant needs Redis")
	}
	spec, err := model.ParseVariant(profile)
	if err != nil {
		return nil, err
	}
	return reference.NewProfile(scripthook.Client{UniversalClient: s.Redis, Rewrite: rewrite}, spec, reference.Options{
		MaxRequests: s.MaxRequests, Window: s.Window, Prefix: s.Prefix, Clock: s.Clock,
	})
}

// The anchors the faults are planted at.
const (
	fixedWrite   = "  redis.call(\"HSET\", key, \"a\", anchor, \"s\", start, \"c\", count)\n"
	bucketCapped = "    if tok > cap * L then\n"
)

// FixedWindowExpireEveryHit is the INCR + EXPIRE fixed window with the
// EXPIRE sent on every hit, not only the window's first: a user who keeps
// sending, even denied, pushes the window's end ahead and is never let
// through again. Graded as a fixed window opened by the first request,
// counting denied requests. Caught by strict/denied-not-logged. It is
// the honest fixed-window:align=elastic,count-denied=true (python limits'
// elastic expiry), which identify names it.
func FixedWindowExpireEveryHit(s Store) (contract.RateLimiterContract, error) {
	return mutated(s, fixedHitProfile, edits(edit{fixedWrite, "  start = now -- the TTL set again: the window closes W after the last hit\n" + fixedWrite}))
}

// FixedWindowIncrExpireSplit sends INCR and the window's EXPIRE in two
// round trips; a process dying between them leaves a key that never
// expires. The crash is made deterministic: it happens on the first hit of
// every window of a user whose id ends in an even byte. Graded as a fixed
// window opened by the first request, counting denied requests. Caught by
// robust/key-hygiene.
func FixedWindowIncrExpireSplit(s Store) (contract.RateLimiterContract, error) {
	return mutated(s, fixedHitProfile, edits(
		// A new window's key is written afresh, without a TTL...
		edit{"  count = count + 1\n", "  count = count + 1\n  if count == 1 then redis.call(\"DEL\", key) end\n"},
		// ... which only the window's first hit would set, in its own round
		// trip, that never comes for these users.
		edit{fixedWrite, fixedWrite + `  if string.byte(key, -2) % 2 == 0 then
    return {allowed, remaining}
  end
`}))
}

// GCRABurstOffByOne allows a request while the theoretical arrival time is
// at most B×T ahead, not (B-1)×T: B+1 requests from idle. Caught by
// core/block-over-limit.
func GCRABurstOffByOne(s Store) (contract.RateLimiterContract, error) {
	return mutated(s, gcraProfile, edits(edit{"local tol = (burst - 1) * window", "local tol = burst * window"}))
}

// GCRAFloatDrift computes GCRA in float64 seconds, as many libraries do:
// the emission interval W/N and the arrival times round, so on the exact
// edge of a decision the answer flips. Caught by strict/config-range.
func GCRAFloatDrift(s Store) (contract.RateLimiterContract, error) {
	return mutated(s, gcraProfile, func(string) (string, error) { return gcraFloatSource, nil })
}

// GCRADebtDecidedWhole claims a GCRA whose weighted requests run into
// debt (cost=debt: allowed whenever one request would be, as Guava's
// tryAcquire(n) is) but decides them whole: a cost above what is left is
// refused, and one above the burst never fits. Caught by
// strict/cost-all-or-nothing (and strict/cost-never-fit).
func GCRADebtDecidedWhole(s Store) (contract.RateLimiterContract, error) {
	return mutated(s, gcraDebtProfile, edits(edit{`local debt = ARGV[6] == "debt"`, `local debt = false`}))
}

// TokenBucketRefillWrongInstant adds only the whole tokens earned since the
// last refill and moves the last refill to now, so the fraction earned is
// lost: requests closer together than W/N never refill the bucket. Caught
// by core/sliding-expiry.
func TokenBucketRefillWrongInstant(s Store) (contract.RateLimiterContract, error) {
	return mutated(s, bucketProfile, edits(edit{"          tok = tok + (now - last) * per\n",
		"          tok = tok + math.floor((now - last) * per / L) * L -- the fraction earned is lost\n"}))
}

// TokenBucketOverCapacity does not cap refills at the capacity: an idle
// user banks tokens and bursts past C. Caught by
// strict/boundary-burst-first.
func TokenBucketOverCapacity(s Store) (contract.RateLimiterContract, error) {
	return mutated(s, bucketProfile, edits(
		edit{bucketCapped, "    if false then\n"},
		edit{"      if tok >= full then\n        tok = full\n      else\n", "      do\n"},
		edit{"        if now - last >= math.ceil(missing / per) then\n          tok = full\n        else\n", "        do\n"}))
}

// SlidingCounterWrongWindow weights the previous window's count by the part
// of the current window gone (e/W) instead of the part of the previous one
// still inside (t-W, t] ((W-e)/W): just after a boundary it forgets the
// previous window, late in the window it counts it whole. Caught by
// strict/boundary-burst-epoch.
func SlidingCounterWrongWindow(s Store) (contract.RateLimiterContract, error) {
	return mutated(s, counterProfile, edits(edit{"local used = prev * (window - e) + cur * window", "local used = prev * e + cur * window"}))
}
