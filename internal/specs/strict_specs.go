package specs

import (
	"fmt"
	"slices"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/engine"
	"github.com/rlconform/rlconform/result"
)

// strictSpecs catch limiters that are not an exact sliding window.
func strictSpecs() []engine.Spec {
	return []engine.Spec{
		{ID: "strict/boundary-burst-epoch", Level: result.Strict,
			Rule:    "N requests just before an epoch-aligned window edge and N just after never get 2N through",
			General: "around an epoch-aligned window edge every answer is the profile's",
			Run:     boundaryBurstEpoch,
			Aims:    true,
			Hint:    "requests were let through right after a window edge while N entries from just before it still count: a fixed window or a two-counter estimate, not a log of instants"},
		{ID: "strict/boundary-burst-first", Level: result.Strict,
			Rule:    "N requests just before the end of a window opened by the first request and N just after never get 2N through",
			General: "around the end of a window opened by the first request every answer is the profile's",
			Run:     boundaryBurstFirst,
			Aims:    true,
			Hint:    "requests were let through when a window opened by the user's first request ended, while entries from just before still count: a fixed window, not a log of instants"},
		{ID: "strict/rolling-expiry", Level: result.Strict,
			Rule:    "entries free their slots one by one, each at exactly s+W (s+W-1 still counts)",
			General: "just before and at s+W of a spread-out series every answer is the profile's",
			Run:     rollingExpiry,
			Hint:    "an entry at s must count at s+W-1 and stop at exactly s+W: prune with ZREMRANGEBYSCORE key -inf now-W (inclusive)"},
		{ID: "strict/same-millisecond-burst", Level: result.Strict,
			Rule:    "of N+k requests in one millisecond, exactly N are allowed",
			General: "of N+k requests in one millisecond, exactly as many as the profile allows are allowed",
			Run:     sameMillisecondBurst,
			Aims:    true,
			Hint:    "ZSET members must be unique per request (timestamp plus a sequence or random part), or requests in one millisecond collapse into one entry"},
		{ID: "strict/denied-not-logged", Level: result.Strict,
			Rule:    "denied requests are not logged: a user hammering while denied regains quota when its allowed entries expire",
			General: "a user hammering while denied gets quota back as the profile says (counting denied requests or not)",
			Run:     deniedNotLogged,
			Hint:    "only allowed requests may be added to the log: a denied request that is logged keeps a hammering user locked out"},
		{ID: "strict/shared-store", Level: result.Strict, Needs: []engine.Need{engine.NeedUsers, engine.NeedShared},
			Rule:            "two instances on one store enforce one limit",
			Run:             sharedStore,
			Hint:            "the limiter's state (the log, the counters) must live in the shared store, not in the instance's memory",
			HintAllProfiles: true},
		{ID: "strict/shared-store-concurrent", Level: result.Strict, Needs: []engine.Need{engine.NeedUsers, engine.NeedShared, engine.NeedConfigure},
			Rule:            "16 goroutines over 2 instances sending 2N requests to each of many users get exactly N allowed per user",
			General:         "16 goroutines over 2 instances sending 2N requests to each of many users get exactly what the profile allows per user",
			Run:             sharedStoreConcurrent,
			Hint:            "check and add must be atomic in the shared store; instance-local state or a check-then-add race lets more than N through",
			RealTimeHint:    "check and add must be atomic in the shared store, and without clock control \"now\" must come from the store too (Redis TIME in the script): instance-local state, a check-then-add race, or instances that each pass their own clock to the store let more than N through",
			HintAllProfiles: true},
		{ID: "strict/lowered-limit", Level: result.Strict, Needs: []engine.Need{engine.NeedConfigure, engine.NeedRemaining},
			Rule:         "a limit lowered below a user's active entries denies at once and remaining clamps at 0, never negative",
			General:      "a lowered limit applies at once to users with history, as one of the profile's readings of a change says, and remaining never goes below 0",
			Reconfigures: true,
			Run:          loweredLimit,
			Hint:         "a lowered limit must apply to existing logs at once, and remaining must be clamped at 0"},
		{ID: "strict/raised-limit", Level: result.Strict, Needs: []engine.Need{engine.NeedConfigure},
			Rule:         "a raised limit admits a user that has history at once",
			General:      "a raised limit applies at once to users with history, as one of the profile's readings of a change says",
			Reconfigures: true,
			Run:          raisedLimit,
			Hint:         "a raised limit must apply to existing logs at once"},
		{ID: "strict/differential", Level: result.Strict, Needs: []engine.Need{engine.NeedUsers, engine.NeedConfigure, engine.NeedRemaining, engine.NeedReset},
			Rule:            "random schedules (users, requests, remaining, resets, reconfigures, clock steps onto edges) answer as the model does",
			General:         "random schedules (users, requests, remaining, resets, limit changes, clock steps onto the profile's edges) answer as the profile's model does",
			Run:             differential,
			Hint:            "replay the shrunk schedule above against your limiter; the first wrong answer is the bug",
			HintAllProfiles: true},
		{ID: "strict/linearizable", Level: result.Strict, Needs: []engine.Need{engine.NeedUsers}, MinDecided: 1,
			Rule:            "concurrent histories over several users, goroutines and (with a shared store) two instances are linearizable against the model",
			General:         "concurrent histories over several users, goroutines and (with a shared store) two instances are linearizable against the profile's model",
			Run:             linearizable,
			Hint:            "every decision must be one atomic step in the shared store, on one clock (without clock control, the store's: Redis TIME); open the visualisation to see the operations no serial order explains",
			HintAllProfiles: true},
		{ID: "strict/config-range", Level: result.Strict, Needs: []engine.Need{engine.NeedUsers, engine.NeedConfigure, engine.NeedAnyWindow},
			Rule:            "limits from 1 to 10000 and windows from 1ms to contract.MaxWindow are honoured exactly, without caps or overflow",
			General:         "limits from 1 to 10000 and windows from 1ms to contract.MaxWindow are honoured exactly, without caps or overflow, windows on a fixed grid starting where the profile's align says (the epoch's multiples of W, or Go's zero time's)",
			Run:             configRange,
			Hint:            "keep N and W exact over their whole range: no cap on the limit, no window stored in seconds or in a 32-bit integer, no TTL that overflows; a window on a fixed grid starts at a multiple of W since 1970 (align=epoch) or since 0001-01-01 UTC (align=go-zero, as Go's time.Time.Truncate): grade it against the one it uses",
			HintAllProfiles: true},
		{ID: "strict/clock-step-back", Level: result.Strict, Needs: []engine.Need{engine.NeedClockBack},
			Rule:    "after the clock steps back, entries later than now stay in the log and count once time catches up; before that, every answer is what counting them (ZCARD) or not counting them (ZCOUNT up to now) gives",
			LogOnly: "only the sliding log says what entries later than now do; the other profiles keep no entries",
			Run:     clockStepBack,
			Hint:    "log each request at its own instant, never remove entries later than now when adding one, and count either every entry the prune left (ZCARD) or those with score <= now (ZCOUNT key -inf now): both readings are honest"},
		{ID: "strict/reset-race", Level: result.Strict, Needs: []engine.Need{engine.NeedUsers, engine.NeedReset}, MinDecided: 1,
			Rule:            "Reset racing with requests never lets more than N through after it returned",
			General:         "Reset racing with requests never lets more through than the profile's burst before it and again after it",
			RTLogOnly:       "without a clock the bound needs a log: a profile that refills admits more as the round goes on",
			Run:             resetRace,
			Hint:            "Reset must delete the user's whole state atomically, and decisions must not keep state outside the store; without clock control, take now from the store (Redis TIME), not from each instance's clock: instances reading their own clocks decide out of order and let more through",
			HintAllProfiles: true},
	}
}

