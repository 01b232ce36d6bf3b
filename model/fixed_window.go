package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/plural"
)

// fixedWindow is the fixed-window profile: a counter per user and window of
// W, a request allowed while the count of its window is below N. Windows
// are laid out by align:
//
//   - epoch: [kW, (k+1)W) for every whole k, on the Unix epoch in ms;
//   - go-zero: [z+kW, z+(k+1)W), z Go's zero time (0001-01-01 UTC), the
//     windows time.Time.Truncate makes;
//   - first-grid: [a+kW, a+(k+1)W), anchored at the instant a of the
//     user's first counted request; the user (anchor and all) is forgotten
//     once a whole window has passed with no counted request, i.e. at
//     s+2W for the window [s, s+W) of the last one;
//   - first-hit: [s, s+W), opened by the first request at or after the end
//     of the previous window (the INCR + PEXPIRE pattern);
//   - elastic: as first-hit, but every request renews the window's
//     expiry: s is the instant of the last request, allowed or denied,
//     and the window ends at s+W (python limits'
//     FixedWindowElasticExpiry: INCRBY then EXPIRE on every hit);
//   - elastic-allowed: as elastic, renewed by allowed requests only (s
//     is the last allowed one's instant);
//   - first-second: as first-hit, but s is the request's instant on the
//     limiter's own clock of whole seconds: the last tick, at or before
//     it, of a clock that ticks each second at phase ms of the second
//     (Fiber's FixedWindow reads utils.Timestamp, a Unix second a ticker
//     started with the process refreshes). On the fake clock the phase
//     is 0, the given clock truncated; in real time it is unknown, and the
//     oracles follow every phase ([Algorithm.Unseen]).
//
// countDenied counts denied requests too (INCR before the check).
//
// writes (query=write) makes a query of what remains save the state as a
// request does, without counting: a user with none gets a window
// (first-hit) or a grid (first-grid) at the query's instant, and a
// first-grid user is forgotten a whole window after its last write.
// Symfony RateLimiter's only query, consume(0), saves this way.
//
// reading is how a change of W or N reads a user's state
// ([fixedWindowReadings]): relay (the default), finish, rekey or fresh.
type fixedWindow struct {
	align       string // epoch, go-zero, first-grid, first-hit, first-second, elastic, elastic-allowed
	phase       int64  // first-second: the ms of the second its clock ticks at
	countDenied bool
	writes      bool
	kept        bool // first-grid, renew=kept: the grid is never forgotten
	reading     string
	n           int
	w           int64
	users       map[string]fixedState
}

type fixedState struct {
	anchor int64 // first-grid: the grid's anchor
	start  int64 // the window of the last counted request is [start, start+w) (elastic: start is its last renewal)
	w      int64 // the window's length: the W in force when it opened
	count  int
}

// The readings of a change of configuration of fixed windows.
const (
	fixedRelay  = "relay"
	fixedFinish = "finish"
	fixedRekey  = "rekey"
	fixedFresh  = "fresh"
)

// fixedWindowReadings are the honest readings of a change of N or W for
// a user with a count, the model's default first.
func fixedWindowReadings() []Reading {
	return []Reading{
		{Name: fixedRelay, Doc: "the start (first-grid: the anchor; elastic: the last renewal) and the count are kept, compared with N', and windows are laid out with W' from the next decision: the window [s, s+W') keeps its count (epoch, go-zero, first-grid: when it is the W'-window holding t)",
			Seen: "none known (a {start, count} state read with the W in force)"},
		{Name: fixedFinish, Doc: "the window open at the change keeps its end s+W and its count, compared with N'; the windows after it have W' (first-hit: opened by a request at or after s+W; elastic: the next renewal at r moves the end to r+W'; epoch, go-zero: the W'-grid's; first-grid: anchored at s+W, reached by a request before s+W+min(W, W'), the old anchor's expiry)",
			Seen: "ulule/limiter, rate-limiter-flexible, go-zero PeriodLimit (a TTL written when the window opened)"},
		{Name: fixedRekey, Doc: "a changed W starts every user afresh (the window's index, hence W, is in the key); a changed N keeps the count, compared with N'",
			Seen: "rack-attack"},
		{Name: fixedFresh, Doc: "any change of N or W starts every user afresh (the key holds the rate)",
			Seen: "python limits"},
	}
}

