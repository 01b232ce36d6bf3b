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
// user's calls are judged in parts, once the log has been read the
// settling time past them; each part with the calls before it that bear
// on it (its context: a window or two, and the settling time), which are
// let go afterwards. A user whose calls are all let go is forgotten.
//
// The settling time is StreamOptions.Settle when given. By default it
// adapts to the log's own disorder: twice the most a call's end was seen
// to lie before the latest end read before it (its lateness), at least
// [MinSettle], at most [DefaultSettle]; it only grows. So a log in about
// the order its requests ended is held a few seconds at a time, whatever
// its rate, and one written in batches is held as long as its batches
// are apart. A part in which a denial looks unexplained is not judged
// until the log has been read DefaultSettle past that denial (it is held:
// a call read that late may still explain it), unless the calls held
// reach half of MaxHeld, when the settling time falls back to the most
// lateness seen (or to MinSettle, past three quarters of MaxHeld) and
// held parts are judged at once (see [StreamResult.Hurried]). What
// the settling time decides is only what is judged, never how: a call
// read later than it is caught by the safeguards below.
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
	// settle is the settling time (the one given, or the adaptive one so
	// far), adaptive whether it adapts, within minSettle and maxSettle;
	// hold how long past a denial that looks unexplained its part waits
	// (maxSettle when adaptive, else 0: a fixed settling time waits that
	// long already).
	settle, minSettle, maxSettle, hold time.Duration
	adaptive                           bool
	// base is how far before a part's earliest new call its context
	// reaches without the settling time; ctx with it. chunk is the least
	// span of new calls a part holds (ctx: each call is judged about
	// twice); floor the most allowed calls no bound can fail.
	base, ctx, chunk time.Duration
	floor            int
	users            map[string]*streamUser
	due              userWheel
	spare            []*streamUser // forgotten users' states, for reuse
	// latest is the latest instant read (a Returned); next the instant
	// at which the next sweep judges the users due, swept the latest
	// instant of the last one. finishing: Finish is judging what is left.
	latest, next, swept time.Duration
	finishing           bool
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
	// a request may take (at most an hour). A call is judged once the log
	// has been read Settle past its end. 0 (the default) adapts it to the
	// lines' disorder as read, from MinSettle to DefaultSettle (see
	// [Stream]).
	Settle time.Duration
	// ErrorGrace is how long after an errored call ended the limiter may
	// still have counted it (a request the gateway gave up on, which the
	// service behind it took later): it is possibly allowed from when it
	// was sent to then (default 5m, at most a day).
	ErrorGrace time.Duration
	// MaxHeld bounds the calls held at once (default DefaultMaxHeld):
	// past it Add refuses the call with ErrTooDense.
	MaxHeld int
	// NoSkewSearch: a part that fails is not judged again at other skews
	// to find the smallest that explains it (StreamResult.Skew then says
	// nothing of it), as [Replay.NoSkewSearch]: a bench's calls are
	// judged at the skew assumed, as they are made.
	NoSkewSearch bool
}

// DefaultSettle is the longest an adaptive settling time grows to, and
// how long past a denial that looks unexplained its part waits for calls
// read late (see [Stream]): the settling time the Stream had before it
// adapted.
const DefaultSettle = 30 * time.Second

// MinSettle is the shortest adaptive settling time.
const MinSettle = time.Second

// settleFactor is how many times the most lateness seen an adaptive
// settling time is: room for lines later than any seen so far.
const settleFactor = 2

// DefaultMaxHeld is the most calls a Stream holds at once by default:
// about 190 MB (measured: a million calls of one user in one millisecond,
// all held, took 184 MB of resident memory).
const DefaultMaxHeld = 1 << 20

// ErrTooDense is returned by [Stream.Add] when more calls than
// StreamOptions.MaxHeld fall within a part's context (the rules' reach
// and the settling time; an adaptive one at MinSettle): the log is too
// dense to judge in bounded memory. No verdict may be drawn from part of
// a log.
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
	// settling time and the context the parts were judged with (an
	// adaptive one's longest: it only grows).
	Kept    int           `json:"kept"`
	Settle  time.Duration `json:"settle_ns"`
	Context time.Duration `json:"context_ns"`
	// Adaptive: the settling time adapted to the lines' disorder (none
	// was given). Lateness is the most a call's end lay before the latest
	// end read before it: how far out of order the calls were read.
	Adaptive bool          `json:"settle_adaptive,omitempty"`
	Lateness time.Duration `json:"lateness_ns"`
	// Hold is how long past a denial that looked unexplained its part
	// waited for calls read late (DefaultSettle, with an adaptive
	// settling time; else Settle); Held counts the parts that waited.
	// Hurried counts the sweeps that judged sooner, and held parts at
	// once, to keep the calls held within about half of MaxHeld: at the
	// most lateness seen and an eighth, or at MinSettle past three
	// quarters of MaxHeld; Shortest is the shortest settling time they
	// used.
	Hold     time.Duration `json:"hold_ns"`
	Held     int64         `json:"held_parts,omitempty"`
	Hurried  int64         `json:"hurried_sweeps,omitempty"`
	Shortest time.Duration `json:"shortest_settle_ns,omitempty"`
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
	// holdUntil, when not 0, is the instant until which the part of calls
	// ending before holdCut waits: a denial in it looked unexplained.
	underUntil, holdUntil, holdCut time.Duration
	lastWindow                     int64
	denied                         bool
	queued                         bool
	dueAt                          time.Duration
}

type streamEntry struct {
	d   Decision
	ref uint64
}

// NewStream returns a Stream judging by j (its Start is ignored: calls
// are placed by their Unix instants).
func NewStream(j Judge, opts StreamOptions) (*Stream, error) {
	return newStream(j, opts, MinSettle, DefaultSettle)
}

