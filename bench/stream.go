package bench

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/rlconform/rlconform/model"
)

// Stream judges calls read in about the order they ended (as a gateway's
// access log holds them) by the rules of a [Judge], in memory bounded by
// the window and the settling time, not by the number of calls. Each
// user's calls are judged in parts, once the log has been read Settle
// past them; each part with the calls before it that bear on it (its
// context: a window or two, and Settle), which are let go afterwards. A
// user whose calls are all let go is forgotten.
//
// The rules are [Judge.Check]'s, on the calls a part holds: an overshoot
// is a set of one user's allowed calls that no timing explains, so one
// found among some calls holds among all of them; sets longer than the
// context (a bucket's bound over a span of hours) are not searched. A
// denial is checked with every call that may have counted at it (a
// bucket's calls let go count through a running sum); one whose span
// reaches back past the calls kept is not judged (see
// [StreamResult.Unjudged]). A call that could explain a denial already
// found unexplained, read after it was judged, makes every unexplained
// denial unproven ([StreamResult.UnderUnproven]).
//
// Typical usage:
//
//	s, err := bench.NewStream(bench.Judge{Limit: 100, Window: time.Minute}, bench.StreamOptions{})
//	for _, c := range calls { // as they are read
//		if err := s.Add(c); err != nil { ... }
//	}
//	res := s.Finish()
type Stream struct {
	rules rules
	judge Judge
	opts  StreamOptions
	// refill is how long a bucket takes to fill from empty (0 for other
	// rules): a user met anew may have spent tokens that long before.
	refill time.Duration
	// ctx is how far before a part's earliest new call its context
	// reaches; chunk the least span of new calls a part holds (as long:
	// each call is judged about twice); floor the most allowed calls no
	// bound can fail.
	ctx, chunk time.Duration
	floor      int
	users      map[string]*streamUser
	due        userWheel
	spare      []*streamUser // forgotten users' states, for reuse
	// latest is the latest instant read (a Returned); next the instant
	// at which the next sweep judges the users due.
	latest, next time.Duration
	// forgottenUnder is the latest instant of a denial found unexplained
	// of a user since forgotten; goneUntil the latest instant (widened) of
	// any call let go: a user met anew may have had calls until then.
	forgottenUnder, goneUntil time.Duration
	kept                      int
	buf                       []Decision
	judged                    []bool
	k                         scratch
	res                       StreamResult
	seen, denied              distinct
	widths                    *histogram
	skew                      skewSearch
}

// StreamOptions tune a [Stream].
type StreamOptions struct {
	// ClockSkew bounds how far the clocks that stamped the calls may be
	// from the limiter's, as [Replay.ClockSkew] does (at most
	// MaxClockSkew).
	ClockSkew time.Duration
	// Settle is how long after a call ended a call that bears on it may
	// still be read: how far out of order the lines may be, and how long
	// a request may take (default 30s, at most an hour). A call is
	// judged once the log has been read Settle past its end.
	Settle time.Duration
	// ErrorGrace is how long after an errored call ended the limiter may
	// still have counted it (a request the gateway gave up on, which the
	// service behind it took later): it is possibly allowed from when it
	// was sent to then (default 5m, at most a day).
	ErrorGrace time.Duration
	// MaxHeld bounds the calls held at once (default DefaultMaxHeld):
	// past it Add refuses the call with ErrTooDense.
	MaxHeld int
}

// DefaultMaxHeld is the most calls a Stream holds at once by default:
// about 190 MB (measured: a million calls of one user in one millisecond,
// all held, took 184 MB of resident memory).
const DefaultMaxHeld = 1 << 20

// ErrTooDense is returned by [Stream.Add] when more calls than
// StreamOptions.MaxHeld fall within a part's context (the rules' reach
// and the settling time): the log is too dense to judge in bounded
// memory. No verdict may be drawn from part of a log.
var ErrTooDense = errors.New("bench: too many calls held at once")