func boundaryBurstEpoch(h *engine.Harness) {
	// The spec starts on a multiple of every window, so W is an epoch edge
	// (in real time: the next one far enough ahead, on the grader's clock,
	// which an in-process or local target shares).
	u := h.User("u")
	alignEpoch(h)
	h.Before(h.W())
	for range h.N() {
		h.Allow(u)
	}
	// All N entries just before W count until just before 2W: everything in
	// between is denied.
	h.After(h.W())
	h.Allow(u)
	for _, at := range []time.Duration{h.W() + h.W()/4, h.W() + h.W()/2} {
		h.At(at)
		h.Allow(u)
	}
	h.Before(2*h.W() - h.Edge())
	h.Allow(u)
	h.After(2*h.W() - h.Edge()) // they have left: N allowed
	for range h.N() + 1 {
		h.Allow(u)
	}
}

// alignEpoch makes the spec's start a multiple of the window on the
// epoch, far enough ahead to aim just before the next edge. On the fake
// clock it already is. In real time the edges are the target's: when its
// answers carry now_ms the offset of its clock is measured (and noted),
// else its clock is taken to be this machine's.
func alignEpoch(h *engine.Harness) {
	if !h.RealTime() {
		return
	}
	w := h.W()
	var offset time.Duration
	if c, ok := engine.Unguarded(h.Instance(0)).(interface {
		ClockOffset() (time.Duration, time.Duration, bool)
	}); ok {
		if off, unc, ok := c.ClockOffset(); ok {
			offset = off
			h.Note(fmt.Sprintf("the target's clock is %v ahead of the grader's (±%v, from now_ms)", off.Round(time.Millisecond), unc.Round(time.Millisecond)), "epoch edges taken on it")
		}
	}
	// An edge of the target's clock, on ours: a multiple of W since 1970
	// (time.Time.Truncate counts from 0001-01-01, another grid for a
	// window that does not divide 62,135,596,800,000 ms).
	wms := w.Milliseconds()
	at := time.UnixMilli(time.Now().Add(offset).UnixMilli() / wms * wms).Add(-offset)
	for time.Until(at.Add(w)) < 3*h.Edge() {
		at = at.Add(w)
	}
	h.SetStart(at)
}

