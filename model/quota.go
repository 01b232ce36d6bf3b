package model

import "time"

// QuotaBack bounds how long from the instant of an operation of user in
// [lo, hi] until its whole quota is back (every entry has left), over
// every admissible choice of instants: none gives more. The operation is
// no earlier than any entry (one clock), so the bound is at most W; below
// that it is a millisecond generous each way, for limiters deciding on
// finer instants than whole milliseconds. ok is false when the history no
// longer tells.
func (o *Interval) QuotaBack(user string, lo, hi time.Time) (most time.Duration, ok bool) {
	log := o.logs[user]
	if len(log) == 0 {
		return 0, true
	}
	latest := log[0].hi
	for _, e := range log {
		latest = max(latest, e.hi)
	}
	ms := min(o.window, max(0, latest+o.window+1-(lo.UnixMilli()-1)))
	return time.Duration(ms) * time.Millisecond, true
}

// QuotaBack bounds how long from an instant of [lo, hi] until user's whole
// quota is back, over every state the user may be in: the profile's
// lifetime (after it the user answers as a fresh one would), from the
// earliest instant the state admits, a millisecond before lo at most (a
// lifetime only shrinks as time passes). ok is false when the search gave
// the user up.
func (s *Search) QuotaBack(user string, lo, hi time.Time) (most time.Duration, ok bool) {
	su := s.users[user]
	if su == nil {
		return 0, true
	}
	if su.off {
		return 0, false
	}
	from := lo.UnixMilli() - 1
	for _, c := range su.states {
		most = max(most, c.p.Lifetime(time.UnixMilli(max(c.low, from)), user))
	}
	return most, true
}
