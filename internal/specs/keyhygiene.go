package specs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/internal/engine"
	"github.com/rlconform/rlconform/redisenv"
)

// expirySpread is how much longer than a few windows a key may live: a
// TTL spread on purpose so that keys written together do not expire
// together (Envoy's ratelimit adds up to EXPIRATION_JITTER_MAX_SECONDS,
// 300 s by default, to every key's). It costs memory for minutes of idle
// users, bounded, which is a choice; a key that lives on for hours or
// never expires is a leak.
const expirySpread = 5 * time.Minute

// keyHygiene judges the keys that appear under the prefix during the
// spec, each against the configuration in force when it was written (this
// spec changes none): a prefix shared across specs also holds what the
// earlier ones and the grader's probes left, under other windows, and
// keys written by hashed ids cannot be told apart otherwise.
func keyHygiene(h *engine.Harness) {
	before, err := specKeys(h, h.Context())
	if err != nil {
		h.Fault("listing the keys under %s: %v", h.Env().KeyPrefix, err)
	}
	users := []string{h.User("a"), h.User("b"), h.User("{c}")}
	deadline := hygieneWrites(h, users)
	longest := h.W() // a log's state lives W after its newest entry
	if !h.Profile().IsSlidingLog() {
		_, longest = lifetimes(h, users[:2])
	}
	keys, attributed := newKeys(h, before)
	if !attributed {
		// The target hashes ids into its keys: every key that appeared is
		// this spec's, but whose is unknown: each must expire, and not too
		// late; how early is judged on keys that name their user.
		deadline = nil
	}
	judgeTTLs(h, keys, users[:2], deadline, 3*max(h.W(), longest)+time.Second+expirySpread)
	keysOutsidePrefix(h)
}

// hygieneWrites makes users write, in rounds spread over a quarter of the
// window (so that a TTL covering only the oldest entry shows), then resets
// the last user. It returns, per user with state, the earliest real
// instant its state may stop mattering: a TTL set from the state's
// lifetime at a write runs out no earlier.
func hygieneWrites(h *engine.Harness, users []string) map[string]time.Time {
	step := h.W() / time.Duration(4*(h.N()+1))
	// ahead is, per user, the least of (real instant - fake instant) over
	// its requests (a denied one may write too, when the profile counts
	// it): a TTL set at one of them from the state's
	// lifetime then runs out no earlier than ahead after the fake instant
	// at which the state stops mattering. With the fake clock running
	// ahead of real time that is the last write; with it standing still,
	// the first (a fixed window sets its TTL on the window's first hit).
	ahead := map[string]time.Duration{}
	last := map[string]time.Time{} // each user's last allowed request
	for i := range h.N() + 1 {
		if i > 0 {
			stepBy(h, step)
		}
		for _, u := range users {
			sent := time.Now()
			allowed := h.Allow(u)
			// A denied request may write too (a counter that counts it,
			// its TTL set again): the latest request may have set the TTL.
			if d, ok := ahead[u]; !ok || sent.Sub(h.Now()) < d {
				ahead[u] = sent.Sub(h.Now())
			}
			if allowed {
				last[u] = sent
			}
		}
	}
	if h.Target().Capabilities.Remaining {
		h.Remaining(h.User("never-allowed"))
	}
	if h.Target().Capabilities.Reset {
		h.Reset(users[len(users)-1])
		delete(last, users[len(users)-1])
	}
	deadline := map[string]time.Time{}
	now := time.Now()
	for u, sent := range last {
		switch {
		case !h.RealTime():
			deadline[u] = h.Now().Add(h.Model().Lifetime(h.Now(), u) + ahead[u])
		case h.Profile().IsSlidingLog():
			deadline[u] = sent.Add(h.W()) // the newest entry lives W from its write
		default:
			// The shortest lifetime any admissible state leaves from now.
			shortest, _ := lifetimes(h, []string{u})
			deadline[u] = now.Add(shortest)
		}
	}
	return deadline
}

// newKeys lists the keys under the prefix that are not in before: those
// that name one of the spec's users (attributed), or when none does, all.
func newKeys(h *engine.Harness, before []string) (keys []string, attributed bool) {
	known := make(map[string]bool, len(before))
	for _, k := range before {
		known[k] = true
	}
	after, err := specKeys(h, h.Context())
	if err != nil {
		h.Fault("listing the keys under %s: %v", h.Env().KeyPrefix, err)
	}
	var others []string
	for _, k := range after {
		switch {
		case known[k]:
		case strings.Contains(k, h.Tag()):
			keys = append(keys, k)
		default:
			others = append(others, k)
		}
	}
	if len(known) > 0 {
		h.Note(fmt.Sprintf("%d key(s) under the prefix before the spec", len(known)), "not judged: written before, under other configurations")
	}
	if len(keys) > 0 {
		return keys, true
	}
	if len(others) == 0 {
		h.Failf("no key appeared under the prefix %q after allowed requests: the target declares store inspection but writes elsewhere", h.Env().KeyPrefix)
	}
	return others, false
}