// Describe implements [Profile].
func (f *fixedWindow) Describe() string {
	s := fmt.Sprintf("a fixed window of %v aligned to the epoch", ms(f.w))
	switch f.align {
	case "go-zero":
		s = fmt.Sprintf("a fixed window of %v aligned to Go's zero time (0001-01-01 UTC, as time.Time.Truncate)", ms(f.w))
	case "first-hit":
		s = fmt.Sprintf("a fixed window of %v opened by the first request", ms(f.w))
	case "first-second":
		s = fmt.Sprintf("a fixed window of %v opened by the first request at the limiter's whole second", ms(f.w))
	case "first-grid":
		s = fmt.Sprintf("fixed windows of %v on a grid anchored at the user's first request", ms(f.w))
		if f.kept {
			s += " and kept for good"
		}
	case "elastic":
		s = fmt.Sprintf("a fixed window of %v whose expiry every request renews (it ends %v after the last request, allowed or denied)", ms(f.w), ms(f.w))
	case "elastic-allowed":
		s = fmt.Sprintf("a fixed window of %v whose expiry every allowed request renews (it ends %v after the last allowed request)", ms(f.w), ms(f.w))
	}
	if f.writes && !f.fixedGrid() { // a query moves no window on a fixed grid
		s += " (or a query)"
	}
	if f.countDenied {
		return fmt.Sprintf("%s, counting denied requests, limit %d", s, f.n)
	}
	return fmt.Sprintf("%s, not counting denied requests, limit %d", s, f.n)
}

// Limit implements [Profile].
func (f *fixedWindow) Limit() int { return f.n }

// Window implements [Profile].
func (f *fixedWindow) Window() time.Duration { return ms(f.w) }

// current returns the user's state for the window holding t: its start,
// and the count so far (0 in a window not yet counted in).
func (f *fixedWindow) current(t int64, user string) fixedState {
	st, ok := f.users[user]
	if ok && st.w != f.w && f.reading == fixedFinish {
		if st, ok = f.finish(t, st); ok {
			return st
		}
	}
	switch f.align {
	case "epoch", "go-zero":
		z := gridOrigin(f.align)
		start := z + floorDiv(t-z, f.w)*f.w
		if !ok || st.start != start {
			return fixedState{start: start, w: f.w}
		}
	case "first-hit", "elastic", "elastic-allowed":
		if !ok || t >= st.start+f.w || t < st.start {
			return fixedState{start: t, w: f.w}
		}
	case "first-second":
		if !ok || t >= st.start+f.w || t < st.start {
			return fixedState{start: f.phase + floorDiv(t-f.phase, 1000)*1000, w: f.w}
		}
	default: // first-grid
		if !ok || (!f.kept && t >= st.start+2*f.w) || t < st.anchor {
			return fixedState{anchor: t, start: t, w: f.w}
		}
		start := st.anchor + floorDiv(t-st.anchor, f.w)*f.w
		if start != st.start {
			return fixedState{anchor: st.anchor, start: start, w: f.w}
		}
	}
	return st
}

// finish reads, under the reading finish, the state of a user whose window
// opened under another W: the window [s, s+w) keeps its end and count;
// first-grid, the next window [s+w, s+w+W) is reached before the old
// anchor's expiry s+w+min(w, W). ok is false when the user is as fresh.
func (f *fixedWindow) finish(t int64, st fixedState) (fixedState, bool) {
	end := st.start + st.w
	switch {
	case t < st.start: // the clock stepped back: a window of W
		return fixedState{}, false
	case t < end:
		return st, true
	case f.align == "first-grid" && t < end+min(st.w, f.w):
		return fixedState{anchor: end, start: end, w: f.w}, true
	}
	return fixedState{}, false
}

// end is the end of st's window: its own length under the reading
// finish, the W in force under the others.
func (f *fixedWindow) end(st fixedState) int64 {
	if f.reading == fixedFinish {
		return st.start + st.w
	}
	return st.start + f.w
}

// renews reports whether a request, allowed (ok) or not, renews its
// window's expiry: every one under align=elastic, the allowed ones under
// elastic-allowed.
func (f *fixedWindow) renews(ok bool) bool {
	return f.align == "elastic" || f.align == "elastic-allowed" && ok
}

// fixedGrid reports whether the windows lie on a grid fixed in time (the
// epoch's or Go's), whatever the requests.
func (f *fixedWindow) fixedGrid() bool { return f.align == "epoch" || f.align == "go-zero" }

// Allow implements [Profile].
func (f *fixedWindow) Allow(now time.Time, user string) (bool, error) {
	return f.AllowN(now, user, 1)
}

