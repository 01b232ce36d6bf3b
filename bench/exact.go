package bench

import (
	"cmp"
	"slices"
	"time"

	"github.com/rlconform/rlconform/model"
)

// admissible is the span of instants call d may have been decided at, by
// the real-time rule every oracle shares ([model.Admissible]): on a
// limiter clock a fraction of a millisecond from the grader's, read at a
// millisecond's resolution or finer.
func admissible(d Decision) (lo, hi time.Duration) { return model.Admissible(d.Sent, d.Returned) }

// Decision is one answered or failed call, its instants as offsets from
// the start of the run (monotonic clock).
type Decision struct {
	User     int32         `json:"user"` // the user's index, from 0
	Outcome  Outcome       `json:"outcome"`
	Sent     time.Duration `json:"sent_ns"`     // when the call left
	Returned time.Duration `json:"returned_ns"` // when its answer came (or its error)
}

// Outcome is what a call answered.
type Outcome uint8

// The outcomes of a call. An errored call may still have taken effect: the
// exactness check counts it as possibly allowed, at any instant from when
// it was sent to the end of the run. Other is an answer that is neither an
// admission nor a refusal (a gateway's log of a 404, or of a 500 of the
// service behind it): the limiter may have counted it, at an instant of
// its own span.
const (
	Allowed Outcome = iota
	Denied
	Errored
	Other
)

// Window is a set of one user's allowed calls that the check proves broke
// a bound of the profile whatever their instants: more than N within less
// than one window for the sliding log, more than a bucket's burst and
// refill for GCRA, more than N each in the windows of a fixed grid (the
// epoch's, or Go's zero time's) their spans lie in for a fixed window or
// a weighted counter on such a grid. It comes with the calls, for the
// report's timeline.
type Window struct {
	User   int32  `json:"user"`
	UserID string `json:"user_id,omitempty"` // the id the run gave it
	// Allowed is how many allowed calls are in the set.
	Allowed int `json:"allowed"`
	// Bound is the most the profile admits there, and Rule the bound
	// broken, as the report states it.
	Bound int    `json:"bound"`
	Rule  string `json:"rule,omitempty"`
	// From and To bound the calls: the first was sent at From, the last
	// answered by To (see [model.Admissible] for their instants).
	From time.Duration `json:"from_ns"`
	To   time.Duration `json:"to_ns"`
	// Calls are the window's allowed calls, in the order sent.
	Calls []Decision `json:"calls"`
}

// UnderAdmission is a denied request that no admissible timing explains:
// at most Counted allowed requests could have counted at any instant of
// its call, fewer than the limit.
type UnderAdmission struct {
	Call   Decision `json:"call"`
	User   int32    `json:"user"`
	UserID string   `json:"user_id,omitempty"` // the id the run gave it
	// Counted is how many allowed (or errored) requests could have been in
	// the window at any instant of the denied call.
	Counted int `json:"counted"`
	// Nearby are those requests, in the order sent.
	Nearby []Decision `json:"nearby"`
	// Rule is what a denial needs by the profile, as the report states it.
	Rule string `json:"rule,omitempty"`
}

// Exactness is what the check found in a run's decisions against the
// profile judged (the sliding-window log of Limit per Window by default).
type Exactness struct {
	// Profile is the profile judged, with every parameter.
	Profile string `json:"profile,omitempty"`
	// UsersAtLimit is how many users were denied at least once: the users
	// whose decisions put the limit to the test.
	UsersAtLimit int `json:"users_at_limit"`
	// Overshoot counts allowed requests that were provably the (N+1)th or
	// later in one window.
	Overshoot int `json:"overshoot"`
	// Worst is the window with the most allowed requests proven in it
	// (nil without an overshoot).
	Worst *Window `json:"worst_window,omitempty"`
	// UnderAdmitted counts denied requests that the log would have admitted
	// whatever the timing.
	UnderAdmitted int `json:"under_admitted"`
	// WorstUnder is the under-admission with the fewest requests that could
	// have counted (nil without any).
	WorstUnder *UnderAdmission `json:"worst_under_admission,omitempty"`
	// Denials is how many denied requests were judged, and Decided how
	// many of them were explained whatever the timing: enough requests
	// surely lay within the window before them (the sliding log's N within
	// W; a bucket's capacity within the time of one token). With none
	// decided, the calls' spans were too wide to tell.
	Denials int `json:"denials_judged"`
	Decided int `json:"denials_decided"`
	// Decisions is how many answers were judged, and Failed how many failed
	// calls were counted as possibly allowed; Took is how long that took.
	Decisions int           `json:"decisions"`
	Failed    int           `json:"failed_calls"`
	Took      time.Duration `json:"check_ns"`
}

