package model

import (
	"fmt"
	"time"

	"github.com/rlconform/rlconform/contract"
)

// Judgement is what the interval oracle can say of one answer.
type Judgement int

const (
	// Certain: every admissible choice of instants gives this answer.
	Certain Judgement = iota
	// Undecided: some admissible choice of instants gives this answer and
	// some does not; the answer is not a failure.
	Undecided
	// Impossible: no admissible choice of instants gives this answer.
	Impossible
)

func (j Judgement) String() string {
	switch j {
	case Certain:
		return "certain"
	case Undecided:
		return "undecided"
	}
	return "impossible"
}

// OpKind is the operation of a timed step.
type OpKind int

// The operations.
const (
	OpAllow OpKind = iota
	OpRemaining
	OpReset
	OpConfigure
	// OpBurst (a concurrent burst of AllowRequest calls) and OpAdvance
	// (the clock moving on) appear in the grader's traces and schedules,
	// never in an operation an oracle judges.
	OpBurst
	OpAdvance
)

// TimedOp is one operation of a history whose instants are only known to
// lie in an interval: without clock control, the limiter decided at some
// instant between the grader sending the request (Lo) and receiving the
// answer (Hi), widened by whatever the grader cannot see (clock skew).
type TimedOp struct {
	Kind   OpKind
	User   string
	Lo, Hi time.Time
	// Allowed is the answer of OpAllow; Remaining the answer of OpRemaining.
	Allowed   bool
	Remaining int
	// Cost is the cost of OpAllow ([contract.CostLimiter]); 0 means 1 (a
	// request of cost 0 consumes nothing and is never judged).
	Cost int
	// Free marks an OpAllow of cost 0 (Cost must then be 0): its answer is
	// not judged, and it counts nothing. Where a request opens a window
	// ([Variant.FreeMayWrite]) it may or may not have saved the user's
	// state as a query that writes does, and the oracle follows both:
	// rate-limiter-flexible's consume(0) opens a window (SET NX with the
	// window's TTL, then INCRBY 0), another limiter's does nothing.
	Free bool
	// Limit and Window are the arguments of OpConfigure.
	Limit  int
	Window time.Duration
}

// intervalOracle judges histories whose instants are intervals against the
// contract. Operations are fed in the order the limiter decided them (one
// client's calls, one after the other), and the limiter's instants are
// taken to be non-decreasing in that order (one clock).
//
// An answer is Impossible when no one choice of instants, for the user's
// whole history so far, gives every answer (a system of difference
// constraints, solved exactly: see joint), so a correct limiter is never
// failed, and answers that are each possible alone but not together are
// caught. An answer is Certain when its opposite is impossible. When every
// interval is a point, it agrees with [slidingLog] answer for answer. An
// allow of cost n ([TimedOp.Cost]) is judged the same way: allowed when
// active + n <= N, and then n entries at its one instant (its node in the
// joint, n times among the allowed entries). Entries
// logged by a concurrent burst (Log) have no order among them: that user's
// answers are then judged each on its own, every earlier entry anywhere in
// its interval (sound, less complete).
//
// Raising the window is judged only where the contract promises it (no
// entry between the old and the new window's edge).
type intervalOracle struct {
	max    int
	window int64 // ms
	logs   map[string][]span
	joints map[string]*joint
	// realTime: intervals are the grader's sent and returned instants,
	// judged by the real-time rule ([AdmissibleMillis], [MayCount]);
	// otherwise they are the limiter's own instants, exactly.
	realTime bool
}

// span is an entry whose instant lies in [lo, hi], in ms.
type span struct{ lo, hi int64 }

// newInterval returns an empty interval oracle with a configuration, for
// intervals that bound the limiter's own instants exactly (whole
// milliseconds of its clock). [NewOracle] returns one for the grader's
// sent and returned instants, under the real-time rule.
func newInterval(maxRequests int, window time.Duration) (*intervalOracle, error) {
	if err := contract.ValidateConfig(maxRequests, window); err != nil {
		return nil, err
	}
	return &intervalOracle{max: maxRequests, window: window.Milliseconds(), logs: map[string][]span{}, joints: map[string]*joint{}}, nil
}

// millis is the span of whole milliseconds an interval stands for.
func (o *intervalOracle) millis(lo, hi time.Time) (int64, int64) {
	return spanMillis(lo, hi, o.realTime)
}

// Limit is the limit in force; Window the window.
func (o *intervalOracle) Limit() int { return o.max }

// Window is the window in force.
func (o *intervalOracle) Window() time.Duration { return time.Duration(o.window) * time.Millisecond }