// StreamCall is one call as a log holds it.
type StreamCall struct {
	// User names the call's user (not kept past Add: the Stream copies
	// it when it needs to): 1 to MaxStreamUser bytes.
	User []byte
	// Outcome is the call's answer.
	Outcome Outcome
	// Sent and Returned bound the instant the limiter decided at, in
	// Unix nanoseconds on the clock that stamped them (see [Recording]),
	// from 1970 to 2200, Sent no later than Returned, at most a day
	// apart.
	Sent, Returned time.Duration
	// Ref is the caller's: where the call was read. The evidence of a
	// finding gives it back.
	Ref uint64
}

// MaxStreamUser bounds a StreamCall's user: 4 KiB.
const MaxStreamUser = 4096

// StreamResult is what a Stream found.
type StreamResult struct {
	// Exactness is the judge's finding over every part, with the worst
	// window's user id; its instants are Unix ns as read (the skew
	// assumed taken off again). Decisions counts the calls judged,
	// UsersAtLimit the users denied at least once.
	Exactness Exactness `json:"exactness"`
	// WorstRefs are the Refs of Exactness.Worst's calls, in order;
	// UnderRefs those of Exactness.WorstUnder's nearby calls, then of
	// its denied call.
	WorstRefs []uint64 `json:"-"`
	UnderRefs []uint64 `json:"-"`
	// Skew is the skew assumed and the smallest that explains every part
	// judged (see [Skew]).
	Skew Skew `json:"clock_skew"`
	// Calls is how many calls were added; Users how many distinct users
	// made them (UsersEstimated: past 65536 users, a HyperLogLog's
	// estimate, within about 1%); UserWindows how many windows of W of
	// the Unix epoch's grid held calls of a user, summed over users.
	Calls          int64 `json:"calls"`
	Users          int64 `json:"users"`
	UsersEstimated bool  `json:"users_estimated,omitempty"`
	UserWindows    int64 `json:"user_windows"`
	// Widths are the calls' spans, Returned − Sent, as added (before the
	// skew and the real-time rule widen them).
	Widths Percentiles `json:"widths"`
	// First and Last are the earliest Sent and the latest Returned, Unix
	// ns.
	First time.Duration `json:"first_ns"`
	Last  time.Duration `json:"last_ns"`
	// Unjudged counts denials not judged: their span began so long before
	// they ended (past Settle) that the calls they need were let go.
	Unjudged int64 `json:"unjudged_denials,omitempty"`
	// Late counts calls read after a denial of their user they might
	// explain had been found unexplained; UnderUnproven is then set:
	// the unexplained denials are not proven.
	Late          int64 `json:"late_calls,omitempty"`
	UnderUnproven bool  `json:"under_unproven,omitempty"`
	// Kept is the most calls held at once; Settle and Context are the
	// settling time and the context every part was judged with.
	Kept    int           `json:"kept"`
	Settle  time.Duration `json:"settle_ns"`
	Context time.Duration `json:"context_ns"`
}

// streamUser is one user's calls being judged.
type streamUser struct {
	key string
	// calls are the calls kept, calls[:sorted] in the order sent; a
	// call's Decision.User is 1 once judged.
	calls  []streamEntry
	sorted int
	// keptFrom is the latest instant (widened) of any call let go;
	// carry sums them up for a bucket's rule.
	keptFrom time.Duration
	carry    *bucketCarry
	// underUntil is the latest instant of a denial found unexplained.
	underUntil time.Duration
	lastWindow int64
	denied     bool
	queued     bool
	dueAt      time.Duration
}

type streamEntry struct {
	d   Decision
	ref uint64
}

