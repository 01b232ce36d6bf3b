package engine

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/result"
)

// What a spec body reads of its run, and how it records what the checking
// methods (Allow, Remaining, Reset, Configure, CheckBurst, JudgeRealTime)
// do not record for it. A spec never writes the harness's state itself:
// every count, trace and failure goes through these methods.

// Context is the spec's context: every call to the target takes it, and it
// ends when the spec's time runs out or the run is stopped.
func (h *Harness) Context() context.Context { return h.ctx }

// SpecID is the id of the spec being run.
func (h *Harness) SpecID() string { return h.spec.ID }

// Target is the target graded (a copy: what it declares, how it is reached).
func (h *Harness) Target() Target { return h.target }

// Env is what the target's factory was given for this spec.
func (h *Harness) Env() Env { return h.env }

// RealTime reports whether the spec runs on the real clock (the target has
// no clock control): instants are then intervals, judged by Oracle.
func (h *Harness) RealTime() bool { return h.fake == nil }

// Started is the instant the spec's offsets count from (At, Before, After,
// the timeline).
func (h *Harness) Started() time.Time { return h.start }

// SetStart makes t the instant the spec's offsets count from (a phase of
// its own, say); in real time Origin makes it now.
func (h *Harness) SetStart(t time.Time) { h.start = t }

// Model is the profile the answers are checked against, on the fake clock
// (a spec asks it what should happen; the checking methods keep it in
// step with the target).
func (h *Harness) Model() Model { return h.model() }

// Oracle judges answers in real time, where instants are intervals (nil on
// the fake clock).
func (h *Harness) Oracle() model.Oracle { return h.oracle }

// Rand is the spec's source of randomness, from the run's seed and the
// spec's id: a run with the same seed draws the same.
func (h *Harness) Rand() *rand.Rand { return h.rng }

// Seed is the run's seed.
func (h *Harness) Seed() uint64 { return h.seed }

// Tag starts every user id the spec makes (User).
func (h *Harness) Tag() string { return h.tag }

// CountDecided counts n answers the spec judged and could decide (a spec
// that judges answers itself; the checking methods count theirs).
func (h *Harness) CountDecided(n int) { h.decided += n }

// CountUndecided counts n answers the spec judged and could not decide (in
// real time, too close to an edge): never a failure, and a spec that
// decides nothing is inconclusive.
func (h *Harness) CountUndecided(n int) { h.undecided += n }

// Counts are the answers judged so far, decided and undecided.
func (h *Harness) Counts() (decided, undecided int) { return h.decided, h.undecided }

// AddTrace adds an operation the spec checked itself to the trace the
// diagnosis replays on every profile.
func (h *Harness) AddTrace(op TraceOp) { h.trace = append(h.trace, op) }

// SetTrace replaces the trace with ops (a spec that replays a schedule of
// its own keeps the one it reports).
func (h *Harness) SetTrace(ops ...TraceOp) { h.trace = ops }

// AddEvent adds a line to the timeline a failure shows.
func (h *Harness) AddEvent(e Event) { h.record(e) }

// ResetTimeline empties the timeline (a spec that reports a replay of its
// own, not what led to it).
func (h *Harness) ResetTimeline() { h.timeline = Timeline{}; h.shrunkFrom = 0 }

// ShrunkFrom says that the timeline is a schedule shrunk from n
// operations to the fewest that still go wrong (the report shows it).
func (h *Harness) ShrunkFrom(n int) { h.shrunkFrom = n }

// SetHistory keeps the operations of a concurrent history that no serial
// order explains, those that cannot be ordered marked, for the report's
// chart of the failure (result.Failure.History).
func (h *Harness) SetHistory(ops []result.Op) {
	if len(ops) == 0 {
		h.history = nil
		return
	}
	total := len(ops)
	ops = ops[:min(total, result.MaxTimelineOps)]
	h.history = &result.Timeline{Limit: h.N(), Window: h.W(), Instances: h.InstanceCount(), UserTag: h.tag, Total: total, Ops: ops}
}

// HasPending reports whether a wrong answer was found: the spec fails when
// it ends, whatever follows.
func (h *Harness) HasPending() bool { return h.pending != nil }

// FailIfPending ends the spec now when a wrong answer was found.
func (h *Harness) FailIfPending() {
	if h.pending != nil {
		panic(*h.pending)
	}
}

// DropPending forgets a wrong answer found so far, for a spec whose own
// finding replaces it (a broken promise of an HTTP field, say).
func (h *Harness) DropPending() { h.pending = nil }

// SetDivergence keeps f as the evidence of the spec's last divergence from
// the model (the differential's), for the diagnosis.
func (h *Harness) SetDivergence(f result.Failure) { h.lastDivergence = f }

// Divergence is the evidence SetDivergence kept.
func (h *Harness) Divergence() result.Failure { return h.lastDivergence }

// PassWith is what the result of the spec says when it passes.
func (h *Harness) PassWith(note string) { h.passNote = note }
