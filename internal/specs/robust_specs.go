package specs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/engine"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/result"
)

// robustSpecs grade what breaks in production: odd input, key hygiene and
// store faults.
func robustSpecs() []engine.Spec {
	return []engine.Spec{
		{ID: "robust/user-id-zoo", Level: result.Robust, Needs: []engine.Need{engine.NeedUsers, engine.NeedOpaqueIDs},
			Rule:            "any non-empty id up to 512 bytes is its own user: no glob, no case folding, no truncation, no prefix matching",
			Run:             userIDZoo,
			Hint:            "key by the exact id: never lower-case it, cut it, or use it in a KEYS/SCAN pattern",
			HintAllProfiles: true},
		{ID: "robust/empty-user-id", Level: result.Robust, Needs: []engine.Need{engine.NeedOpaqueIDs},
			Rule:            "the empty user id is an error wrapping ErrInvalidUserID and changes nothing",
			Run:             emptyUserID,
			Hint:            "validate the id before touching the store, and return an error wrapping contract.ErrInvalidUserID for the empty one (over HTTP: status 400)",
			HintAllProfiles: true},
		{ID: "robust/invalid-config", Level: result.Robust, Needs: []engine.Need{engine.NeedConfigure, engine.NeedAnyWindow},
			Rule:            "Configure with a limit below 1 or a window below 1ms is an error wrapping ErrInvalidConfig and leaves the old configuration in force; above MaxLimit or MaxWindow it is that error, or taken and in force as a limit of at least MaxLimit or a window of at least MaxWindow",
			Run:             invalidConfig,
			Hint:            "validate both values before storing either, and return an error wrapping contract.ErrInvalidConfig (over HTTP: status 400); a limit above contract.MaxLimit or a window above contract.MaxWindow may be refused the same way (contract.ValidateConfig) or taken, never answered with another error; taken, it is enforced as a limit of at least contract.MaxLimit (a window of at least contract.MaxWindow), never cut below the range nor overflowed",
			HintAllProfiles: true},
		{ID: "robust/key-hygiene", Level: result.Robust, Needs: []engine.Need{engine.NeedUsers, engine.NeedInspect},
			Rule:            "every key the limiter writes has a TTL covering its newest entry and at most a few windows (plus up to 5 minutes of spread), and lives under its prefix",
			General:         "every key the limiter writes has a TTL covering the time its state still matters (the profile's lifetime) and at most a few windows (plus up to 5 minutes of spread), and lives under its prefix",
			Run:             keyHygiene,
			Hint:            "PEXPIRE the key on every write, in the same script, by at least the time its state still matters (for a log: W; a margin such as W + 1s costs little and survives clocks and rounding) and at most a few windows; build keys as prefix + id",
			HintAllProfiles: true},
		{ID: "robust/store-outage", Level: result.Robust, Needs: []engine.Need{engine.NeedUsers, engine.NeedOwnRedis},
			Rule:            "with its store stopped, then frozen, every call answers within the store timeout as the declared policy says (error: an error wrapping ErrStore; allow: allowed; deny: denied), and once the store is back the limiter counts from what it holds, with no error and nothing kept from the outage",
			Run:             storeOutage,
			Hint:            "answer as the policy you declare says (contract.StoreFailure; over HTTP \"store_failure\"), within the store timeout: give the store client dial and read timeouts below it, honour the context, never retry past it; let the client reconnect by itself, and keep no count from the outage (a fallback counter) once the store is back",
			HintAllProfiles: true},
		{ID: "robust/context-cancel", Level: result.Robust, Needs: []engine.Need{engine.NeedInProcess},
			Rule:            "a cancelled context is honoured: the call returns an error and allows nothing",
			Run:             contextCancel,
			Hint:            "pass the caller's context to every store call",
			HintAllProfiles: true},
	}
}

// zoo is the ids robust/user-id-zoo tries; each must be its own user.
func zoo(h *engine.Harness) []string {
	ids := []string{"a", "A", "ab", "a:b", "a:", "{a}", "{a", "a}", "a*", "*", "?", "a?", "[a]", "[", "a b", " a", "a ",
		"é", "e\u0301", "日本", "🙂", "🙂🙂", `a"b`, `a\b`, "a\nb", "a\tb"}
	for i := range ids {
		ids[i] = h.User(ids[i])
	}
	// Two ids of the full 512 bytes that differ only in their last byte, and
	// one that is a prefix of them.
	pad := strings.Repeat("x", contract.MaxUserIDBytes-len(h.Tag())-1)
	ids = append(ids, h.User(pad+"1"), h.User(pad+"2"), h.User(pad))
	return ids
}

