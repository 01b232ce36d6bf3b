package model

import (
	"fmt"
	"time"
)

// Oracle judges histories whose instants are only known to lie in
// intervals (grading without clock control) against one profile: an
// answer fails only when no admissible choice of instants gives it.
type Oracle interface {
	// Limit and Window are the configuration in force.
	Limit() int
	Window() time.Duration
	// Judge takes the next operation of the history. An operation other
	// than Configure must have an interval (Lo and Hi set): without one it
	// is an error ([ErrNoInterval]), and it is not taken.
	Judge(op TimedOp) (Judgement, string, error)
	// JudgeBurst judges a concurrent burst: sent AllowRequest of user, each
	// decided at some instant of [lo, hi] in some order, of which allowed
	// were allowed. want says how many could be ("exactly 5", "3 to 5",
	// "any number": undecided).
	JudgeBurst(user string, lo, hi time.Time, sent, allowed int) (j Judgement, want string)
	// RetryBounds bounds how long from an instant of [lo, hi] until a
	// request of user would be allowed, over every state the history so far
	// admits: no admissible choice gives less than least or more than most.
	RetryBounds(user string, lo, hi time.Time) (least, most time.Duration)
}

// RetryBounds implements [Oracle]: from the N-th most recent entry's span
// when the user's entries are in order, and at most until every entry has
// left.
func (o *intervalOracle) RetryBounds(user string, lo, hi time.Time) (least, most time.Duration) {
	l, h := o.millis(lo, hi)
	log := o.logs[user]
	if len(log) < o.max {
		return 0, 0
	}
	latest := int64(0)
	for _, e := range log {
		latest = max(latest, e.hi)
	}
	gone := latest + o.window // the first instant no entry counts at
	if o.realTime {
		gone++ // an entry exactly W old may still count
	}
	most = time.Duration(max(0, gone-l)) * time.Millisecond
	if j := o.joints[user]; j != nil && !j.off {
		e := log[len(log)-o.max]
		least = time.Duration(max(0, e.lo+o.window-h)) * time.Millisecond
	}
	return least, most
}

// NewOracle returns the real-time oracle of a profile, for intervals that
// are the grader's sent and returned instants, judged by the real-time
// rule ([Admissible]): an [intervalOracle] for the sliding log, a [searchOracle] for
// the others.
func NewOracle(spec Variant, maxRequests int, window time.Duration) (Oracle, error) {
	if spec.IsSlidingLog() {
		o, err := newInterval(maxRequests, window)
		if err != nil {
			return nil, err
		}
		o.realTime = true
		return o, nil
	}
	s, err := newSearch(spec, maxRequests, window)
	if err != nil {
		return nil, err
	}
	s.realTime = true
	return s, nil
}

// JudgeBurst implements [Oracle]: when the burst took less than the
// window, none of its own entries left during it, so the user got between
// N less the entries possibly active and N less those certainly active; a
// longer burst is undecided. Its allowed entries are logged either way.
func (o *intervalOracle) JudgeBurst(user string, lo, hi time.Time, sent, allowed int) (Judgement, string) {
	defer func() {
		for range allowed {
			o.Log(user, lo, hi)
		}
	}()
	if l, h := o.millis(lo, hi); !MustCount(h-l, o.window) {
		return Undecided, "any number"
	}
	cMin, cMax := o.Count(user, lo, hi)
	least, most := min(sent, max(0, o.max-cMax)), min(sent, max(0, o.max-cMin))
	return judgeSpan(least, most, allowed), spanWord(least, most)
}

// judgeSpan judges a burst's count allowed where least to most could be:
// impossible outside, certain when one number, else undecided.
func judgeSpan(least, most, allowed int) Judgement {
	switch {
	case allowed < least || allowed > most:
		return Impossible
	case least == most:
		return Certain
	}
	return Undecided
}

// spanWord says "exactly n" or "n to m".
func spanWord(lo, hi int) string {
	if lo == hi {
		return fmt.Sprintf("exactly %d", lo)
	}
	return fmt.Sprintf("%d to %d", lo, hi)
}