func boundaryBurstFirst(h *engine.Harness) {
	// The first request opens any window a fixed-window limiter keeps; it
	// lands off every epoch edge.
	u := h.User("u")
	first := 12_345 * time.Millisecond
	if h.RealTime() {
		h.Origin()
		first = 0
	}
	h.At(first)
	h.Allow(u)
	h.Before(first + h.W())
	for range h.N() - 1 {
		h.Allow(u)
	}
	// Once the first entry has left, one slot is free, not N.
	h.After(first + h.W())
	for range h.N() {
		h.Allow(u)
	}
	h.At(first + h.W() + h.W()/2)
	h.Allow(u)
}

func rollingExpiry(h *engine.Harness) {
	u := h.User("u")
	h.Origin()
	step := h.W() / time.Duration(2*h.N())
	var entries []time.Duration
	for i := range h.N() {
		at := time.Duration(i) * step
		h.At(at)
		h.Allow(u)
		entries = append(entries, at)
	}
	h.Allow(u)
	for _, s := range entries {
		h.Before(s + h.W())
		h.Allow(u) // s still counts
		if h.Target().Capabilities.Remaining {
			h.Remaining(u)
		}
		h.After(s + h.W())
		h.Allow(u) // s has left: its slot is free, and taken
		h.Allow(u)
	}
}

func sameMillisecondBurst(h *engine.Harness) {
	u := h.User("u")
	if h.RealTime() {
		// Without a clock, one millisecond is a concurrent burst: requests
		// that land in the same millisecond must all count.
		h.Origin()
		h.CheckBurst([]string{u}, h.N()+3, h.N()+3, []contract.RateLimiterContract{h.Instance(0)})
		h.Before(h.W())
		h.Allow(u)
		h.After(h.W())
		for range h.N() + 1 {
			h.Allow(u)
		}
		return
	}
	h.At(7 * time.Millisecond)
	for range h.N() + 3 {
		h.Allow(u)
	}
	h.At(h.W() + 6*time.Millisecond)
	h.Allow(u)
	h.At(h.W() + 7*time.Millisecond) // all N leave together
	for range h.N() + 1 {
		h.Allow(u)
	}
}