func userIDZoo(h *engine.Harness) {
	ids := zoo(h)
	// Spend each id's quota but the last slot, in turns, so that any two ids
	// that collide run out early.
	for range h.N() - 1 {
		for _, u := range ids {
			h.Allow(u)
		}
	}
	for _, u := range ids {
		h.Allow(u)
		h.Allow(u)
	}
	if h.Target().Capabilities.Reset {
		for _, u := range []string{h.User("a"), h.User("*"), h.User("[a]"), ids[len(ids)-1]} {
			h.Reset(u)
			for _, v := range ids {
				h.Allow(v) // only u is allowed again
			}
		}
	}
}

func emptyUserID(h *engine.Harness) {
	u := h.User("u")
	h.Allow(u)
	lim := h.Instance(0)
	ok, err := lim.AllowRequest(h.Context(), "")
	h.Note(`AllowRequest("")`, errWord(err, engine.AllowedWord(ok)))
	if err == nil || ok {
		h.Failf(`AllowRequest("") = %s, %v; want denied and an error (the empty id is not a user)`, engine.AllowedWord(ok), err)
	}
	wantSentinel(h, `AllowRequest("")`, err, contract.ErrInvalidUserID)
	if h.Target().Capabilities.Remaining {
		n, err := lim.GetRemainingRequests(h.Context(), "")
		h.Note(`GetRemainingRequests("")`, errWord(err, fmt.Sprint(n)))
		if err == nil {
			h.Failf(`GetRemainingRequests("") = %d, nil; want an error`, n)
		}
		wantSentinel(h, `GetRemainingRequests("")`, err, contract.ErrInvalidUserID)
	}
	if h.Target().Capabilities.Reset {
		err := lim.Reset(h.Context(), "")
		h.Note(`Reset("")`, errWord(err, "ok"))
		if err == nil {
			h.Failf(`Reset("") = nil; want an error`)
		}
		wantSentinel(h, `Reset("")`, err, contract.ErrInvalidUserID)
	}
	// Nothing changed for the real user.
	for range h.N() {
		h.Allow(u)
	}
}

func errWord(err error, ok string) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return ok
}

func invalidConfig(h *engine.Harness) {
	u := h.User("u")
	h.Allow(u)
	lim := h.Instance(0)
	for _, bad := range []struct {
		n int
		w time.Duration
	}{{0, h.W()}, {-1, h.W()}, {h.N(), 0}, {h.N(), -time.Second}, {h.N(), 500 * time.Microsecond}, {0, 0}} {
		err := lim.Configure(h.Context(), bad.n, bad.w)
		op := fmt.Sprintf("Configure(%d, %v)", bad.n, bad.w)
		h.Note(op, errWord(err, "ok"))
		if errors.Is(err, contract.ErrNoAnswer) {
			h.NoAnswer(op, err)
		}
		if err == nil {
			h.Failf("%s = nil; want an error (the limit must be at least 1 and the window at least 1ms)", op)
		}
		wantSentinel(h, op, err, contract.ErrInvalidConfig)
	}
	// The old configuration is in force: the model was never reconfigured.
	for range h.N() {
		h.Allow(u)
	}
	if h.Target().Capabilities.Remaining {
		h.Remaining(u)
	}
	// Above the range every limiter must honour, a limiter may refuse or
	// take: 2^53 and 200 years are exact in a Go int and a time.Duration.
	aboveRange(h, contract.MaxLimit+1, h.W(), func(n int, w time.Duration) { limitInForce(h, n, w) })
	aboveRange(h, h.N(), contract.MaxWindow+time.Millisecond, func(n int, w time.Duration) { windowInForce(h, n, w) })
	aboveRange(h, h.N(), 200*365*24*time.Hour, func(n int, w time.Duration) { windowInForce(h, n, w) })
	// Refused or taken and set back, the configuration graded is in
	// force: N of a fresh user are allowed, then one is denied.
	after := h.User("after")
	for range h.N() + 1 {
		h.Allow(after)
	}
	if h.Target().Capabilities.Remaining {
		h.Remaining(after)
	}
}