// newStream is NewStream with an adaptive settling time from minSettle
// to maxSettle (tests judge logs of milliseconds).
func newStream(j Judge, opts StreamOptions, minSettle, maxSettle time.Duration) (*Stream, error) {
	switch {
	case opts.ClockSkew < 0 || opts.ClockSkew > MaxClockSkew:
		return nil, fmt.Errorf("bench: clock skew %v: want 0 to %v", opts.ClockSkew, MaxClockSkew)
	case opts.Settle < 0 || opts.Settle > time.Hour:
		return nil, fmt.Errorf("bench: settle %v: want 0 (adaptive) to 1h", opts.Settle)
	case opts.ErrorGrace < 0 || opts.ErrorGrace > 24*time.Hour:
		return nil, fmt.Errorf("bench: error grace %v: want 0 (5m) to 24h", opts.ErrorGrace)
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
	s.base = r.reach() + 2*(opts.ClockSkew+model.ClockOffset+model.ClockResolution) + time.Millisecond
	s.settle, s.minSettle, s.maxSettle = opts.Settle, minSettle, maxSettle
	if opts.Settle == 0 {
		s.settle, s.adaptive, s.hold = minSettle, true, maxSettle
	}
	s.ctx = s.base + s.settle
	s.chunk = s.ctx
	if r.under.bucket {
		s.refill = time.Duration(min(mul128(r.under.capacity, r.w).floorDiv(r.n)+1, int(366*24*time.Hour)))
	}
	s.due = userWheel{gran: max(s.chunk/2, 1), slots: map[int64][]*streamUser{}}
	s.floor = r.floor()
	s.res.Skew = Skew{Assumed: opts.ClockSkew, Explained: true}
	s.res.Settle, s.res.Context, s.res.Adaptive = s.settle, s.ctx, s.adaptive
	s.res.Hold, s.res.Shortest = max(s.hold, s.settle), s.settle
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
		if s.adaptive {
			return fmt.Errorf("%w: %d calls within %v (the rules' reach and the shortest settling time, %v)", ErrTooDense, s.kept, (s.base + s.minSettle).Round(time.Millisecond), s.minSettle)
		}
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
		s.maybeSweep()
	} else {
		s.observe(s.latest - c.Returned)
	}
	return nil
}

// observe takes in a call read late by late (its end that long before
// the latest end read): an adaptive settling time grows to settleFactor
// times the most lateness seen, within minSettle and maxSettle.
func (s *Stream) observe(late time.Duration) {
	if late <= s.res.Lateness {
		return
	}
	s.res.Lateness = late
	if !s.adaptive || s.settle == s.maxSettle {
		return
	}
	if settle := min(max(settleFactor*late, s.minSettle), s.maxSettle); settle > s.settle {
		s.settle, s.ctx = settle, s.base+settle
		s.chunk = s.ctx
		s.res.Settle, s.res.Context = s.settle, s.ctx
	}
}

// maybeSweep sweeps when the log has been read half a chunk past the last
// sweep, or, with an adaptive settling time and the calls held past half
// of MaxHeld (pressed), half the shortest chunk past it: at a shorter
// settling time (hurried), the held parts judged at once.
func (s *Stream) maybeSweep() {
	if s.next == 0 {
		s.next, s.swept = s.latest+s.chunk/2, s.latest
	}
	pressed := s.adaptive && s.pressed()
	if s.latest < s.next && !(pressed && s.latest >= s.swept+(s.base+s.minSettle)/2) {
		return
	}
	settle := s.settle
	if pressed {
		settle = s.hurried()
		s.res.Hurried++
		s.res.Shortest = min(s.res.Shortest, settle)
	}
	s.sweep(s.latest-settle, s.base+settle)
	s.next, s.swept = s.latest+s.chunk/2, s.latest
}

// hurried is the settling time of a sweep when memory is pressed: the
// most lateness seen and an eighth (no room for lines later still), or
// minSettle once the calls held reach three quarters of MaxHeld.
func (s *Stream) hurried() time.Duration {
	if s.kept >= s.opts.MaxHeld/4*3 {
		return s.minSettle
	}
	return min(s.settle, max(s.minSettle, s.res.Lateness+s.res.Lateness/8))
}

// pressed reports whether the calls held reach half of MaxHeld: an
// adaptive Stream then settles sooner, and judges held parts at once.
func (s *Stream) pressed() bool { return s.kept >= s.opts.MaxHeld/2 }

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
// ended a context (ctx, the chunk) before it. A user whose part is held
// (see [Stream]) waits, due at the next sweep.
func (s *Stream) sweep(cut, ctx time.Duration) {
	s.due.popDue(cut-ctx, func(u *streamUser) {
		if s.waits(u) {
			u.dueAt = cut - ctx + s.due.gran
			s.due.push(u)
			return
		}
		s.judgeUser(u, cut)
		from := firstNotJudged(u, cut)
		s.letGo(u, from-ctx)
		if len(u.calls) == 0 {
			s.forget(u)
			return
		}
		u.dueAt = from
		if u.holdUntil != 0 {
			u.dueAt = max(from, cut-ctx+s.due.gran)
		}
		s.due.push(u)
	})
}

// waits reports whether u's part is held and still waits: the log has
// not been read to its holdUntil, and memory is not pressed.
func (s *Stream) waits(u *streamUser) bool {
	return u.holdUntil != 0 && s.latest < u.holdUntil && !s.pressed()
}

// firstNotJudged is the earliest end of u's calls not judged, or cut.
func firstNotJudged(u *streamUser, cut time.Duration) time.Duration {
	from := cut
	for _, e := range u.calls {
		if e.d.User == 0 {
			from = min(from, e.d.Returned)
		}
	}
	return from
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
	s.finishing = true
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