// NewStream returns a Stream judging by j (its Start is ignored: calls
// are placed by their Unix instants).
func NewStream(j Judge, opts StreamOptions) (*Stream, error) {
	switch {
	case opts.ClockSkew < 0 || opts.ClockSkew > MaxClockSkew:
		return nil, fmt.Errorf("bench: clock skew %v: want 0 to %v", opts.ClockSkew, MaxClockSkew)
	case opts.Settle < 0 || opts.Settle > time.Hour:
		return nil, fmt.Errorf("bench: settle %v: want 0 (30s) to 1h", opts.Settle)
	case opts.ErrorGrace < 0 || opts.ErrorGrace > 24*time.Hour:
		return nil, fmt.Errorf("bench: error grace %v: want 0 (5m) to 24h", opts.ErrorGrace)
	}
	if opts.Settle == 0 {
		opts.Settle = 30 * time.Second
	}
	if opts.ErrorGrace == 0 {
		opts.ErrorGrace = 5 * time.Minute
	}
	if opts.MaxHeld <= 0 {
		opts.MaxHeld = DefaultMaxHeld
	}
	j.Start = time.Unix(0, 0)
	r, err := j.rules()
	if err != nil {
		return nil, err
	}
	s := &Stream{rules: r, judge: j, opts: opts, users: map[string]*streamUser{}, widths: newWidthHistogram(), goneUntil: math.MinInt64}
	s.ctx = r.reach() + 2*(opts.ClockSkew+model.ClockOffset+model.ClockResolution) + time.Millisecond + opts.Settle
	s.chunk = s.ctx
	if r.under.bucket {
		s.refill = time.Duration(min(mul128(r.under.capacity, r.w).floorDiv(r.n)+1, int(366*24*time.Hour)))
	}
	s.due = userWheel{gran: max(s.chunk/2, 1), slots: map[int64][]*streamUser{}}
	s.floor = r.floor()
	s.res.Skew = Skew{Assumed: opts.ClockSkew, Explained: true}
	s.res.Settle, s.res.Context = opts.Settle, s.ctx
	s.res.Exactness.Profile = r.profile
	s.res.First = math.MaxInt64
	return s, nil
}

// reach is how far before a call the calls that bear on it may lie: the
// lookback of a denial, the span of a bound, and two windows for the
// bounds over any span and a fixed grid (searched over two windows only).
func (r rules) reach() time.Duration {
	reach := r.under.lookback
	if r.epoch {
		reach = max(reach, 2*r.w)
	}
	for _, b := range r.linear {
		if b.within == 0 {
			reach = max(reach, 2*r.w)
		}
		reach = max(reach, b.within)
	}
	if r.under.bucket {
		reach = max(reach, 2*r.w)
	}
	return time.Duration(min(reach, int64(366*24*time.Hour)))
}

// floor is the most allowed calls of one user no bound fails, whatever
// their instants.
func (r rules) floor() int {
	f := math.MaxInt
	if r.epoch {
		f = int(min(r.n, math.MaxInt32))
	}
	for _, b := range r.linear {
		f = min(f, b.bound(0, r.w))
	}
	return f
}

// Add adds a call (see [StreamCall] for what is accepted), judging the
// users due.
func (s *Stream) Add(c StreamCall) error {
	if err := checkCall(c); err != nil {
		return err
	}
	if s.kept >= s.opts.MaxHeld {
		return fmt.Errorf("%w: %d calls within %v (the rules' reach and the settling time)", ErrTooDense, s.kept, s.ctx.Round(time.Millisecond))
	}
	s.res.Calls++
	s.widths.record(c.Returned - c.Sent)
	s.res.First, s.res.Last = min(s.res.First, c.Sent), max(s.res.Last, c.Returned)
	u := s.users[string(c.User)]
	if u == nil {
		u = s.newUser(c.User)
	}
	if w := floorDiv(int64(c.Returned), s.rules.w); w > u.lastWindow {
		u.lastWindow = w
		s.res.UserWindows++
	}
	if c.Outcome == Denied && !u.denied {
		u.denied = true
		s.denied.add(c.User)
	}
	d := Decision{Outcome: c.Outcome, Sent: c.Sent, Returned: c.Returned}
	if c.Outcome == Errored {
		// Possibly allowed up to the grace after it ended.
		d.Outcome, d.Returned = Other, c.Returned+s.opts.ErrorGrace
		s.res.Exactness.Failed++
	}
	if s.mayCount(d) && s.earliest(d) <= u.underUntil {
		s.res.Late++
		s.res.UnderUnproven = true
	}
	u.calls = append(u.calls, streamEntry{d: d, ref: c.Ref})
	s.kept++
	s.res.Kept = max(s.res.Kept, s.kept)
	if !u.queued {
		u.dueAt = c.Returned
		s.due.push(u)
	}
	if c.Returned > s.latest {
		s.latest = c.Returned
		if s.next == 0 {
			s.next = s.latest + s.chunk/2
		}
		if s.latest >= s.next {
			s.sweep(s.latest - s.opts.Settle)
			s.next = s.latest + s.chunk/2
		}
	}
	return nil
}

