package bench

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// Recording is a run that another load tool drove and recorded, from one
// or many load generators (k6's JSON output, read by package bench/k6):
// its calls, judged by [Replay] as bench judges its own.
type Recording struct {
	// Source says what recorded it, for the report ("k6 JSON output of 2
	// generators", say).
	Source string
	// Decisions are the calls; their Sent and Returned are instants in
	// Unix nanoseconds, on the clock of the generator that made the call,
	// and bound the instant the limiter decided at (Sent no later than the
	// request left, Returned no earlier than the answer came).
	Decisions []Decision
	// Latency is each decision's latency as the tool measured it.
	Latency []time.Duration
	// UserIDs names the users: Decision.User indexes it.
	UserIDs []string
	// Errors counts the calls that failed, by kind (timeout, connection,
	// status, other); ErrorExamples has the first message of each kind.
	Errors        map[string]int
	ErrorExamples map[string]string
}

// Replay is how a recording is judged: by the rules of Judge (its Start
// is ignored: the recording's instants place it), with every call's
// interval widened by ClockSkew on each side.
type Replay struct {
	Judge Judge
	// ClockSkew bounds how far any generator's clock may be from the
	// limiter's (beyond the 1 ms of the real-time rule every oracle
	// shares): the instant the limiter decided a call at lies within
	// [Sent − ClockSkew, Returned + ClockSkew] of the generator's readings.
	ClockSkew time.Duration
	// NoSkewSearch skips the search for the smallest skew that explains
	// every decision (Result.Skew.Smallest stays unset).
	NoSkewSearch bool
}

// SkewResolution is the step of the search for the smallest clock skew
// that explains a recording's decisions.
const SkewResolution = 100 * time.Microsecond

// MaxClockSkew bounds Replay.ClockSkew: an hour is far past any clock
// that keeps time (NTP keeps them within milliseconds), and bounds the
// arithmetic of widened instants.
const MaxClockSkew = time.Hour

// maxRecordingSpan bounds the time from a recording's first instant to its
// last: a year is far past any load run.
const maxRecordingSpan = 366 * 24 * time.Hour

// Skew is what a replay assumed of the generators' clocks, and what it
// found they would need.
type Skew struct {
	// Assumed is the bound the decisions were judged with (--clock-skew).
	Assumed time.Duration `json:"assumed_ns"`
	// Smallest is the least skew, to SkewResolution, at which no overshoot
	// and no under-admission is found: an exact limiter seen through
	// clocks that far apart looks exactly like this run. Explained is
	// false when no skew up to Searched explains the decisions (no clock
	// could: the limiter is wrong).
	Smallest  time.Duration `json:"smallest_ns"`
	Explained bool          `json:"explained"`
	Searched  time.Duration `json:"searched_ns,omitempty"`
}

// Run judges the recording: the same table, JSON and chart as a bench
// run, and the exactness of every decision by the profile's rules on
// intervals widened by the clock skew assumed. It also searches the
// smallest skew that explains every decision (see [Skew]). rec's
// decisions are modified (made offsets from the first instant).
func (rp Replay) Run(rec *Recording) (*Result, error) {
	switch {
	case len(rec.Decisions) == 0:
		return nil, errors.New("bench: the recording holds no decision")
	case len(rec.Latency) != len(rec.Decisions):
		return nil, fmt.Errorf("bench: the recording has %d latencies for %d decisions", len(rec.Latency), len(rec.Decisions))
	case rp.ClockSkew < 0 || rp.ClockSkew > MaxClockSkew:
		return nil, fmt.Errorf("bench: clock skew %v: want 0 to %v", rp.ClockSkew, MaxClockSkew)
	}
	if _, err := rp.Judge.rules(); err != nil {
		return nil, err
	}
	d := rp.ClockSkew
	first, last, err := rec.span()
	if err != nil {
		return nil, err
	}
	// Offsets from the earliest widened instant: the run starts there.
	base := first - d
	for i := range rec.Decisions {
		c := &rec.Decisions[i]
		c.Sent, c.Returned = c.Sent-d-base, c.Returned+d-base
	}
	end := last + d - base
	start := time.Unix(0, int64(base))
	judge := rp.Judge
	judge.Start = start
	cfg := Config{Duration: end, Users: len(rec.UserIDs), Limit: judge.Limit, Window: judge.Window, Profile: judge.Profile}
	c := &caller{decisions: rec.Decisions, latency: rec.Latency, errs: rec.Errors, example: rec.ErrorExamples}
	if c.errs == nil {
		c.errs, c.example = map[string]int{}, map[string]string{}
	}
	r := collect(cfg, c, start, end)
	rec.Decisions, rec.Latency = nil, nil // r holds them
	r.Mode, r.Source = "recorded", rec.Source
	ids := rec.UserIDs
	r.userIDs = func(u int32) string { return ids[u] }
	r.Skew = &Skew{Assumed: d}
	if r.Exactness != nil {
		ex := r.Exactness
		if ex.Worst != nil {
			ex.Worst.UserID = r.UserID(ex.Worst.User)
			ex.Worst.From, ex.Worst.To = ex.Worst.From+d, ex.Worst.To-d
			narrow(ex.Worst.Calls, d)
		}
		if u := ex.WorstUnder; u != nil {
			u.UserID = r.UserID(u.User)
			narrow(u.Nearby, d)
			u.Call.Sent, u.Call.Returned = u.Call.Sent+d, u.Call.Returned-d
		}
		if !rp.NoSkewSearch {
			r.Skew.Smallest, r.Skew.Explained, r.Skew.Searched = rp.smallestSkew(r.decisions, judge, d, end, ex.Exact())
		}
	}
	return r, nil
}