// aboveRange sends Configure(n, w), a value above contract.MaxLimit or
// contract.MaxWindow. A limiter may refuse it, with an error wrapping
// ErrInvalidConfig (and nothing else), or take it: then inForce checks
// that it applies, and the configuration graded is set again.
func aboveRange(h *engine.Harness, n int, w time.Duration, inForce func(n int, w time.Duration)) {
	lim := h.Instance(0)
	op := fmt.Sprintf("Configure(%d, %v)", n, w)
	err := lim.Configure(h.Context(), n, w)
	h.Note(op, errWord(err, "ok"))
	if errors.Is(err, contract.ErrNoAnswer) {
		h.NoAnswer(op, err)
	}
	if err != nil {
		wantSentinel(h, op, err, contract.ErrInvalidConfig)
		return
	}
	inForce(n, w)
	h.Configure(h.N(), h.W())
}

// rawAllow sends AllowRequest(user) to instance 0 outside the model (a
// configuration the model cannot hold is in force) and notes the answer.
func rawAllow(h *engine.Harness, user, taken string) bool {
	op := "AllowRequest(" + h.Short(user) + ")"
	ok, err := h.Instance(0).AllowRequest(h.Context(), user)
	h.Note(op, errWord(err, engine.AllowedWord(ok)))
	if errors.Is(err, contract.ErrNoAnswer) {
		h.NoAnswer(op, err)
	}
	if err != nil {
		h.Failf("%s; then %s returned an error: %v", taken, op, err)
	}
	h.CountDecided(1)
	return ok
}

// atBound is the profile graded at the edge of the range every limiter
// honours, limit n and window w (contract.MaxLimit or contract.MaxWindow):
// what a configuration taken above the range must allow at least, or deny
// at least. A spec asks it, never "a fresh user gets N at once", which a
// pacer (gcra:burst=1) answers with one.
func atBound(h *engine.Harness, n int, w time.Duration) model.Replayable {
	m, err := h.Profile().New(n, w)
	if err != nil {
		h.Fault("the profile %s cannot be built at limit %d and window %v: %v", h.Profile(), n, w, err)
	}
	return m
}