// AllowN implements [Weighted]: allowed when count + n <= N, and then
// count += n; refused, count += n only with countDenied (INCRBY n before
// the check). Under align=elastic every request (elastic-allowed: every
// allowed one) renews the window's expiry: its end is W from now; a
// window with no count has nothing to renew (an EXPIRE of no key). Cost
// 0 is allowed and counts nothing; with query=write it is the query, and
// saves the state as the query does.
func (f *fixedWindow) AllowN(now time.Time, user string, n int) (bool, error) {
	if err := validateRequest(user, n); err != nil {
		return false, err
	}
	if n == 0 {
		if f.writes {
			f.Remaining(now, user)
		}
		return true, nil
	}
	t := now.UnixMilli()
	st := f.current(t, user)
	ok := n <= f.n-st.count
	counted, renewed := ok || f.countDenied, f.renews(ok) && (ok || f.countDenied || st.count > 0)
	if counted {
		st.count += n
	}
	if renewed {
		st.start, st.w = t, f.w // the expiry written again, with the W in force
	}
	if counted || renewed {
		f.save(user, st)
	}
	return ok, nil
}

// save keeps st as the user's state.
func (f *fixedWindow) save(user string, st fixedState) {
	if f.users == nil {
		f.users = map[string]fixedState{}
	}
	f.users[user] = st
}

// Remaining implements [Profile].
func (f *fixedWindow) Remaining(now time.Time, user string) (int, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return 0, err
	}
	st := f.current(now.UnixMilli(), user)
	if f.writes {
		f.save(user, st)
	}
	return max(0, f.n-st.count), nil
}

// RetryAfter implements [Profile]: the end of the current window.
func (f *fixedWindow) RetryAfter(now time.Time, user string) time.Duration {
	t := now.UnixMilli()
	st := f.current(t, user)
	if st.count < f.n {
		return 0
	}
	return ms(f.end(st) - t)
}

// Lifetime implements [Profile].
func (f *fixedWindow) Lifetime(now time.Time, user string) time.Duration {
	t := now.UnixMilli()
	st, ok := f.users[user]
	if !ok {
		return 0
	}
	end := f.end(st)
	switch {
	case f.align != "first-grid":
	case f.reading == fixedFinish:
		end += min(st.w, f.w) // the anchor outlives the count by a window, at most its own
	default:
		end += f.w // the anchor outlives the count by a window
	}
	return ms(max(0, end-t))
}

// Reset implements [Profile].
func (f *fixedWindow) Reset(user string) error {
	if err := contract.ValidateUserID(user); err != nil {
		return err
	}
	delete(f.users, user)
	return nil
}

// Configure implements [Profile]: as the model's reading says. relay: the
// counts are kept and read against the new limit, windows laid out with
// the new W from the next decision; finish: so are they, but the window
// open at now keeps its end (a user already as fresh at now is
// forgotten: its store would have let it expire); rekey: a new W forgets
// every user; fresh: any change does.
func (f *fixedWindow) Configure(now time.Time, n int, w time.Duration) error {
	if err := contract.ValidateConfig(n, w); err != nil {
		return err
	}
	nw := w.Milliseconds()
	if n == f.n && nw == f.w {
		return nil
	}
	switch {
	case f.reading == fixedFresh, f.reading == fixedRekey && nw != f.w:
		f.users = nil
	case f.reading == fixedFinish && nw != f.w:
		for u := range f.users {
			if f.Lifetime(now, u) <= 0 {
				delete(f.users, u)
			}
		}
	}
	f.n, f.w = n, nw
	return nil
}

// Explain implements [Profile].
func (f *fixedWindow) Explain(now, base time.Time, user string) string {
	st := f.current(now.UnixMilli(), user)
	end := f.end(st)
	kept := ""
	if end-st.start != f.w {
		kept = fmt.Sprintf(" (opened under a window of %v, it keeps its end)", ms(end-st.start))
		if f.renews(true) {
			kept = fmt.Sprintf(" (renewed under a window of %v, it keeps its end)", ms(end-st.start))
		}
	}
	if f.renews(true) && st.count > 0 {
		return fmt.Sprintf("the window of %s, whose expiry was last renewed at %s, ends at %s%s and has counted %d of limit %d",
			user, offset(time.UnixMilli(st.start), base), offset(time.UnixMilli(end), base), kept, st.count, f.n)
	}
	return fmt.Sprintf("the window [%s, %s)%s of %s has counted %d of limit %d",
		offset(time.UnixMilli(st.start), base), offset(time.UnixMilli(end), base), kept, user, st.count, f.n)
}

