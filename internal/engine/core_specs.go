package engine

import (
	"fmt"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/result"
)

// coreSpecs are the eight behaviours every limiter must get right.
func coreSpecs() []spec {
	return []spec{
		{id: "core/allow-within-limit", level: result.Core,
			rule:    "a user's first N requests in a window are allowed",
			general: "a user's first requests are allowed as the profile allows them",
			run:     allowWithinLimit,
			hint:    "a fresh user must get its first N requests; check the comparison (count < N) and the configuration in force"},
		{id: "core/block-over-limit", level: result.Core,
			rule:    "a user gets at most N requests in any window; the rest are denied",
			general: "a user gets no more requests than the profile allows; the rest are denied",
			run:     blockOverLimit,
			hint:    "the check must be count < N before adding (count <= N admits N+1), and the count must include every active entry"},
		{id: "core/sliding-expiry", level: result.Core,
			rule:    "an allowed request stops counting exactly W after it was made",
			general: "quota comes back exactly when the profile says (a window's end, a refill), not a millisecond earlier",
			run:     slidingExpiry,
			hint:    "an entry must stop counting exactly W after it was logged, on the clock the limiter was given (read now from it, not from the server; mind window units: ms vs s)"},
		{id: "core/remaining", level: result.Core, needs: []need{needRemaining},
			rule:    "GetRemainingRequests is N less the active entries, never below 0",
			general: "GetRemainingRequests is how many requests the profile would allow now, one after the other",
			run:     remaining,
			hint:    "prune expired entries before counting, and report max(0, N - count)"},
		{id: "core/reset", level: result.Core, needs: []need{needUsers, needReset},
			rule:            "Reset(u) gives u a full quota again and touches no other user",
			run:             reset,
			hint:            "Reset must delete exactly this user's key: never a pattern (KEYS/SCAN with *), a prefix, or a case-folded id",
			hintAllProfiles: true},
		{id: "core/concurrent-4", level: result.Core, needs: []need{needUsers, needConfigure},
			rule:         "4 goroutines sending 2N requests at one user get exactly N allowed",
			general:      "4 goroutines sending 2N requests at one user get exactly what the profile allows at that instant",
			run:          concurrent4,
			hint:         "check and add must be one atomic step (one Lua script or MULTI/EXEC with WATCH), and every request its own ZSET member",
			realTimeHint: "check and add must be one atomic step (one Lua script or MULTI/EXEC with WATCH), and without clock control \"now\" must come from the store (Redis TIME in the script): processes behind one address that each pass their own clock to the store disagree on which entries count, and let more than N through even when the script is atomic"},
		{id: "core/reconfigure", level: result.Core, needs: []need{needConfigure},
			rule:    "lowering or raising the limit or the window applies at once to users that have history",
			logOnly: "it changes the window under users with history, and what a new window means for a stored counter, bucket or arrival time differs between honest implementations (a changed limit is graded by strict/lowered-limit and strict/raised-limit)",
			run:     reconfigure,
			hint:    "every decision must use the limit and the window in force now, also for users who have history: read both at each decision, never cache them per user or ignore the window given"},
		{id: "core/multi-user", level: result.Core, needs: []need{needUsers},
			rule:            "users are isolated: one user's requests never spend another's quota",
			run:             multiUser,
			hint:            "key each user's log by its full, exact id",
			hintAllProfiles: true},
	}
}

// tick moves a fake clock by d; in real time it does nothing (specs that
// only tick, never wait for expiry, run in both modes with a long window).
func (h *harness) tick(d time.Duration) {
	if h.fake != nil {
		h.fake.Advance(d)
	}
}

func allowWithinLimit(h *harness) {
	u := h.User("u")
	for range h.N() {
		h.Allow(u)
		h.tick(h.W() / time.Duration(2*h.N()))
	}
}

func blockOverLimit(h *harness) {
	u := h.User("u")
	for range h.N() {
		h.Allow(u)
	}
	for range h.N() {
		h.tick(h.W() / time.Duration(2*h.N()))
		h.Allow(u)
	}
}

func slidingExpiry(h *harness) {
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

func remaining(h *harness) {
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
}

func reset(h *harness) {
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

func concurrent4(h *harness) {
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

func reconfigure(h *harness) {
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
	reconfigureWindow(h)
}

// reconfigureWindow grades window changes: a lowered window frees entries
// older than it at once; after a raise, entries count for the longer
// window.
func reconfigureWindow(h *harness) {
	w, short := h.W(), h.W()/6
	x, y := h.User("x"), h.User("y")
	h.Configure(3, w)
	at := h.phase(w)
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
	at = h.phase(3 * w)
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

func multiUser(h *harness) {
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
