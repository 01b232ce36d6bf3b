package bench

import (
	"fmt"
	"time"
)

// judging is a run's exactness check, made as its decisions come, in
// memory bounded by the window and the settling time (a [Stream]), not
// by the run's length: every call, and with a failover, apart, the calls
// sent before it (the verdict's). It is not safe for concurrent use.
type judging struct {
	all, before *Stream
	failoverAt  time.Duration
	start       int64 // the run's offset 0, Unix ns
	users       []string
	buf         []byte
	// err is the first call a Stream refused (too many held at once): a
	// verdict drawn from part of the calls would be none.
	err error
}

// The bounds of a run's check. A run's calls come in the order they
// ended, but for a scheduler's delays, so its settling time adapts from
// benchMinSettle (the audit of a log's starts at MinSettle), and the
// calls held are bounded by the load itself: those of about a window and
// the settling time, about 190 bytes each (DefaultMaxHeld's measure), up
// to benchMaxHeld (16M calls, 3 GB: 16M/s on a window of 1 s), past
// which the check is refused rather than drawn from part of the calls.
const (
	benchMinSettle = 100 * time.Millisecond
	benchMaxHeld   = 1 << 24
)

// newJudging starts the check of a run of cfg that started at start, its
// users' ids users. An errored call may have counted from when it was
// sent until the call's grace and a window after it ended.
func newJudging(cfg Config, start time.Time, users []string) (*judging, error) {
	judge := Judge{Profile: cfg.Profile, Limit: cfg.Limit, Window: cfg.Window}
	opts := StreamOptions{ErrorGrace: min(24*time.Hour, max(cfg.Grace, 5*time.Second)+cfg.Window), MaxHeld: benchMaxHeld, NoSkewSearch: true}
	j := &judging{start: start.UnixNano(), users: users, failoverAt: cfg.FailoverAt}
	var err error
	if j.all, err = newStream(judge, opts, benchMinSettle, DefaultSettle); err != nil {
		return nil, err
	}
	if cfg.Failover != nil {
		if j.before, err = newStream(judge, opts, benchMinSettle, DefaultSettle); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// add judges decision d (instants offsets from the run's start).
func (j *judging) add(d Decision) {
	if j.err != nil {
		return
	}
	j.buf = append(j.buf[:0], j.users[d.User]...)
	c := StreamCall{User: j.buf, Outcome: d.Outcome, Sent: time.Duration(j.start) + d.Sent, Returned: time.Duration(j.start) + d.Returned, Ref: uint64(d.User)}
	if err := j.all.Add(c); err != nil {
		j.err = err
		return
	}
	if j.before != nil && d.Sent < j.failoverAt {
		if err := j.before.Add(c); err != nil {
			j.err = err
		}
	}
}

// finish writes the check into r: its Exactness (and its failover's
// Before), or why it was not checked.
func (j *judging) finish(r *Result) {
	if j.err != nil {
		r.NotChecked = fmt.Sprintf("the calls were too dense to judge in bounded memory (%v): no verdict is drawn from part of them", j.err)
		return
	}
	began := time.Now()
	ex := j.exactness(j.all.Finish())
	ex.Took = time.Since(began)
	r.Exactness = &ex
	if f := r.Failover; f != nil && j.before != nil {
		// Even when the failover errs (its promotion not seen within the
		// wait), SENTINEL FAILOVER may have been obeyed: what came after
		// it is never the verdict's.
		before := j.exactness(j.before.Finish())
		f.Before = &before
	}
}

// exactness is a Stream's finding with its instants made offsets from
// the run's start again, and its calls' users set from their Refs.
func (j *judging) exactness(res *StreamResult) Exactness {
	ex := res.Exactness
	at := func(calls []Decision, refs []uint64) {
		for i := range calls {
			c := &calls[i]
			c.Sent, c.Returned = c.Sent-time.Duration(j.start), c.Returned-time.Duration(j.start)
			if i < len(refs) {
				c.User = int32(refs[i])
			}
			if c.Outcome == Other { // an errored call, as the Stream holds it
				c.Outcome = Errored
			}
		}
	}
	if w := ex.Worst; w != nil {
		w.From, w.To = w.From-time.Duration(j.start), w.To-time.Duration(j.start)
		at(w.Calls, res.WorstRefs)
		if len(w.Calls) > 0 {
			w.User = w.Calls[0].User
		}
	}
	if u := ex.WorstUnder; u != nil {
		n := len(u.Nearby)
		at(u.Nearby, res.UnderRefs)
		call := []Decision{u.Call}
		if n < len(res.UnderRefs) {
			at(call, res.UnderRefs[n:])
		} else {
			at(call, nil)
		}
		u.Call, u.User = call[0], call[0].User
	}
	return ex
}