// checkCall reports a call a Stream does not take.
func checkCall(c StreamCall) error {
	lo, hi := time.Duration(0), time.Duration(7_258_118_400_000_000_000) // 1970 to 2200
	switch {
	case len(c.User) == 0 || len(c.User) > MaxStreamUser:
		return fmt.Errorf("bench: a user of %d bytes: want 1 to %d", len(c.User), MaxStreamUser)
	case c.Sent > c.Returned:
		return errors.New("bench: a call sent after it returned")
	case c.Sent < lo || c.Returned >= hi:
		return fmt.Errorf("bench: a call at %d..%d ns: want instants from 1970 to 2200", c.Sent, c.Returned)
	case c.Returned-c.Sent > 24*time.Hour:
		return fmt.Errorf("bench: a call of %v: want at most a day", c.Returned-c.Sent)
	case c.Outcome > Other:
		return fmt.Errorf("bench: outcome %d", c.Outcome)
	}
	return nil
}

// mayCount reports whether d may have counted at another call's denial.
func (s *Stream) mayCount(d Decision) bool {
	return d.Outcome == Allowed || d.Outcome == Other || (d.Outcome == Denied && s.rules.under.countDenied)
}

// earliest is d's earliest admissible instant, widened by the skew.
func (s *Stream) earliest(d Decision) time.Duration { return earliest(d) - s.opts.ClockSkew }

// sweep judges the users due by cut: those whose first call not judged
// ended a chunk before it.
func (s *Stream) sweep(cut time.Duration) {
	s.due.popDue(cut-s.chunk, func(u *streamUser) {
		s.judgeUser(u, cut)
		s.letGo(u, cut)
		if len(u.calls) == 0 {
			s.forget(u)
			return
		}
		u.dueAt = cut
		for _, e := range u.calls {
			if e.d.User == 0 {
				u.dueAt = min(u.dueAt, e.d.Returned)
			}
		}
		s.due.push(u)
	})
}

// newUser is the state of user, new or forgotten.
func (s *Stream) newUser(user []byte) *streamUser {
	var u *streamUser
	if n := len(s.spare); n > 0 {
		u, s.spare = s.spare[n-1], s.spare[:n-1]
	} else {
		u = &streamUser{}
	}
	// Calls of this user may have been let go until goneUntil (and, for a
	// bucket, its refill since): a denial that needs them is not judged.
	keptFrom := s.goneUntil
	if keptFrom != math.MinInt64 {
		keptFrom += s.refill
	}
	*u = streamUser{key: string(user), calls: u.calls[:0], keptFrom: keptFrom, underUntil: s.forgottenUnder, lastWindow: math.MinInt64}
	s.users[u.key] = u
	s.seen.add(user)
	return u
}

// forget lets go of u, whose calls are all let go.
func (s *Stream) forget(u *streamUser) {
	s.forgottenUnder = max(s.forgottenUnder, u.underUntil)
	delete(s.users, u.key)
	if len(s.spare) < 4096 && cap(u.calls) <= 64 {
		*u = streamUser{calls: u.calls[:0]}
		s.spare = append(s.spare, u)
	}
}

// Finish judges every call not judged yet and returns what was found.
func (s *Stream) Finish() *StreamResult {
	s.due.popDue(math.MaxInt64, func(u *streamUser) { s.judgeUser(u, math.MaxInt64) })
	clear(s.users)
	r := &s.res
	r.Users, r.UsersEstimated = s.seen.count()
	atLimit, _ := s.denied.count()
	r.Exactness.UsersAtLimit = int(atLimit)
	r.Exactness.Decisions = int(r.Calls) - r.Exactness.Failed
	r.Widths = s.widths.percentiles()
	if r.Calls == 0 {
		r.First = 0
	}
	r.Skew.Smallest, r.Skew.Explained, r.Skew.Searched = s.skew.smallest, s.skew.explained(), s.skew.searched
	return r
}