// Clone implements [Profile].
func (f *fixedWindow) Clone() Profile {
	c := *f
	c.users = maps.Clone(f.users)
	return &c
}

// StateKey implements [Profile].
func (f *fixedWindow) StateKey(user string) string {
	key := ""
	if st, ok := f.users[user]; ok {
		key = fmt.Sprintf("%d/%d/%d", st.anchor, st.start, st.count)
		if f.reading == fixedFinish { // the window's own length decides its end
			key += fmt.Sprintf("/%d", st.w)
		}
	}
	if f.align == "first-second" { // the phase decides every window's start, a fresh user's too
		key += fmt.Sprintf("@%d", f.phase)
	}
	return key
}

// fixedWindowAlgorithm describes fixed windows.
func fixedWindowAlgorithm() Algorithm {
	return Algorithm{
		Name:    ProfileFixedWindow,
		Summary: "a counter per fixed window of W: allowed while the window's count is below N",
		Params: []ParamInfo{
			{"align", "epoch", []string{"epoch", "go-zero", "first-grid", "first-hit", "first-second", "elastic", "elastic-allowed"}, "epoch: windows [kW, (k+1)W) on the epoch; go-zero: windows [kW, (k+1)W) counted from Go's zero time, 0001-01-01 UTC, as time.Time.Truncate makes them; first-grid: a grid anchored at the user's first request; first-hit: a window opened by the first request after the previous one ended (INCR + EXPIRE); first-second: as first-hit, opened at the request's instant on the limiter's own clock of whole seconds, which ticks at a phase of the second the grader cannot see (Fiber's FixedWindow; the fake clock's phase is 0: the given clock truncated); elastic: as first-hit, but every request, allowed or denied, renews the window's expiry, so that it ends W after the last request (python limits' FixedWindowElasticExpiry: INCRBY then EXPIRE on every hit); elastic-allowed: as elastic, the expiry renewed by allowed requests only"},
			{"count-denied", "false", []string{"false", "true"}, "false: only allowed requests are counted; true: denied requests are counted too (INCR before the check)"},
			{"query", "read", []string{"read", "write"}, "read: a query of what remains changes nothing; write: it saves the state as a request does, without counting (a user with none gets a window or grid at the query's instant: Symfony's consume(0))"},
			{RenewParam, RenewCounted, []string{RenewCounted, RenewKept}, "what keeps a first-grid user's grid (other windows are not on one): counted: a counted request (or, with query=write, a query), so that a whole window with none forgets it; kept: nothing needs to, the grid lasts as long as the limiter keeps the user (sethvargo/go-limiter's memory store: a bucket's start time, swept after 12 hours)"},
		},
		New: func(p map[string]string, n int, w time.Duration) Replayable {
			return newFixedWindow(p, n, w)
		},
		Cost:              "allowed when count + n <= N (count: the requests counted in t's window), then count += n, as n requests at t would count; refused, nothing is counted, but with count-denied=true count += n (INCRBY n before the check); n > N is never allowed; align=elastic: a request renews the window's expiry (its end is t+W) whether allowed or refused, elastic-allowed: when allowed (a window with no count has none to renew); " + costQueryWrites,
		GradesLimitChange: true,
		Readings:          fixedWindowReadings(),
		Candidates: func([]string) []string {
			var list []string
			for _, align := range []string{"epoch", "go-zero", "first-grid", "first-hit", "elastic", "elastic-allowed", "first-second"} {
				for _, d := range []string{"false", "true"} {
					list = append(list, "align="+align+",count-denied="+d)
					// A query moves no window on a fixed grid; no limiter
					// on a clock of seconds, nor with an elastic expiry,
					// is known to open one by a query.
					if _, grid := alignedGrid(align); !grid && align != "first-second" && !strings.HasPrefix(align, "elastic") {
						list = append(list, "align="+align+",count-denied="+d+",query=write")
					}
					if align == "first-grid" {
						list = append(list, "align="+align+",count-denied="+d+","+RenewParam+"="+RenewKept)
					}
				}
			}
			return list
		},
		Alike: func(p map[string]string, _ int, queries, oneGrid bool) string {
			align, query := sameGrid(p["align"], oneGrid), p["query"]
			if !queries {
				query = "read"
			}
			if _, grid := alignedGrid(align); grid {
				return "fixed-window/" + align // a query cannot move a window on a fixed grid
			}
			// A window whose count reached N denies until its end whether
			// denied requests count or not.
			key := "fixed-window/" + align + "/" + query
			if align == "first-grid" && p[RenewParam] == RenewKept {
				key += "/" + RenewKept
			}
			return key
		},
		Suspects: crossed([]string{"epoch", "first-hit", "first-grid", "go-zero", "elastic", "elastic-allowed"}, []string{"false", "true"}, nil),
		Remedy:   "a counter per window lets N requests just before a window edge and N just after through: keep a log of the instants of allowed requests (a ZSET pruned to now-W) instead",
		Grid:     func(p map[string]string) (Grid, bool) { return alignedGrid(p["align"]) },
		Anchored: func(p map[string]string) bool {
			return slices.Contains([]string{"first-hit", "first-grid", "elastic", "elastic-allowed"}, p["align"])
		},
		QueryWrites: func(p map[string]string) bool { return p["query"] == "write" },
		Envelope:    fixedWindowEnvelope,
		Unseen:      fixedWindowPhases,
	}
}

