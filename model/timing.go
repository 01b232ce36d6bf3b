package model

import (
	"errors"
	"fmt"
	"time"

	"github.com/rlconform/rlconform/contract"
)

// The real-time rule: which instants a limiter may have decided an
// operation at, when the grader only saw when it sent the request and when
// the answer came back. Every real-time oracle (the interval oracles here,
// the suite's linearizability check, bench's exactness check) takes its
// intervals from this rule, and from nowhere else.
//
// The limiter decides at one instant x between sent and returned, on the
// grader's real clock. It reads its own clock there: x + o, with |o| <
// [ClockOffset] (its clock and the grader's are a fraction of a
// millisecond apart: one machine, or hosts kept close by PTP), truncated to
// its resolution, at most [ClockResolution] (a millisecond clock, Redis
// TIME in microseconds, a float of seconds). The instant it then acts on,
// as a real number on the grader's clock, lies in
//
//	[sent − ClockOffset − ClockResolution, returned + ClockOffset]
//
// and it counts an entry at s as active at t exactly when t − s < W. A
// limiter deciding in whole milliseconds is that rule with instants that
// happen to be whole; one deciding in microseconds is too. An oracle that
// works in real (nanosecond) instants, as bench's does, judges with those
// bounds and that comparison, and is sound for both.
//
// An oracle that works in whole milliseconds (the interval and search
// oracles, porcupine's model) takes the floor of each instant: it lies in
// the floors of the bounds ([AdmissibleMillis]), and the floored age of an
// entry that counted is at most W (a true age of 999.7 ms at W = 1 s can
// floor to 1000), and of one that did not, at least W. So in whole
// milliseconds, an entry exactly W old may count or not ([MayCount],
// [MustCount]); any other age decides as the contract says. With clock
// control (the fake clock), instants are exact and none of this applies.
const (
	// ClockOffset bounds how far the limiter's clock may be from the
	// grader's.
	ClockOffset = time.Millisecond
	// ClockResolution bounds the step of the limiter's clock: the instant
	// it reads may be up to this much before the true one.
	ClockResolution = time.Millisecond
)

// Admissible returns the earliest and latest instant a limiter may have
// decided at, for an operation the grader sent at sent and saw answered at
// returned (offsets on one monotonic clock, or unix nanoseconds).
func Admissible(sent, returned time.Duration) (lo, hi time.Duration) {
	if returned < sent {
		sent, returned = returned, sent
	}
	return sent - ClockOffset - ClockResolution, returned + ClockOffset
}

// AdmissibleMillis is [Admissible] in whole unix milliseconds (floored),
// for the oracles that work in them.
func AdmissibleMillis(sent, returned time.Time) (lo, hi int64) {
	l, h := Admissible(time.Duration(sent.UnixNano()), time.Duration(returned.UnixNano()))
	return floorMillis(l), floorMillis(h)
}

// spanMillis is the span of whole milliseconds an interval stands for: by
// the real-time rule when the interval is the grader's sent and returned
// instants (realTime), else the limiter's own instants, exactly.
func spanMillis(lo, hi time.Time, realTime bool) (int64, int64) {
	if realTime {
		return AdmissibleMillis(lo, hi)
	}
	l, h := lo.UnixMilli(), hi.UnixMilli()
	if h < l {
		l, h = h, l
	}
	return l, h
}

func floorMillis(d time.Duration) int64 {
	ms := int64(d / time.Millisecond)
	if d < 0 && d%time.Millisecond != 0 {
		ms--
	}
	return ms
}

// MayCount reports whether an entry whose age is age ms at an instant may
// count there, under a window of w ms: in whole milliseconds of real time
// (realTime), an entry exactly w old may still count.
func MayCount(age, w int64, realTime bool) bool {
	if realTime {
		return age <= w
	}
	return age < w
}

// MustCount reports whether an entry whose age is age ms must count.
func MustCount(age, w int64) bool { return age < w }

// ErrNoInterval is returned by the oracles for an operation that needs an
// interval and has none (a zero Lo or Hi).
var ErrNoInterval = errors.New("model: the operation has no interval (Lo and Hi must both be set)")

// validate checks that op can be judged: an answer needs the interval it
// was given in, and a cost is not negative ([contract.ErrInvalidCost]).
func (op TimedOp) validate() error {
	switch op.Kind {
	case OpConfigure:
		return nil
	case OpAllow, OpRemaining, OpReset:
		if op.Lo.IsZero() || op.Hi.IsZero() {
			return fmt.Errorf("%w: %s of %q", ErrNoInterval, op.Kind, op.User)
		}
		if err := contract.ValidateCost(op.Cost); err != nil {
			return fmt.Errorf("model: %s of %q: %w", op.Kind, op.User, err)
		}
		if op.Free && (op.Kind != OpAllow || op.Cost != 0) {
			return fmt.Errorf("model: %s of %q: only an AllowRequest of cost 0 is free", op.Kind, op.User)
		}
		return nil
	case OpBurst, OpAdvance:
		return fmt.Errorf("model: %s is not an operation an oracle judges", op.Kind)
	}
	return fmt.Errorf("model: unknown operation kind %d", op.Kind)
}

// cost is the cost of op, an OpAllow: Cost, 0 meaning 1.
func (op TimedOp) cost() int {
	if op.Cost == 0 {
		return 1
	}
	return op.Cost
}

// String names the operation as the contract does (a burst and a clock
// step as the traces say them).
func (k OpKind) String() string {
	switch k {
	case OpAllow:
		return "AllowRequest"
	case OpRemaining:
		return "GetRemainingRequests"
	case OpReset:
		return "Reset"
	case OpConfigure:
		return "Configure"
	case OpBurst:
		return "burst"
	case OpAdvance:
		return "advance"
	}
	return fmt.Sprintf("OpKind(%d)", int(k))
}
