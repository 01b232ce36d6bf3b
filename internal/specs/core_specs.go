package specs

import (
	"fmt"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/engine"
	"github.com/rlconform/rlconform/result"
)

// coreSpecs are the eight behaviours every limiter must get right.
func coreSpecs() []engine.Spec {
	return []engine.Spec{
		{ID: "core/allow-within-limit", Level: result.Core,
			Rule:    "a user's first N requests in a window are allowed",
			General: "a user's first requests are allowed as the profile allows them",
			Run:     allowWithinLimit,
			Hint:    "a fresh user must get its first N requests; check the comparison (count < N) and the configuration in force"},
		{ID: "core/block-over-limit", Level: result.Core,
			Rule:    "a user gets at most N requests in any window; the rest are denied",
			General: "a user gets no more requests than the profile allows; the rest are denied",
			Run:     blockOverLimit,
			Hint:    "the check must be count < N before adding (count <= N admits N+1), and the count must include every active entry"},
		{ID: "core/sliding-expiry", Level: result.Core,
			Rule:    "an allowed request stops counting exactly W after it was made",
			General: "quota comes back exactly when the profile says (a window's end, a refill), not a millisecond earlier",
			Run:     slidingExpiry,
			Hint:    "an entry must stop counting exactly W after it was logged, on the clock the limiter was given (read now from it, not from the server; mind window units: ms vs s)"},
		{ID: "core/remaining", Level: result.Core, Needs: []engine.Need{engine.NeedRemaining},
			Rule:    "GetRemainingRequests is N less the active entries, never below 0",
			General: "GetRemainingRequests is how many requests the profile would allow now, one after the other",
			Run:     remaining,
			Hint:    "prune expired entries before counting, and report max(0, N - count)"},
		{ID: "core/reset", Level: result.Core, Needs: []engine.Need{engine.NeedUsers, engine.NeedReset},
			Rule:            "Reset(u) gives u a full quota again and touches no other user",
			Run:             reset,
			Hint:            "Reset must delete exactly this user's key: never a pattern (KEYS/SCAN with *), a prefix, or a case-folded id",
			HintAllProfiles: true},
		{ID: "core/concurrent-4", Level: result.Core, Needs: []engine.Need{engine.NeedUsers, engine.NeedConfigure},
			Rule:         "4 goroutines sending 2N requests at one user get exactly N allowed",
			General:      "4 goroutines sending 2N requests at one user get exactly what the profile allows at that instant",
			Run:          concurrent4,
			Hint:         "check and add must be one atomic step (one Lua script or MULTI/EXEC with WATCH), and every request its own ZSET member",
			RealTimeHint: "check and add must be one atomic step (one Lua script or MULTI/EXEC with WATCH), and without clock control \"now\" must come from the store (Redis TIME in the script): processes behind one address that each pass their own clock to the store disagree on which entries count, and let more than N through even when the script is atomic"},
		{ID: "core/reconfigure", Level: result.Core, Needs: []engine.Need{engine.NeedConfigure},
			Rule:         "lowering or raising the limit or the window applies at once to users that have history",
			General:      "lowering or raising the limit or the window applies at once to users that have history, as one of the profile's honest readings of a change says (rlconform list --profile names them)",
			Reconfigures: true,
			Run:          reconfigure,
			Hint:         "every decision must use the limit and the window in force now, also for users who have history: read both at each decision, never cache them per user or ignore the window given"},
		{ID: "core/multi-user", Level: result.Core, Needs: []engine.Need{engine.NeedUsers},
			Rule:            "users are isolated: one user's requests never spend another's quota",
			Run:             multiUser,
			Hint:            "key each user's log by its full, exact id",
			HintAllProfiles: true},
	}
}

// tick moves a fake clock by d; in real time it does nothing (specs that
// only tick, never wait for expiry, run in both modes with a long window).
func tick(h *engine.Harness, d time.Duration) {
	if !h.RealTime() {
		h.FakeClock().Advance(d)
	}
}

func allowWithinLimit(h *engine.Harness) {
	u := h.User("u")
	for range h.N() {
		h.Allow(u)
		tick(h, h.W()/time.Duration(2*h.N()))
	}
}

func blockOverLimit(h *engine.Harness) {
	u := h.User("u")
	for range h.N() {
		h.Allow(u)
	}
	for range h.N() {
		tick(h, h.W()/time.Duration(2*h.N()))
		h.Allow(u)
	}
}

func slidingExpiry(h *engine.Harness) {
	u := h.User("u")
	h.Origin()
	for range h.N() {
		h.Allow(u)
	}
	h.Before(h.W())
	h.Allow(u) // still within the window: denied
	h.After(h.W())
	for range h.N() + 1 { // every entry has left: N allowed again, then denied
		h.Allow(u)
	}
}

func remaining(h *engine.Harness) {
	u := h.User("u")
	h.Origin()
	h.Remaining(u)
	for range h.N() - 1 {
		h.Allow(u)
		h.Remaining(u)
	}
	// The last slot at W/2, so the user's key outlives the first entries
	// (Redis expires keys in real time).
	h.At(h.W() / 2)
	for range 3 { // allowed, then denied twice
		h.Allow(u)
		h.Remaining(u)
	}
	h.After(h.W()) // the first N-1 entries have left, the one at W/2 counts
	h.Remaining(u)
	h.Allow(u)
	h.Remaining(u)
	// Just after the entry at W/2 leaves: half a window from the first
	// query's phase. A query that counts from a truncated start (whole
	// seconds) still counts an entry that left at one phase of the second
	// in two; two phases half a 1 s window apart show it whatever the
	// phase of the run's start (python limits 2.8's moving window).
	h.After(h.W() + h.W()/2)
	h.Remaining(u)
}