// fixedWindowPhases are the models of align=first-second, one per phase
// of its clock of whole seconds, in ms: nothing for other alignments.
func fixedWindowPhases(p map[string]string, n int, w time.Duration) []Replayable {
	if p["align"] != "first-second" {
		return nil
	}
	out := make([]Replayable, 1000)
	for phase := range out {
		f := newFixedWindow(p, n, w)
		f.phase = int64(phase)
		out[phase] = f
	}
	return out
}

// newFixedWindow is the empty model of parameters p.
func newFixedWindow(p map[string]string, n int, w time.Duration) *fixedWindow {
	return &fixedWindow{align: p["align"], countDenied: p["count-denied"] == "true", writes: p["query"] == "write",
		kept: p["align"] == "first-grid" && p[RenewParam] == RenewKept, reading: pinnedReading(p, fixedRelay), n: n, w: w.Milliseconds()}
}

// fixedWindowEnvelope bounds fixed windows under load: N per window of a
// fixed grid, or 2N within any W when the windows' alignment is unknown
// (an elastic window is W long at least: the same bounds). A denial needs
// N allowed requests within W before it, but under an elastic expiry,
// which no span bounds: there, none.
func fixedWindowEnvelope(p map[string]string, n int64, w time.Duration) Envelope {
	e := Envelope{Under: UnderRule{Limit: n, LookbackWindows: 1, Rule: fmt.Sprintf("a denial needs %s in its window: within less than %v before it", plural.Count(n, "allowed request"), w)}}
	if strings.HasPrefix(p["align"], "elastic") {
		e.Under = UnderRule{Rule: fmt.Sprintf("none: a denial needs %s in its window, which each renewal of its expiry keeps open %v longer, so no span bounds how long before it they came", plural.Count(n, "counted request"), w)}
	}
	if _, e.Grid = alignedGrid(p["align"]); !e.Grid {
		e.Linear = []LinearBound{
			{Windows: 2 * n, Within: 1, WithinPlus: 1, Rule: fmt.Sprintf("at most 2×%d allowed within any %v (two windows of unknown alignment)", n, w)},
			{Rate: n, Windows: 2 * n, Rule: fmt.Sprintf("at most 2×%d + %d×E/%v allowed within any span E (at most ⌈E/W⌉+1 windows)", n, n, w)},
		}
	}
	return e
}

// pinnedReading is the reading of a change of configuration p pins, def
// (the model's default) for "any" or none.
func pinnedReading(p map[string]string, def string) string {
	if r := p[ReconfigureParam]; r != "" && r != ReadingAny {
		return r
	}
	return def
}

// alignedGrid is the fixed grid an align parameter names, if it names one.
func alignedGrid(align string) (Grid, bool) {
	switch align {
	case "epoch":
		return EpochGrid(), true
	case "go-zero":
		return GoZeroGrid(), true
	}
	return Grid{}, false
}

// sameGrid is align, or the epoch for Go's zero time when every window
// lies alike on both (oneGrid).
func sameGrid(align string, oneGrid bool) string {
	if oneGrid && align == "go-zero" {
		return "epoch"
	}
	return align
}

// crossed is every "align=a,count-denied=d[,admit=x]" of the values given,
// in order.
func crossed(aligns, denied, admits []string) []string {
	var out []string
	for _, a := range aligns {
		for _, d := range denied {
			if admits == nil {
				out = append(out, "align="+a+",count-denied="+d)
			}
			for _, x := range admits {
				out = append(out, "align="+a+",count-denied="+d+",admit="+x)
			}
		}
	}
	return out
}