// span checks the recording's decisions (each of a user it names, sent no
// later than it returned) and returns its first and last instants, at
// most maxRecordingSpan apart.
func (rec *Recording) span() (first, last time.Duration, err error) {
	first, last = rec.Decisions[0].Sent, rec.Decisions[0].Returned
	for i, c := range rec.Decisions {
		switch {
		case c.User < 0 || int(c.User) >= len(rec.UserIDs):
			return 0, 0, fmt.Errorf("bench: the recording has a decision of user %d of %d", c.User, len(rec.UserIDs))
		case c.Sent > c.Returned:
			return 0, 0, fmt.Errorf("bench: the recording's decision %d was sent (%d) after it returned (%d)", i, c.Sent, c.Returned)
		}
		first, last = min(first, c.Sent), max(last, c.Returned)
	}
	// A difference that wraps is negative.
	if span := last - first; span < 0 || span > maxRecordingSpan {
		return 0, 0, fmt.Errorf("bench: the recording's instants span from %d to %d ns, more than %v", first, last, maxRecordingSpan)
	}
	return first, last, nil
}

// narrow undoes the widening of calls by d, for the report: it shows the
// instants the generators measured.
func narrow(calls []Decision, d time.Duration) {
	for i := range calls {
		calls[i].Sent, calls[i].Returned = calls[i].Sent+d, calls[i].Returned-d
	}
}

// smallestSkew searches the least skew that explains every decision:
// grouped are the decisions widened by assumed (grouped by user), which
// exact says passed or not. Widening only ever lets more instants be
// chosen, so once a skew explains the decisions every larger one does,
// and a bisection finds the least to SkewResolution. A user whose
// decisions the assumed skew explains is explained by any larger one:
// when the assumed skew fails, only the failing users are searched.
func (rp Replay) smallestSkew(grouped []Decision, j Judge, assumed, end time.Duration, exact bool) (time.Duration, bool, time.Duration) {
	rules, err := j.rules()
	if err != nil {
		return 0, false, 0
	}
	if exact && assumed == 0 {
		return 0, true, 0
	}
	calls := grouped
	if !exact {
		// Only the users that fail at the assumed skew.
		var failing []Decision
		eachUser(grouped, func(user []Decision) {
			if ex := rules.check(user, end, scope{}); !ex.Exact() {
				failing = append(failing, user...)
			}
		})
		calls = failing
	}
	buf := make([]Decision, len(calls))
	return bisectSkew(assumed, exact, assumed+end+j.Window, func(skew time.Duration) bool {
		delta := skew - assumed
		for i, c := range calls {
			c.Sent, c.Returned = c.Sent-delta, c.Returned+delta
			buf[i] = c
		}
		return rules.check(buf, end+delta, scope{}).Exact()
	})
}

// bisectSkew is the least skew, to SkewResolution, at which passes holds,
// knowing whether it holds at assumed (exact): below assumed when it
// does, else up to upper, past which every call may lie anywhere (if
// passes fails there, no clock explains the decisions: explained is
// false, searched is upper). passes must hold at every skew above one at
// which it holds.
func bisectSkew(assumed time.Duration, exact bool, upper time.Duration, passes func(time.Duration) bool) (smallest time.Duration, explained bool, searched time.Duration) {
	// In steps of SkewResolution: passes(hi·step); lo·step fails (or is
	// 0, untried).
	step := SkewResolution
	lo, hi := int64(0), int64((assumed+step-1)/step)
	if !exact {
		lo, hi = int64(assumed/step), int64((upper+step-1)/step)
		if !passes(time.Duration(hi) * step) {
			return 0, false, time.Duration(hi) * step
		}
	} else if passes(0) {
		return 0, true, 0
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if passes(time.Duration(mid) * step) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return time.Duration(hi) * step, true, 0
}

// skewText writes the report's line on the clock skew of a replay.
func (r *Result) skewText(w io.Writer) {
	s := r.Skew
	if s == nil {
		return
	}
	fmt.Fprintf(w, "clock skew  assumed %v: every call's interval widened by it on each side (--clock-skew)", s.Assumed)
	switch {
	case r.Exactness == nil:
	case !s.Explained && s.Searched > 0:
		fmt.Fprintf(w, "; no skew up to %v explains the decisions: the limiter is wrong whatever the clocks", s.Searched.Round(time.Millisecond))
	case s.Explained && r.Exactness.Exact() && s.Smallest < s.Assumed:
		fmt.Fprintf(w, "; %v would have sufficed", s.Smallest)
	case s.Explained && !r.Exactness.Exact():
		fmt.Fprintf(w, "; the smallest skew that explains every decision is %v: past the bound assumed, so the limiter is wrong unless the generators' clocks were that far apart", s.Smallest)
	}
	fmt.Fprintln(w)
}