// Exact reports whether no overshoot and no under-admission were found.
func (e Exactness) Exact() bool { return e.Overshoot == 0 && e.UnderAdmitted == 0 }

// Check judges decisions against a sliding-window log of limit per window
// in which every call took effect at one instant of its admissible span
// ([model.Admissible]): [Judge.Check] for the sliding log. It is sound: it
// reports an overshoot only when limit+1 allowed calls of one user lay
// within less than one window whatever their instants, and an
// under-admission only when fewer than limit allowed (or errored) calls
// could have counted at any instant of a denied call. It is linear after a
// sort of each user's calls by the instant sent: O(n log n) in all.
//
// end is when the run ended: an errored call may have taken effect at any
// instant up to it.
func Check(decisions []Decision, limit int, window, end time.Duration) Exactness {
	ex, err := Judge{Limit: limit, Window: window}.Check(decisions, end)
	if err != nil {
		// Only a limit below 1 or a window not positive: nothing to judge.
		return Exactness{Decisions: len(decisions)}
	}
	return ex
}

// eachUser calls fn with each user's calls of grouped (see [byUser]).
func eachUser(grouped []Decision, fn func(calls []Decision)) {
	eachUserAt(grouped, func(_ int, calls []Decision) { fn(calls) })
}

// eachUserAt is eachUser, with the index in grouped of each user's first
// call.
func eachUserAt(grouped []Decision, fn func(at int, calls []Decision)) {
	for i := 0; i < len(grouped); {
		j := i + 1
		for j < len(grouped) && grouped[j].User == grouped[i].User {
			j++
		}
		fn(i, grouped[i:j])
		i = j
	}
}

// scope narrows a judgement to some of the calls it is given (the
// streaming judge's, [Stream]): the others are context, judged before.
type scope struct {
	// judged[i] says whether call i (of those given) is judged: an
	// allowed call that ends a set breaking a bound is counted, a denial
	// is checked. nil judges every call.
	judged []bool
	// carry sums up the calls no longer kept, for a bucket's rule (nil:
	// none were let go).
	carry *bucketCarry
	// k holds the judgement's slices, reused from one to the next (nil: a
	// judgement of its own).
	k *scratch
}

// scratch is the memory a judgement works in, kept for the next one.
type scratch struct {
	allowed         []Decision
	judged, flagged []bool
	g               []i128
	maxQ, minQ      []int
	sent, returned  []time.Duration
	sure            sureCounter
	los, his        []int64
	best            []i128
	bestAt          []int
}

// part is the scope of the n calls from index at.
func (s scope) part(at, n int) scope {
	if s.judged != nil {
		s.judged = s.judged[at : at+n]
	}
	return s
}

// judges reports whether call i is judged.
func (s scope) judges(i int) bool { return s.judged == nil || s.judged[i] }

// byUser returns a copy of decisions grouped by user (a counting sort: user
// ids are small and dense), each user's calls sorted by the instant sent.
func byUser(decisions []Decision) []Decision {
	var top int32
	for _, d := range decisions {
		top = max(top, d.User)
	}
	start := make([]int, top+2)
	for _, d := range decisions {
		start[d.User+1]++
	}
	for u := 1; u < len(start); u++ {
		start[u] += start[u-1]
	}
	sorted := make([]Decision, len(decisions))
	next := slices.Clone(start)
	for _, d := range decisions {
		sorted[next[d.User]] = d
		next[d.User]++
	}
	for u := 0; u+1 < len(start); u++ {
		slices.SortStableFunc(sorted[start[u]:start[u+1]], func(a, b Decision) int { return cmp.Compare(a.Sent, b.Sent) })
	}
	return sorted
}

func earliest(d Decision) time.Duration { lo, _ := admissible(d); return lo }
func latest(d Decision) time.Duration   { _, hi := admissible(d); return hi }

