package model

import "time"

// QuotaBack bounds when the whole quota of user is back (every entry has
// left), seen from an operation of user in [lo, hi], over every
// admissible choice of instants (the real-time rule, [Admissible], for an
// oracle from [NewOracle]): none gives more. within bounds how long from
// the operation's own instant (no earlier than any entry: one clock, so
// at most W); by is the latest instant it may be (no earlier than the operation's). The two differ by the
// operation's interval: a limiter that decided at hi counts from hi. ok
// is false when the history no longer tells.
func (o *intervalOracle) QuotaBack(user string, lo, hi time.Time) (within time.Duration, by time.Time, ok bool) {
	log := o.logs[user]
	l, h := o.millis(lo, hi)
	if len(log) == 0 {
		return 0, time.UnixMilli(h), true
	}
	latest := log[0].hi
	for _, e := range log {
		latest = max(latest, e.hi)
	}
	gone := latest + o.window // the first instant no entry counts at
	if o.realTime {
		gone++ // an entry exactly W old may still count, in whole milliseconds
	}
	return time.Duration(min(o.window, max(0, gone-l))) * time.Millisecond, time.UnixMilli(max(gone, h)), true
}

// QuotaBack bounds when the whole quota of user is back, seen from an
// operation of user in [lo, hi], over every state the user may be in: the
// profile's lifetime (after it the user answers as a fresh one would).
// within is measured from the earliest instant the state and the interval
// admit (a lifetime only shrinks as time passes); by is the latest
// instant it ends at, or the operation's. ok is false when the search gave the user up.
func (s *searchOracle) QuotaBack(user string, lo, hi time.Time) (within time.Duration, by time.Time, ok bool) {
	l, h := s.millis(lo, hi)
	by = time.UnixMilli(h) // none later than the operation's own: back by then
	su := s.users[user]
	if su == nil {
		return 0, by, true
	}
	if su.off {
		return 0, by, false
	}
	for _, c := range su.states {
		from := time.UnixMilli(max(c.low, l))
		life := c.p.Lifetime(from, user)
		within = max(within, life)
		if end := from.Add(life); end.After(by) {
			by = end
		}
	}
	return within, by, true
}