func reset(h *engine.Harness) {
	a, ab := h.User("a"), h.User("ab")
	for range h.N() + 1 {
		h.Allow(a)
		h.Allow(ab)
	}
	h.Reset(a)
	for range h.N() + 1 {
		h.Allow(a)
	}
	h.Allow(ab) // still denied: resetting "a" must not touch "ab"
	h.Reset(h.User("never-seen"))
}

func concurrent4(h *engine.Harness) {
	// A larger limit gives a check-then-add race more chances to show.
	h.Configure(25, h.W())
	lim := h.Instance(0)
	// Sixteen rounds, a fresh user each: one round catches a check-then-add
	// race about half the time on two cores, sixteen all but always.
	for i := range 16 {
		u := h.User(fmt.Sprintf("u%d", i+1))
		h.CheckBurst([]string{u}, 2*h.N(), 4, []contract.RateLimiterContract{lim})
	}
}

func reconfigure(h *engine.Harness) {
	u, v := h.User("u"), h.User("v")
	h.Configure(5, h.W())
	for range 3 {
		h.Allow(u)
	}
	h.Allow(v)
	h.Configure(2, h.W()) // u has 3 active: over the new limit
	h.Allow(u)
	h.Allow(v)
	h.Allow(v)
	h.Configure(8, h.W()) // raised: u may make 5 more at once
	for range 6 {
		h.Allow(u)
	}
	h.Allow(v)
	if h.Target().Capabilities.UnitWindows {
		// Changing the window needs a second window the target takes,
		// chosen near W: a protocol's units are 24 to 60 times apart.
		h.Note("changes of the window", fmt.Sprintf("not graded: the target takes only the windows %v", contract.UnitWindowList()))
		return
	}
	reconfigureWindow(h)
	if !h.Profile().IsSlidingLog() {
		reconfigureSettles(h)
	}
}

// reconfigureSettles grades what every honest reading of a change agrees
// on once a user's history from before it no longer matters: the new
// limit and the new window, for that user too. (The readings differ on
// what a change makes of the state it finds; none keeps the old limit or
// window for a user with history, nor ignores a new window.) The log has
// one reading, graded in full above.
func reconfigureSettles(h *engine.Harness) {
	g := h.Granularity()
	short := max(g, (h.W() / 4).Truncate(g))
	long := max(h.W(), 4*short)
	if h.RealTime() {
		// Every wait is real: the shortest windows that tell them apart.
		// The new window's requests come a margin after an edge and two
		// short windows later, and must still fall inside the long one.
		short = max(short, (3*h.Edge()).Truncate(g)+g)
		long = 3 * short
	}
	z := h.User("z")
	at := h.Phase(10 * long)
	h.Configure(2, long)
	h.Allow(z)
	h.Allow(z)            // z has history under 2 per long
	h.Configure(4, short) // raised, and a shorter window
	// Within a few windows of either configuration every reading, and
	// every key kept past its state's lifetime, has forgotten z's
	// history: z is as a fresh user under the new configuration.
	at += 6 * long
	h.At(at)
	if g, ok := h.Profile().Grid(); ok && h.RealTime() {
		// Just after an edge of the long windows on the profile's grid
		// (one of the short ones' too): a limiter that kept the long
		// window is still in it two short windows later.
		h.WaitUntil(g.Floor(time.Now(), long).Add(long + h.Edge()))
		at = time.Since(h.Started())
	}
	for range 5 {
		h.Allow(z) // 4 allowed, then denied: the new limit
	}
	h.At(at + 2*short)
	for range 5 {
		h.Allow(z) // 4 again: windows, or refills, of the new length
	}
}

// reconfigureWindow grades window changes: a lowered window frees entries
// older than it at once; after a raise, entries count for the longer
// window. Both windows are whole multiples of the target's granularity,
// the longer one at least six of the shorter.
func reconfigureWindow(h *engine.Harness) {
	g := h.Granularity()
	short := max(g, (h.W() / 6).Truncate(g))
	w := max(h.W(), 6*short)
	x, y := h.User("x"), h.User("y")
	h.Configure(3, w)
	at := h.Phase(w)
	for range 4 {
		h.Allow(x) // 3 allowed, then denied
	}
	h.At(at + 2*short)
	h.Allow(x)            // denied: all 3 count under W
	h.Configure(3, short) // lowered: the entries are older than it
	for range 4 {
		h.Allow(x) // 3 allowed again, then denied
	}

	// Raised: entries made from now on count for the longer window. (An
	// entry made before a raise may stop counting when its old window ends:
	// its key's TTL was set from that window. Not graded.)
	at = h.Phase(3 * w)
	h.Configure(3, w)
	for range 4 {
		h.Allow(y) // 3 allowed, then denied
	}
	h.At(at + 2*short)
	h.Allow(y) // denied: under the raised window they still count
	h.Before(at + w)
	h.Allow(y) // still denied just before s+W
	h.After(at + w)
	for range 4 {
		h.Allow(y) // all three left at s+W
	}
}

func multiUser(h *engine.Harness) {
	users := []string{h.User("alice"), h.User("bob"), h.User("carol")}
	for range h.N() + 1 {
		for _, u := range users[:2] {
			h.Allow(u)
		}
	}
	for range h.N() + 1 {
		h.Allow(users[2])
	}
}