// underAdmission finds the denied calls of one user at whose every instant
// fewer than u.limit calls could have counted: allowed ones (or, with
// u.countDenied, of any outcome but the denied call itself) within less
// than u.lookback before it. A call a could count at an instant t of the
// denied call d when t-L < e ≤ t for an instant e of a, each in its
// admissible span: latest(a) > earliest(d)-L and earliest(a) ≤ latest(d)
// (a call decided before d was sent before d's answer came). Errored calls
// count as allowed, with any instant up to end; calls of another answer,
// within their own span. With the counted calls' earliest and latest
// instants each sorted, that count is (those that may begin by the denied
// call's end) − (those over before its window could begin), two binary
// searches: every call over that early also began by then. Only the
// denials sc judges are checked (and counted in ex.Denials, and in
// ex.Decided when explained whatever the timing: see [sureCount]).
func underAdmission(ex *Exactness, calls []Decision, u underRule, end time.Duration, sc scope) {
	k := sc.k
	sent, returned, sure := k.sent[:0], k.returned[:0], &k.sure
	sure.reset()
	defer func() { k.sent, k.returned = sent, returned }()
	for _, c := range calls {
		switch {
		case c.Outcome == Allowed || c.Outcome == Other || (u.countDenied && c.Outcome == Denied):
			sent, returned = append(sent, earliest(c)), append(returned, latest(c))
			if c.Outcome != Other {
				sure.add(c)
			}
		case c.Outcome == Errored:
			lo, hi := model.Admissible(c.Sent, end)
			sent, returned = append(sent, lo), append(returned, hi)
		}
	}
	slices.Sort(sent)
	slices.Sort(returned)
	sure.sort()
	for i, d := range calls {
		if d.Outcome != Denied || !sc.judges(i) {
			continue
		}
		ex.Denials++
		if sure.count(d, time.Duration(u.lookback)) >= u.limit {
			ex.Decided++
			continue
		}
		lo, hi := earliest(d)-time.Duration(u.lookback), latest(d)
		sentBy, _ := slices.BinarySearch(sent, hi+1)             // sent ≤ hi
		returnedBefore, _ := slices.BinarySearch(returned, lo+1) // returned ≤ lo
		counted := sentBy - returnedBefore
		if u.countDenied {
			counted-- // d itself
		}
		if int64(counted) >= u.limit {
			continue
		}
		ex.UnderAdmitted++
		if ex.WorstUnder == nil || counted < ex.WorstUnder.Counted {
			var nearby []Decision
			for _, a := range calls {
				if a == d || (a.Outcome == Denied && !u.countDenied) {
					continue
				}
				if earliest(a) <= hi && latest(Decision{Sent: a.Sent, Returned: returnedOrEnd(a, end)}) > lo {
					nearby = append(nearby, a)
				}
			}
			ex.WorstUnder = &UnderAdmission{Call: d, User: d.User, Counted: counted, Nearby: nearby, Rule: u.rule}
		}
	}
}

// sureCounter counts the calls that surely counted at a denial: decided
// surely before it (their latest instant before its earliest) and surely
// within the lookback L before it (their earliest instant after its
// latest less L), whatever the instants in their spans.
type sureCounter struct{ lo, hi []time.Duration }

func (s *sureCounter) reset() { s.lo, s.hi = s.lo[:0], s.hi[:0] }

func (s *sureCounter) add(c Decision) {
	s.lo, s.hi = append(s.lo, earliest(c)), append(s.hi, latest(c))
}

func (s *sureCounter) sort() { slices.Sort(s.lo); slices.Sort(s.hi) }

// count is a lower bound of the calls that surely counted at d: those
// surely before it less those that may lie before its window (the rest
// lie in it; one that spans the whole window is subtracted too, so the
// bound may fall short, never over).
func (s *sureCounter) count(d Decision, lookback time.Duration) int64 {
	before, _ := slices.BinarySearch(s.hi, earliest(d))           // latest < earliest(d)
	outside, _ := slices.BinarySearch(s.lo, latest(d)-lookback+1) // earliest ≤ latest(d) − L
	return int64(before - outside)
}

func returnedOrEnd(d Decision, end time.Duration) time.Duration {
	if d.Outcome == Errored {
		return end
	}
	return d.Returned
}