func deniedNotLogged(h *engine.Harness) {
	u := h.User("u")
	h.Origin()
	for range h.N() {
		h.Allow(u)
	}
	for i := 1; i < 20; i++ {
		h.At(h.W() * time.Duration(i) / 20)
		h.Allow(u)
		h.Allow(u)
	}
	// Every allowed entry has left and the hammering left none: allowed.
	h.After(h.W())
	h.Allow(u)
	// A little later the rest of the quota: N-1 allowed, then denied.
	h.At(h.W() + h.W()/40)
	for range h.N() {
		h.Allow(u)
	}
}

func sharedStore(h *engine.Harness) {
	h.Instances(2)
	for _, name := range []string{"a", "b", "c"} {
		u := h.User(name)
		for i := range h.N() + 2 {
			h.AllowOn(i%2, u)
		}
		h.AllowOn(0, u)
		h.AllowOn(1, u)
	}
	if h.Target().Capabilities.Remaining {
		h.RemainingOn(1, h.User("a"))
	}
}

func sharedStoreConcurrent(h *engine.Harness) {
	h.Configure(20, h.W())
	var users []string
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		users = append(users, h.User(name))
	}
	h.CheckBurst(users, 2*h.N(), 16, h.Instances(2))
}

func loweredLimit(h *engine.Harness) {
	u := h.User("u")
	h.Origin()
	h.Configure(6, h.W())
	for range 5 {
		h.Allow(u)
		tick(h, time.Millisecond)
	}
	h.Configure(2, h.W())
	h.Remaining(u) // 2 - 5 active: 0, not -3
	h.Allow(u)
	h.Remaining(u)
	h.Configure(1, h.W())
	h.Remaining(u)
	if !h.RealTime() {
		for i := range 5 { // entries leave one by one; remaining stays 0 until fewer than 1 are active
			h.At(h.W() + time.Duration(i)*time.Millisecond)
			h.Remaining(u)
		}
	} else {
		// Half a window in, a query keeps the user's key alive where a
		// query writes (its life restarts), so that a window after the
		// first request it still holds what the limiter kept: a bucket
		// that kept the old burst has refilled past the new limit there.
		// Without it the key's expiry raced the refill, and the bug showed
		// only on some runs.
		h.At(h.W() / 2)
		h.Remaining(u)
		h.After(h.W()) // every entry has left
		h.Remaining(u)
	}
	h.Allow(u)
}

func raisedLimit(h *engine.Harness) {
	u := h.User("u")
	h.Configure(2, h.W())
	for range 3 {
		h.Allow(u)
	}
	h.Configure(5, h.W())
	for range 4 {
		h.Allow(u)
	}
	if h.Target().Capabilities.Remaining {
		h.Remaining(u)
	}
	if !h.Profile().IsSlidingLog() {
		// A window later every reading has refilled or opened a window
		// under the new limit: 5 of 6 allowed (the old limit gave 2),
		// whether a bucket refills continuously or at whole windows.
		if h.RealTime() {
			h.WaitUntil(time.Now().Add(h.W() + h.Edge()))
		} else {
			h.Advance(h.W())
		}
		for range 6 {
			h.Allow(u)
		}
	}
}

// smallWindow is the longest window whose denials a fake-clock spec cannot
// judge: a limiter's key may expire in real time (its TTL is W) before the
// next call, which the contract allows.
const smallWindow = 10 * time.Second