// freshBurst sends k requests of a fresh user outside the model and fails
// any that bound, graded at one instant t0, allows and the limiter denies:
// the configuration taken is then in force below the range. It returns
// how many the limiter and bound allowed. Requests sent in real time are
// later than t0, which lets no profile allow fewer.
func freshBurst(h *engine.Harness, bound model.Replayable, t0 time.Time, user string, k int, taken, what string) (got, want int) {
	for i := range k {
		ok := rawAllow(h, user, taken)
		wanted, err := bound.Allow(t0, user)
		if err != nil {
			h.Fault("the model %s: %v", bound.Describe(), err)
		}
		if wanted && !ok {
			h.Failf("%s, but request %d of a fresh user was denied, where %s allows %d at once: %s", taken, i+1, bound.Describe(), i+1, what)
		}
		got, want = got+boolInt(ok), want+boolInt(wanted)
	}
	return got, want
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// limitInForce checks that a limit n taken above contract.MaxLimit is in
// force as a limit of at least MaxLimit: of N+1 requests of a fresh user,
// each that the profile at a limit of MaxLimit allows is allowed, and
// after them what remains lies between what that model leaves (less the
// requests the limiter allowed beyond it) and n. Nothing above the range
// is held to exact arithmetic: a limiter may enforce MaxLimit or any
// limit up to n, and may lose a count of one to rounding there (Lua and
// JavaScript count in doubles, whose step above 2^53 is 2, so 2^53-k may
// read as 2^53: go-redis/redis_rate answers 2^53 after 6 requests). What
// a limit of MaxLimit leaves is exact in a double (every integer up to
// 2^53 is one, and rounding is monotone, so no count from a limit of at
// least 2^53 reads lower); at most n is the limit it was given. Less is a
// limit enforced below the range (a cap, a 32-bit counter); more, a quota
// nobody configured.
func limitInForce(h *engine.Harness, n int, w time.Duration) {
	taken := fmt.Sprintf("Configure(%d, %v) was taken (a limiter may take or refuse a limit above %d)", n, w, contract.MaxLimit)
	v := h.User("big-limit")
	bound, t0 := atBound(h, contract.MaxLimit, w), h.Now()
	k := h.N() + 1
	got, want := freshBurst(h, bound, t0, v, k, taken, "the limit taken is not in force")
	if !h.Target().Capabilities.Remaining {
		return
	}
	left, err := h.Instance(0).GetRemainingRequests(h.Context(), v)
	op := "GetRemainingRequests(" + h.Short(v) + ")"
	h.Note(op, errWord(err, fmt.Sprint(left)))
	if errors.Is(err, contract.ErrNoAnswer) {
		h.NoAnswer(op, err)
	}
	if err != nil {
		h.Failf("%s; then GetRemainingRequests returned an error: %v", taken, err)
	}
	atLeast, err := bound.Remaining(t0, v)
	if err != nil {
		h.Fault("the model %s: %v", bound.Describe(), err)
	}
	switch lo := max(0, atLeast-max(0, got-want)); {
	case left < lo:
		h.Failf("%s, but after %d requests of a fresh user (%d allowed) GetRemainingRequests = %d, less than the %d that %s leaves: the limit in force is below the range every limiter honours (a cap, or a counter too narrow)", taken, k, got, left, lo, bound.Describe())
	case left > n:
		h.Failf("%s, but after %d requests of a fresh user GetRemainingRequests = %d, more than the limit taken", taken, k, left)
	}
}

// windowInForce checks that a window w taken above contract.MaxWindow
// applies as a window of at least MaxWindow: of N requests of a fresh
// user, each that the profile at a window of MaxWindow allows is allowed,
// and a whole old window W later one more is denied where that model
// still denies it (every built-in profile does: nothing of a window of a
// century has gone a minute on). That they still count a window W later
// is what a spec sees of it (nothing waits out a century), and what a
// window enforced as a few milliseconds, or keys whose TTL overflowed and
// expired at once, fail.
func windowInForce(h *engine.Harness, n int, w time.Duration) {
	taken := fmt.Sprintf("Configure(%d, %v) was taken (a limiter may take or refuse a window above %v)", n, w, contract.MaxWindow)
	x := h.User(fmt.Sprintf("big-window-%dms", w.Milliseconds()))
	bound, t0 := atBound(h, n, contract.MaxWindow), h.Now()
	freshBurst(h, bound, t0, x, n, taken, "the window taken is not in force")
	if !h.RealTime() {
		h.Advance(h.W())
	} else {
		h.WaitUntil(time.Now().Add(h.W() + h.Edge()))
	}
	// The model's requests were all at t0, the earliest any was sent: if
	// they still count now (the model denies one more), the limiter's do.
	modelAllows, err := bound.Clone().Allow(h.Now(), x)
	if err != nil {
		h.Fault("the model %s: %v", bound.Describe(), err)
	}
	if rawAllow(h, x, taken) && !modelAllows {
		h.Failf("%s, but %v after a fresh user's requests one more was allowed, where %s denies it: they left as the old window %v says, so the window taken is not in force", taken, h.W(), bound.Describe(), h.W())
	}
}

func contextCancel(h *engine.Harness) {
	u := h.User("u")
	lim := h.Instance(0)
	ctx, cancel := context.WithCancel(h.Context())
	cancel()
	ok, err := lim.AllowRequest(ctx, u)
	h.Note("AllowRequest("+h.Short(u)+") [cancelled context]", errWord(err, engine.AllowedWord(ok)))
	if ok {
		h.Failf("AllowRequest with a cancelled context = allowed; want denied with an error")
	}
	if err == nil {
		h.Failf("AllowRequest with a cancelled context returned no error: a cancelled caller must learn its request was not decided")
	}
	if !errors.Is(err, context.Canceled) && !errors.Is(err, contract.ErrStore) {
		h.Note("note", "the error wraps neither context.Canceled nor contract.ErrStore")
	}
	// Nothing was logged: the user has a full quota.
	for range h.N() + 1 {
		h.Allow(u)
	}
}

// wantSentinel fails the spec unless err wraps sentinel: callers (and HTTP
// status codes) must tell invalid input from a store failure.
func wantSentinel(h *engine.Harness, op string, err error, sentinel error) {
	if !errors.Is(err, sentinel) {
		h.Failf("%s returned %q, which does not wrap %q (contract.%s): callers cannot tell invalid input from a store failure; over HTTP answer 400",
			op, err, sentinel, map[error]string{contract.ErrInvalidConfig: "ErrInvalidConfig", contract.ErrInvalidUserID: "ErrInvalidUserID", contract.ErrInvalidCost: "ErrInvalidCost"}[sentinel])
	}
}
