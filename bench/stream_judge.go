package bench

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// judgeUser judges u's calls that ended before cut and were not judged
// yet (its new calls), with the others kept as their context: first the
// part held, if any, for good (its wait is over, memory is pressed, or
// the log ended), then the rest.
func (s *Stream) judgeUser(u *streamUser, cut time.Duration) {
	if u.holdUntil != 0 {
		held := u.holdCut
		u.holdUntil, u.holdCut = 0, 0
		s.judgePart(u, held, true)
		if cut <= held {
			return
		}
	}
	s.judgePart(u, cut, s.finishing)
}

// judgePart judges u's new calls that ended before cut. Unless final, a
// part in which a denial looks unexplained while the log has been read
// less than the hold past it is held instead: its calls stay new, to be
// judged again, for good, with the calls read by then.
func (s *Stream) judgePart(u *streamUser, cut time.Duration, final bool) {
	s.sortCalls(u)
	d := s.opts.ClockSkew
	s.buf, s.judged = s.buf[:0], s.judged[:0]
	news, denials, allowed, unjudged := 0, 0, 0, int64(0)
	deniedUntil := time.Duration(math.MinInt64)
	for i := range u.calls {
		c := u.calls[i].d
		isNew := c.User == 0 && c.Returned < cut
		c.User = 0
		c.Sent, c.Returned = c.Sent-d, c.Returned+d
		if isNew && c.Outcome == Denied {
			if s.reachesPast(u, c) {
				c.Outcome = Other // possibly counted, never judged
				unjudged++
			} else {
				denials++
				deniedUntil = max(deniedUntil, latest(c))
			}
		}
		if isNew {
			news++
			u.calls[i].d.User = 1
		}
		if c.Outcome == Allowed {
			allowed++
		}
		s.buf, s.judged = append(s.buf, c), append(s.judged, isNew)
	}
	if news == 0 || (denials == 0 && allowed <= s.floor) {
		s.res.Unjudged += unjudged
		return
	}
	end := s.latest + d
	ex := s.rules.check(s.buf, end, scope{judged: s.judged, carry: u.carry, k: &s.k})
	if !final && ex.UnderAdmitted > 0 && s.hold > 0 && s.latest < deniedUntil+s.hold && !s.pressed() {
		for i, isNew := range s.judged {
			if isNew {
				u.calls[i].d.User = 0
			}
		}
		u.holdUntil, u.holdCut = deniedUntil+s.hold, cut
		s.res.Held++
		return
	}
	s.res.Unjudged += unjudged
	s.merge(u, ex)
	if ex.UnderAdmitted > 0 {
		u.underUntil = max(u.underUntil, deniedUntil)
	}
	s.searchSkew(u, ex.Exact(), end)
}

// reachesPast reports whether the denial c (widened) needs calls u let
// go: calls within its lookback, or for a bucket, calls that ended after
// it began.
func (s *Stream) reachesPast(u *streamUser, c Decision) bool {
	if u.keptFrom == math.MinInt64 {
		return false
	}
	if s.rules.under.bucket {
		return earliest(c) <= u.keptFrom
	}
	return earliest(c)-time.Duration(s.rules.under.lookback) <= u.keptFrom
}

// sortCalls puts u's calls in the order sent: the ones added since the
// last sort are sorted, then merged in.
func (s *Stream) sortCalls(u *streamUser) {
	bySent := func(a, b streamEntry) int { return cmp.Compare(a.d.Sent, b.d.Sent) }
	calls, k := u.calls, u.sorted
	u.sorted = len(calls)
	if k == len(calls) {
		return
	}
	slices.SortStableFunc(calls[k:], bySent)
	if k == 0 || calls[k-1].d.Sent <= calls[k].d.Sent {
		return
	}
	merged := make([]streamEntry, 0, len(calls))
	a, b := calls[:k], calls[k:]
	for len(a) > 0 && len(b) > 0 {
		if b[0].d.Sent < a[0].d.Sent {
			merged, b = append(merged, b[0]), b[1:]
		} else {
			merged, a = append(merged, a[0]), a[1:]
		}
	}
	merged = append(append(merged, a...), b...)
	copy(calls, merged)
}

// merge adds what a part of u's calls showed to the result.
func (s *Stream) merge(u *streamUser, ex Exactness) {
	g := &s.res.Exactness
	g.Overshoot += ex.Overshoot
	g.UnderAdmitted += ex.UnderAdmitted
	g.Denials += ex.Denials
	g.Decided += ex.Decided
	d := s.opts.ClockSkew
	if w := ex.Worst; w != nil && worse(w.Allowed, w.Bound, g.Worst) {
		w.UserID = u.key
		w.From, w.To = w.From+d, w.To-d
		narrow(w.Calls, d)
		g.Worst = w
		s.res.WorstRefs = u.refs(w.Calls)
	}
	if un := ex.WorstUnder; un != nil && (g.WorstUnder == nil || un.Counted < g.WorstUnder.Counted) {
		un.UserID = u.key
		narrow(un.Nearby, d)
		un.Call.Sent, un.Call.Returned = un.Call.Sent+d, un.Call.Returned-d
		g.WorstUnder = un
		s.res.UnderRefs = u.refs(append(slices.Clone(un.Nearby), un.Call))
	}
}