// configRange sweeps the limit and the window over their range, each on a
// fresh user, with a concurrent burst for large limits.
func configRange(h *engine.Harness) {
	if h.RealTime() {
		configRangeRealTime(h)
		return
	}
	day := 24 * time.Hour
	at := time.Duration(0)
	for _, c := range []struct {
		n int
		w time.Duration
	}{{1, time.Millisecond}, {3, time.Millisecond}, {1, 30 * day}, {10_000, 30 * day}, {9, 365 * day}, {2, contract.MaxWindow}} {
		u := h.User(fmt.Sprintf("n%d-w%dms", c.n, c.w.Milliseconds()))
		at += time.Second
		h.At(at)
		h.ConfigureInRange(c.n, c.w)
		if c.n > 50 {
			// N+16 from 16 goroutines: exactly N allowed.
			h.CheckBurst([]string{u}, c.n+16, 16, []contract.RateLimiterContract{h.Instance(0)})
		} else {
			sent := c.n
			if c.w < smallWindow {
				// A denial is not judged where a key may expire in real
				// time: only what a fresh user may send at once (a GCRA
				// of a smaller burst denies the rest).
				sent = min(sent, burst(h))
			}
			for range sent {
				h.Allow(u)
			}
		}
		if c.w >= smallWindow {
			h.Allow(u) // denied: all N count
			gridEdges(h, u, at, c.w)
			h.At(at + c.w - time.Millisecond)
			h.Allow(u) // denied: still all N at s+W-1
		}
		h.At(at + c.w)
		if c.w >= smallWindow || h.Profile().IsSlidingLog() {
			// A log's entries have all left at s+W, so a key expired in
			// real time changes nothing. Other profiles still count them
			// (a counter's previous window, a bucket's refill), in a key
			// Redis may have expired already.
			h.Allow(u) // all N left at s+W: allowed
		}
		if c.w >= smallWindow && h.Target().Capabilities.Remaining {
			h.Remaining(u) // with a short window, the key may have expired for real
		}
		at += c.w
	}
}

// gridEdges sends user u's requests just before and at the first edge
// after at of each grid a fixed window or a weighted counter may lie on:
// the epoch's, [kW, (k+1)W), and Go's, counted from 0001-01-01 UTC as
// time.Time.Truncate makes them. The two are one grid where W divides
// 62,135,596,800,000 ms (a day does); for 30 days, 365 days and
// contract.MaxWindow they are not, and a limiter on one answers otherwise
// than the other's model here. A log denies each: the N entries at at
// count until at+W.
func gridEdges(h *engine.Harness, u string, at, w time.Duration) {
	t, wms := h.Started().Add(at), w.Milliseconds()
	edges := []time.Time{
		time.UnixMilli((t.UnixMilli()/wms + 1) * wms), // t is after 1970
		t.Truncate(w).Add(w),
	}
	slices.SortFunc(edges, time.Time.Compare)
	for i, e := range edges {
		off := e.Sub(h.Started())
		if i > 0 && e.Equal(edges[i-1]) || off-time.Millisecond <= at || off >= at+w-time.Millisecond {
			continue
		}
		h.At(off - time.Millisecond)
		h.Allow(u)
		h.At(off)
		h.Allow(u)
	}
}

// configRangeRealTime sweeps what real time can grade: the whole range of
// N and W for the first N requests and the denial after them, and expiry
// for the real-time window only (a window of 30 days is not waited out).
// A window of 1ms must be taken, though real time cannot grade it.
func configRangeRealTime(h *engine.Harness) {
	day := 24 * time.Hour
	rt := h.Config().RealTimeWindow
	h.ConfigureInRange(1, time.Millisecond)
	for _, c := range []struct {
		n int
		w time.Duration
	}{{1, rt}, {3, rt}, {10_000, 30 * day}, {9, 365 * day}, {2, contract.MaxWindow}} {
		u := h.User(fmt.Sprintf("n%d-w%dms", c.n, c.w.Milliseconds()))
		h.ConfigureInRange(c.n, c.w)
		h.Origin()
		if c.n > 50 {
			h.CheckBurst([]string{u}, c.n+16, 16, []contract.RateLimiterContract{h.Instance(0)})
		} else {
			for range c.n {
				h.Allow(u)
			}
		}
		h.Allow(u) // denied: all N count
		if c.w == rt {
			h.Before(c.w)
			h.Allow(u) // still denied
			h.After(c.w)
			h.Allow(u) // all N left
		}
	}
}