// judgeTTLs fails a key without a TTL or with one above ceiling, and a
// user in deadline none of whose keys lives until its deadline: the key
// holding the state is unknown (a fixed window keeps one per window, the
// earlier ones dead), so the user's longest-lived key must cover it.
func judgeTTLs(h *engine.Harness, keys, users []string, deadline map[string]time.Time, ceiling time.Duration) {
	type shortKey struct {
		key       string
		ttl, need time.Duration
	}
	short, covered := map[string]shortKey{}, map[string]bool{}
	for _, k := range keys {
		ttl, read, err := pttl(h.Context(), h.Env().Redis, k)
		if err != nil {
			h.Fault("PTTL %s: %v", k, err)
		}
		h.Note("PTTL "+strings.TrimPrefix(k, h.Env().KeyPrefix), ttl.String())
		switch {
		case ttl == -2: // gone since the SCAN
			continue
		case ttl == -1:
			h.Failf("key %q has no TTL (PTTL = -1): every idle user's key is a leak", k)
		case ttl > ceiling:
			h.Failf("key %q has a TTL of %v, more than a few windows (W = %v) and %v of spread: idle users cost memory long after their entries expired", k, ttl, h.W(), expirySpread)
		}
		u := ownerOf(k, users)
		d, ok := deadline[u]
		if !ok {
			continue
		}
		// PTTL is whole milliseconds, truncated, taken at some instant of
		// its call, and the key's expiry is a whole millisecond too: what
		// the state needs is compared at that resolution, at the latest
		// instant the TTL may have been read, so that a TTL equal to the
		// lifetime passes every time.
		need := (d.Sub(read) - 2*time.Millisecond).Truncate(time.Millisecond)
		if ttl >= need {
			covered[u] = true
		} else {
			short[u] = shortKey{k, ttl, need}
		}
	}
	for _, u := range users {
		if sk, ok := short[u]; ok && !covered[u] {
			h.Failf("key %q has a TTL of %v, less than the %v its state still matters (%s): the key would expire while it still counts", sk.key, sk.ttl, sk.need, h.ProfileName())
		}
	}
}

// keysOutsidePrefix fails keys that carry this spec's user ids but not
// the prefix: written outside it. Only a whole-keyspace scan finds them,
// which is done only on a Redis this run started: on another, it would
// walk every key.
func keysOutsidePrefix(h *engine.Harness) {
	if !h.Redis().Owned() {
		h.Note("keys outside the prefix", "not looked for: this Redis was not started by the run")
		return
	}
	tagged, err := redisenv.ScanKeys(h.Context(), h.Env().Redis, "*"+h.Tag()+"*")
	if err != nil {
		h.Fault("SCAN *%s*: %v", h.Tag(), err)
	}
	for _, k := range tagged {
		if !strings.HasPrefix(k, h.Env().KeyPrefix) {
			h.Failf("key %q holds one of this spec's users but is outside the prefix %q", k, h.Env().KeyPrefix)
		}
	}
}

// ownerOf is the user of users whose id key holds ("" for none).
func ownerOf(key string, users []string) string {
	owner := ""
	for _, u := range users {
		if strings.Contains(key, u) && len(u) > len(owner) {
			owner = u
		}
	}
	return owner
}

// stepBy moves the fake clock by d, or in real time waits d.
func stepBy(h *engine.Harness, d time.Duration) {
	if !h.RealTime() {
		h.Advance(d)
		return
	}
	h.WaitUntil(time.Now().Add(d))
}

// pttl reads key's TTL, and when the answer was received: Redis read it
// no later.
func pttl(ctx context.Context, red redis.UniversalClient, key string) (time.Duration, time.Time, error) {
	ttl, err := red.PTTL(ctx, key).Result()
	return ttl, time.Now(), err
}

// lifetimes bounds how long the state of users still matters: the
// shortest and the longest lifetime of any of them, as the profile's model
// says on the fake clock, or as the interval oracle's states allow in real
// time.
func lifetimes(h *engine.Harness, users []string) (shortest, longest time.Duration) {
	shortest = -1
	for _, u := range users {
		lo, hi := h.Model().Lifetime(h.Now(), u), h.Model().Lifetime(h.Now(), u)
		// The search oracle (every profile's but the log's) bounds them.
		if s, ok := h.Oracle().(interface {
			Lifetimes(now time.Time, user string) (shortest, longest time.Duration)
		}); ok && h.RealTime() {
			lo, hi = s.Lifetimes(time.Now(), u)
		}
		if shortest < 0 || lo < shortest {
			shortest = lo
		}
		longest = max(longest, hi)
	}
	return max(0, shortest), longest
}

// specKeys lists the keys of the spec under its prefix: by name when the
// target says how it names keys, else by scanning the prefix.
func specKeys(h *engine.Harness, ctx context.Context) ([]string, error) {
	red := h.Env().Redis
	if keyOf := h.Target().KeyOf; keyOf != nil && h.Config().StorePrefix == "" {
		var keys []string
		for _, u := range h.UsersSeen() {
			k := keyOf(h.Env().KeyPrefix, u)
			n, err := red.Exists(ctx, k).Result()
			if err != nil {
				return nil, err
			}
			if n > 0 {
				keys = append(keys, k)
			}
		}
		return keys, nil
	}
	return redisenv.ScanKeys(ctx, red, redisenv.GlobEscape(h.Env().KeyPrefix)+"*")
}
