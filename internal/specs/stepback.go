package specs

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rlconform/rlconform/internal/engine"
	"github.com/rlconform/rlconform/model"
)

// clockStepBack steps the clock back and forth. Entries later than now
// stay in the log, and count again once time reaches them; until then,
// whether they count is the limiter's choice. Each answer is judged
// against both readings: the literal one (they do not count: ZCOUNT up to
// now) and the conservative one (they do: ZCARD after the prune). An
// answer fails only when neither gives it: an admission past the literal
// reading, a refusal past the conservative one.
func clockStepBack(h *engine.Harness) {
	log, ok := h.Model().(engine.SlidingLogModel)
	if !ok {
		panic(fmt.Sprintf("rlconform: spec %s grades the sliding log only, not %s (a bug of the catalogue)", h.SpecID(), h.Model().Describe()))
	}
	u := h.User("u")
	h.At(10 * time.Second)
	allowEitherReading(h, log, u) // one entry at +10s
	h.At(5 * time.Second)
	for range h.N() + 1 {
		// Literally the entry at +10s does not count at +5s: N allowed,
		// then denied. Conservatively it does: N-1. Either is honest.
		allowEitherReading(h, log, u)
	}
	if h.Target().Capabilities.Remaining {
		remainingEitherReading(h, log, u)
	}
	h.At(10 * time.Second)
	allowEitherReading(h, log, u) // denied: every entry counts at +10s, in both readings
	h.At(5*time.Second + h.W())
	for range h.N() {
		// The entries at +5s left; the one at +10s still counts: N-1
		// allowed, in both readings. A limiter that lost the entry at
		// +10s admits N; one that logged the requests at +5s as later
		// instants refuses them.
		allowEitherReading(h, log, u)
	}
}

// readings says what both readings count for user at now, for a failure.
func readings(h *engine.Harness, log engine.SlidingLogModel, now time.Time, user string) string {
	lit := strings.ReplaceAll(log.Explain(now, h.Started(), user), user, h.Short(user))
	later := log.Unexpired(now, user) - log.Active(now, user)
	return fmt.Sprintf("%s; %d entr%s later than now, which the conservative reading (ZCARD) counts too",
		lit, later, map[bool]string{true: "y", false: "ies"}[later == 1])
}

// allowEitherReading sends AllowRequest(user) to instance 0 at the
// current instant and fails the spec unless one reading of the entries
// later than now gives its answer. An allowed request is logged at now.
func allowEitherReading(h *engine.Harness, log engine.SlidingLogModel, user string) {
	lim := h.Instance(0)
	now := h.Now()
	op := "AllowRequest(" + h.Short(user) + ")"
	literal, conservative := log.Active(now, user), log.Unexpired(now, user)
	explain := readings(h, log, now, user)
	ok, err := lim.AllowRequest(h.Context(), user)
	if err != nil {
		h.Record(0, now, op, "error")
		h.FailStep(0, now, op, "", "an answer", "", err)
	}
	got := engine.AllowedWord(ok)
	h.Record(0, now, op, got)
	h.AddTrace(engine.TraceOp{At: now, Kind: model.OpAllow, User: user, Got: got})
	switch {
	case ok && literal >= h.N():
		h.FailStep(0, now, op, got, "denied", "both readings deny: "+explain, nil)
	case !ok && conservative < h.N():
		h.FailStep(0, now, op, got, "allowed", "both readings allow: "+explain, nil)
	}
	h.CountDecided(1)
	if ok {
		log.Allow(now, user)
	}
}

// remainingEitherReading sends GetRemainingRequests(user) to instance 0
// and fails the spec unless one reading gives its answer.
func remainingEitherReading(h *engine.Harness, log engine.SlidingLogModel, user string) {
	lim := h.Instance(0)
	now := h.Now()
	op := "GetRemainingRequests(" + h.Short(user) + ")"
	literal := max(0, h.N()-log.Active(now, user))
	conservative := max(0, h.N()-log.Unexpired(now, user))
	explain := readings(h, log, now, user)
	n, err := lim.GetRemainingRequests(h.Context(), user)
	if err != nil {
		h.Record(0, now, op, "error")
		h.FailStep(0, now, op, "", "an answer", "", err)
	}
	got := strconv.Itoa(n)
	h.Record(0, now, op, got)
	h.AddTrace(engine.TraceOp{At: now, Kind: model.OpRemaining, User: user, Got: got})
	if n != literal && n != conservative {
		want := strconv.Itoa(literal)
		if conservative != literal {
			want = fmt.Sprintf("%d (literally) or %d (conservatively)", literal, conservative)
		}
		h.FailStep(0, now, op, got, want, explain, nil)
	}
	h.CountDecided(1)
}