// Judge takes the next operation of the history and says whether its
// answer is certain, undecided or impossible, with the reason. An allowed
// answer is logged whatever the judgement, so that the rest of the history
// is judged on what the limiter did. An operation other than Configure
// without an interval is an error ([ErrNoInterval]), and is not taken.
func (o *intervalOracle) Judge(op TimedOp) (Judgement, string, error) {
	if err := op.validate(); err != nil {
		return Undecided, "", err
	}
	if op.Kind == OpConfigure {
		j, why := o.judgeAlone(op, 0, 0)
		return j, why, nil
	}
	if op.Free {
		// The sliding log has no window to open: a request that counts
		// nothing leaves no entry, and its answer is not judged.
		return Undecided, "", nil
	}
	lo, hi := o.millis(op.Lo, op.Hi)
	j := o.joints[op.User]
	if j == nil {
		j = &joint{}
		o.joints[op.User] = j
	}
	alone, why := o.judgeAlone(op, lo, hi)
	if j.off {
		if op.Kind == OpReset {
			j.reset()
		}
		return alone, why, nil
	}
	n := j.add(lo, hi)
	if op.Kind == OpReset {
		j.allowed = nil
		return alone, why, nil
	}
	cons, ok := j.answer(n, op, o.max, o.window, o.realTime)
	switch {
	case alone == Impossible:
		j.off = true
		return alone, why, nil
	case !ok || !j.feasible(cons):
		j.off = true
		return Impossible, "no one choice of instants for this user's whole history gives these answers (each may be possible alone)", nil
	}
	judged := alone
	if alone == Undecided && op.Kind == OpAllow {
		flipped := op
		flipped.Allowed = !op.Allowed
		if other, ok := j.answer(n, flipped, o.max, o.window, o.realTime); !ok || !j.feasible(other) {
			judged = Certain // the opposite answer fits no instants
		}
	}
	j.edges = append(j.edges, cons...)
	if op.Kind == OpAllow && op.Allowed {
		for range op.cost() { // n entries at one instant: node n, n times
			j.allowed = append(j.allowed, n)
		}
	}
	j.settle(o.window, o.max, o.realTime)
	return judged, why, nil
}

// judgeAlone judges op on its own: every earlier entry anywhere in its
// interval. It keeps the spans of entries for Count.
func (o *intervalOracle) judgeAlone(op TimedOp, lo, hi int64) (Judgement, string) {
	switch op.Kind {
	case OpReset:
		delete(o.logs, op.User)
		return Certain, ""
	case OpConfigure:
		if err := contract.ValidateConfig(op.Limit, op.Window); err == nil {
			o.max, o.window = op.Limit, op.Window.Milliseconds()
		}
		return Certain, ""
	}
	cMin, cMax := o.count(op.User, lo, hi)
	switch op.Kind {
	case OpAllow:
		return o.judgeAllow(op, lo, hi, cMin, cMax)
	default: // OpRemaining
		want := func(c int) int { return max(0, o.max-c) }
		switch {
		case op.Remaining < want(cMax) || op.Remaining > want(cMin):
			if cMin == cMax {
				return Impossible, fmt.Sprintf("%d entries count, so remaining is %d", cMin, want(cMin))
			}
			return Impossible, fmt.Sprintf("between %d and %d entries count, so remaining is %d to %d", cMin, cMax, want(cMax), want(cMin))
		case cMin == cMax:
			return Certain, ""
		}
		return Undecided, ""
	}
}

// judgeAllow judges an allow of cost c on its own, between cMin and cMax
// entries counting: allowed is possible when cMin + c <= N, denied when
// cMax + c > N. Allowed, it logs c entries in [lo, hi].
func (o *intervalOracle) judgeAllow(op TimedOp, lo, hi int64, cMin, cMax int) (Judgement, string) {
	c := op.cost()
	of := ""
	if c != 1 {
		of = fmt.Sprintf(" a request of cost %d", c)
	}
	if op.Allowed {
		var j Judgement
		var why string
		switch {
		case c > o.max-cMin:
			j, why = Impossible, fmt.Sprintf("allowed%s, but at least %d entries count at any instant in the call's interval (limit %d)", of, cMin, o.max)
		case c <= o.max-cMax:
			j = Certain
		default:
			j = Undecided
		}
		for range c {
			o.logs[op.User] = append(o.logs[op.User], span{lo, hi})
		}
		return j, why
	}
	switch {
	case c <= o.max-cMax:
		return Impossible, fmt.Sprintf("denied%s, but at most %d entries count at any instant in the call's interval (limit %d)", of, cMax, o.max)
	case c > o.max-cMin:
		return Certain, ""
	}
	return Undecided, ""
}

// count bounds how many of user's entries are active at an instant t in
// [lo, hi] (each entry anywhere in its own span, no later than t): cMin
// count at every choice, cMax at some. Entries that can no longer count at
// any later instant are forgotten.
func (o *intervalOracle) count(user string, lo, hi int64) (cMin, cMax int) {
	log := o.logs[user]
	kept := log[:0]
	for _, e := range log {
		// Latest possible entry instant, no later than t: min(e.hi, hi).
		if !MayCount(lo-min(e.hi, hi), o.window, o.realTime) {
			continue // gone at every t >= lo, hence for every later operation
		}
		kept = append(kept, e)
		cMax++
		if MustCount(hi-e.lo, o.window) { // active even at the latest t and earliest entry instant
			cMin++
		}
	}
	if len(kept) == 0 {
		delete(o.logs, user)
	} else {
		o.logs[user] = kept
	}
	return cMin, cMax
}

// Count bounds how many of user's entries count during [lo, hi]: at least
// cMin at every instant of it, at most cMax at any.
func (o *intervalOracle) Count(user string, lo, hi time.Time) (cMin, cMax int) {
	l, h := o.millis(lo, hi)
	return o.count(user, l, h)
}

// Log adds an entry of user whose instant lies in [lo, hi] (an allowed
// request of a concurrent burst), without judging it.
func (o *intervalOracle) Log(user string, lo, hi time.Time) {
	l, h := o.millis(lo, hi)
	o.logs[user] = append(o.logs[user], span{l, h})
	if o.joints[user] == nil {
		o.joints[user] = &joint{}
	}
	o.joints[user].off = true // entries of a burst have no order
}
