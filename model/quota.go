package model

import "time"

// QuotaBack bounds how long from the instant of an operation of user in
// [lo, hi] until its whole quota is back (every entry has left), over
// every admissible choice of instants (the real-time rule, [Admissible],
// for an oracle from [NewOracle]): none gives more. The operation is no
// earlier than any entry (one clock), so the bound is at most W. ok is
// false when the history no longer tells.
func (o *intervalOracle) QuotaBack(user string, lo, hi time.Time) (most time.Duration, ok bool) {
	log := o.logs[user]
	if len(log) == 0 {
		return 0, true
	}
	l, _ := o.millis(lo, hi)
	latest := log[0].hi
	for _, e := range log {
		latest = max(latest, e.hi)
	}
	gone := latest + o.window // the first instant no entry counts at
	if o.realTime {
		gone++ // an entry exactly W old may still count, in whole milliseconds
	}
	// From an instant no earlier than the latest entry, W at most: a
	// limiter measures both on its one clock.
	return time.Duration(min(o.window, max(0, gone-l))) * time.Millisecond, true
}

// QuotaBack bounds how long from the instant of an operation of user in
// [lo, hi] until its whole quota is back, over every state the user may be
// in: the profile's lifetime (after it the user answers as a fresh one
// would), from the earliest instant the state and the interval admit (a
// lifetime only shrinks as time passes). ok is false when the search gave
// the user up.
func (s *searchOracle) QuotaBack(user string, lo, hi time.Time) (most time.Duration, ok bool) {
	su := s.users[user]
	if su == nil {
		return 0, true
	}
	if su.off {
		return 0, false
	}
	l, _ := s.millis(lo, hi)
	for _, c := range su.states {
		most = max(most, c.p.Lifetime(time.UnixMilli(max(c.low, l)), user))
	}
	return most, true
}