// refs are the Refs of calls (as u holds them), each call matched to one
// of u's by its instants and outcome (or, for a denial judged as another
// answer, its instants alone), the earliest not yet matched. u's calls
// are indexed by their instants once: a worst window of a limiter that
// lets everything through holds every call, and a scan per call was
// quadratic.
func (u *streamUser) refs(calls []Decision) []uint64 {
	type instants struct{ sent, returned time.Duration }
	byInstants := map[instants][]int{}
	for j, e := range u.calls {
		k := instants{e.d.Sent, e.d.Returned}
		byInstants[k] = append(byInstants[k], j)
	}
	used := make([]bool, len(u.calls))
	find := func(c Decision, sameOutcome bool) int {
		for _, j := range byInstants[instants{c.Sent, c.Returned}] {
			if !used[j] && (!sameOutcome || u.calls[j].d.Outcome == c.Outcome) {
				return j
			}
		}
		return -1
	}
	out := make([]uint64, len(calls))
	for i, c := range calls {
		j := find(c, true)
		if j < 0 {
			j = find(c, false)
		}
		if j >= 0 {
			used[j], out[i] = true, u.calls[j].ref
		}
	}
	return out
}

// letGo lets go u's judged calls that no later part can need: those that
// ended by limit (a context before its first call not judged).
func (s *Stream) letGo(u *streamUser, limit time.Duration) {
	var his []int64
	kept := u.calls[:0]
	for _, e := range u.calls {
		if e.d.User == 0 || e.d.Returned > limit {
			kept = append(kept, e)
			continue
		}
		at := latest(e.d) + s.opts.ClockSkew
		u.keptFrom = max(u.keptFrom, at)
		s.goneUntil = max(s.goneUntil, at)
		if s.rules.under.bucket && (e.d.Outcome == Allowed || e.d.Outcome == Other) {
			his = append(his, int64(at))
		}
		s.kept--
	}
	clear(u.calls[len(kept):])
	u.calls, u.sorted = kept, len(kept)
	if len(his) > 0 {
		slices.Sort(his)
		if u.carry == nil {
			u.carry = &bucketCarry{}
		}
		u.carry.let(his, s.rules.n, s.rules.w)
	}
}

// skewSearch is the smallest skew that explains every part judged so far,
// or that none does (searched: how far it was looked for).
type skewSearch struct {
	smallest, searched time.Duration
	noClock            bool
}

func (k *skewSearch) explained() bool { return !k.noClock }

// searchSkew raises the smallest skew that explains every part to what
// the part just judged needs (exact: whether it passed at the skew
// assumed). A part needs no more than the smallest so far when it passes
// there; else a bisection finds its own.
func (s *Stream) searchSkew(u *streamUser, exact bool, end time.Duration) {
	k, assumed := &s.skew, s.opts.ClockSkew
	if s.opts.NoSkewSearch || k.noClock || (exact && (assumed == 0 || k.smallest >= assumed)) {
		return
	}
	calls := slices.Clone(s.buf)
	passes := func(skew time.Duration) bool {
		delta := skew - assumed
		for i, c := range s.buf {
			calls[i].Sent, calls[i].Returned = c.Sent-delta, c.Returned+delta
		}
		return s.rules.check(calls, end+delta, scope{judged: s.judged, carry: u.carry.shifted(delta, s.rules.n)}).Exact()
	}
	if (exact || k.smallest > assumed) && passes(k.smallest) {
		return
	}
	span := s.buf[len(s.buf)-1].Returned - s.buf[0].Sent
	smallest, explained, searched := bisectSkew(assumed, exact, assumed+max(span, 0)+s.judge.Window, passes)
	if !explained {
		k.noClock, k.searched = true, searched
		return
	}
	k.smallest = max(k.smallest, smallest)
}

// userWheel holds the users due, in slots of gran by when they are due:
// a user due at t waits in slot ⌊t/gran⌋, or in the first slot not swept
// yet. A push and a pop are O(1).
type userWheel struct {
	gran  time.Duration
	slots map[int64][]*streamUser
	next  int64 // the first slot not swept; set by the first push
	begun bool
	spare [][]*streamUser
}

func (w *userWheel) push(u *streamUser) {
	k := floorDiv(int64(u.dueAt), int64(w.gran))
	if !w.begun {
		w.next, w.begun = k, true
	}
	k = max(k, w.next)
	list, ok := w.slots[k]
	if !ok && len(w.spare) > 0 {
		list, w.spare = w.spare[len(w.spare)-1], w.spare[:len(w.spare)-1]
	}
	w.slots[k] = append(list, u)
	u.queued = true
}

// popDue calls fn with each user due by upTo, slot after slot (fn may
// push users again, due later).
func (w *userWheel) popDue(upTo time.Duration, fn func(*streamUser)) {
	last := floorDiv(int64(min(upTo, math.MaxInt64-w.gran)), int64(w.gran))
	for len(w.slots) > 0 && w.next <= last {
		k := w.next
		if last-k > int64(4*len(w.slots)) {
			// A long way to go: the first slot held, not every one between.
			k = last + 1
			for held := range w.slots {
				k = min(k, held)
			}
			if k > last {
				w.next = last + 1
				return
			}
		}
		w.next = k + 1
		list := w.slots[k]
		delete(w.slots, k)
		for i, u := range list {
			u.queued = false
			list[i] = nil
			fn(u)
		}
		w.spare = append(w.spare, list[:0])
	}
}

// newWidthHistogram records spans from 1ns to a day, 2 significant
// digits.
func newWidthHistogram() *histogram {
	return &histogram{hdrhistogram.New(1, int64(24*time.Hour), 2)}
}
