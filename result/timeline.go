package result

import "time"

// Timeline is a spec's operations as data, for tools and charts: what was
// sent to which instance for which user, when, what came back and what
// the model expected. The failure's message shows the same timeline as
// text, shortened; this holds up to [MaxTimelineOps] of them.
type Timeline struct {
	// Limit and Window are the configuration in force when the spec ended
	// (each operation carries its own).
	Limit  int
	Window time.Duration
	// Instances is how many instances of the target the spec made.
	Instances int
	// UserTag starts every user id of the spec; Op.User is shown without
	// it.
	UserTag string
	// Total is how many operations the spec recorded; Ops holds at most
	// MaxTimelineOps of them, those around the failing step when there
	// are more.
	Total int
	Ops   []Op
	// ShrunkFrom, when not 0, says that Ops are a schedule shrunk from
	// this many operations to the fewest that still go wrong.
	ShrunkFrom int
}

// MaxTimelineOps bounds the operations a Timeline holds, so that a
// report's size does not grow with a spec's.
const MaxTimelineOps = 1000

// Op is one operation of a timeline (or one line standing for several
// calls sent at once: a concurrent burst, Count calls).
type Op struct {
	// Step is its 1-based place in the spec's timeline: Failure.Step
	// names the one that went wrong.
	Step int
	// At is the instant the limiter saw, from the spec's start; in real
	// time the call was sent At and answered Until.
	At    time.Duration
	Until time.Duration
	// Instance is the instance (0-based) that answered.
	Instance int
	// User is the user operated on, as the message shows it (quoted,
	// without UserTag); empty for an operation on no one user
	// (Configure, a note of what a phase did).
	User string
	// Op is the call, e.g. AllowRequest("u"), Got what came back
	// ("allowed", "denied", "3", "ok", "error"...), Want what the model
	// answers there ("" when the spec did not ask it; "allowed or denied"
	// when honest readings differ).
	Op   string
	Got  string
	Want string
	// Kind is what the call was: allow, remaining, reset, configure, burst
	// (Count concurrent allows), or note.
	Kind OpKind
	// Count is how many calls the operation stands for: 1, or a burst's.
	Count int
	// Undecided: in real time, too close to an edge to judge.
	Undecided bool
	// Unordered: of a concurrent history, an operation that no serial
	// order consistent with the others' answers places (Failure.History).
	Unordered bool
	// Limit and Window are the configuration in force at the operation.
	Limit  int
	Window time.Duration
}

// OpKind is the kind of an operation of a timeline.
type OpKind string

// The kinds of operation.
const (
	OpAllow     OpKind = "allow"
	OpRemaining OpKind = "remaining"
	OpReset     OpKind = "reset"
	OpConfigure OpKind = "configure"
	// OpBurst is Count AllowRequest sent at once from several goroutines;
	// Got counts their answers.
	OpBurst OpKind = "burst"
	// OpNote is what a spec did outside the checked calls.
	OpNote OpKind = "note"
)

// Answer is what an operation's answer was, for charts: allowed, denied,
// an error, or another answer (a count, ok).
type Answer string

// The answers.
const (
	AnswerAllowed Answer = "allowed"
	AnswerDenied  Answer = "denied"
	AnswerError   Answer = "error"
	AnswerOther   Answer = "other"
)

// Answer is what op's Got says.
func (op Op) Answer() Answer {
	switch {
	case op.Got == "allowed":
		return AnswerAllowed
	case op.Got == "denied":
		return AnswerDenied
	case op.Got == "error" || len(op.Got) > 6 && op.Got[:6] == "error:":
		return AnswerError
	}
	return AnswerOther
}
