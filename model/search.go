package model

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/rlconform/rlconform/contract"
)

// searchOracle is the interval oracle of any [Profile]: for each user it keeps
// every state of the profile that some admissible choice of instants
// leads to (each operation at a whole millisecond of its interval, no
// earlier than the user's previous one), and judges an answer impossible
// when no state gives it at any such instant. It is exact, so sound: a
// correct limiter is never failed. When a user's states or an interval
// grow past its bounds, that user's later answers are undecided, never
// failed. An allow of cost n ([TimedOp.Cost]) is decided by each state's
// AllowN ([Weighted]); on a profile that is not Weighted, a cost other
// than 1 leaves the user undecided from then on.
type searchOracle struct {
	spec Variant
	n    int
	w    time.Duration
	// longest is the longest window configured (see [Readings]).
	longest time.Duration
	// readings are spec's, once per reading of a change (spec.Readings);
	// most is what a fresh user gets under the configuration in force.
	readings []Variant
	most     int
	users    map[string]*searchUser
	// realTime: intervals are the grader's sent and returned instants,
	// judged by the real-time rule ([AdmissibleMillis]); otherwise they
	// are the limiter's own instants.
	realTime bool
	// budget, when set, bounds the steps of every search (see [Bound]).
	budget *Budget
	// cause is why the latest undecided judgement was so.
	cause Cause
}

// lastCause is why the latest undecided judgement was so ([UndecidedCause]).
func (s *searchOracle) lastCause() Cause { return s.cause }

// undecided records why an answer is undecided.
func (s *searchOracle) undecided(c Cause) Judgement {
	s.cause = c
	return Undecided
}

// The bounds of a search: past them, a user's answers are undecided.
const (
	searchMaxStates = 4096
	searchMaxWidth  = 10_000  // ms in one operation's interval
	searchBudget    = 400_000 // profile steps for one operation, or one burst
)

// overBudget reports whether judging an operation over [lo, hi] from
// states takes more than searchBudget profile steps (a state's instants
// from its low on), or more than s's budget has left, which it spends:
// on a loaded machine a token bucket's thousands of states times
// intervals of hundreds of ms took identify minutes. Past it the user is
// undecided, which no verdict is drawn from.
func (s *searchOracle) overBudget(states []cand, lo, hi int64) bool {
	steps := 0
	for _, c := range states {
		if steps += int(max(0, hi-max(c.low, lo)+1)); steps > searchBudget {
			return true
		}
	}
	return !s.budget.take(int64(steps))
}

type searchUser struct {
	states []cand
	off    bool
	why    Cause // why the user is off
	// transition is when, in ms, the user's history from before the
	// latest change of configuration stops mattering under every reading
	// (see [Readings]): until then an answer no state gives is undecided.
	transition int64
}

// cand is one state the user may be in, after instants no earlier than low.
type cand struct {
	p       Replayable
	low     int64
	n       int // bursts: how many were allowed so far
	reading int // the index of p's reading of a change, in spec.Readings()
}

// key identifies c's state among the user's: its reading and StateKey.
func (c cand) key(user string) string { return strconv.Itoa(c.reading) + "/" + c.p.StateKey(user) }

// millis is the span of whole milliseconds an interval stands for. A
// profile's model decides at whole milliseconds, so a limiter that
// decides on finer instants is judged as if each instant were any whole
// millisecond of its admissible span (see [AdmissibleMillis]).
func (s *searchOracle) millis(lo, hi time.Time) (int64, int64) { return spanMillis(lo, hi, s.realTime) }

// newSearch returns an empty search oracle for a profile.
func newSearch(spec Variant, maxRequests int, window time.Duration) (*searchOracle, error) {
	if _, err := spec.New(maxRequests, window); err != nil {
		return nil, err
	}
	s := &searchOracle{spec: spec, n: maxRequests, w: window, longest: window, readings: spec.Readings(), users: map[string]*searchUser{}}
	s.most = s.freshRemaining()
	return s, nil
}

// Limit implements [Oracle].
func (s *searchOracle) Limit() int { return s.n }

// Window implements [Oracle].
func (s *searchOracle) Window() time.Duration { return s.w }

func (s *searchOracle) user(u string) *searchUser {
	su := s.users[u]
	if su == nil {
		su = &searchUser{states: s.fresh(-1 << 62)}
		s.users[u] = su
	}
	return su
}

// fresh is the profile's model with no history, once per reading of a
// change of configuration, after instants no earlier than low; in real
// time, once per model the limiter may be of what the grader cannot see
// ([Variant.Unseen]).
func (s *searchOracle) fresh(low int64) []cand {
	var out []cand
	for i, v := range s.readings {
		var ps []Replayable // the configuration was validated by newSearch
		if s.realTime {
			ps, _ = v.Unseen(s.n, s.w)
		} else {
			p, _ := v.New(s.n, s.w)
			ps = []Replayable{p}
		}
		for _, p := range ps {
			out = append(out, cand{p: p, low: low, reading: i})
		}
	}
	return out
}

// configure applies a change of configuration to every state of every
// user, at each whole millisecond of the change's interval (a reading may
// settle a user's state at the instant of the change); a user whose
// interval is too wide is undecided from then on.
func (s *searchOracle) configure(op TimedOp) {
	windowChanged := op.Window != s.w
	s.n, s.w = op.Limit, op.Window
	s.longest = max(s.longest, op.Window)
	s.most = s.freshRemaining()
	lo, hi := s.millis(op.Lo, op.Hi)
	readings := windowChanged && len(s.readings) > 1
	for user, su := range s.users {
		if su.off {
			continue
		}
		if hi-lo > searchMaxWidth || len(su.states)*int(hi-lo+1) > searchBudget || !s.budget.take(int64(len(su.states))*(hi-lo+1)) {
			su.giveUp(CauseSearch)
			continue
		}
		next := map[string]cand{}
		for _, c := range su.states {
			for t := lo; t <= hi; t++ {
				q := c.p.Clone().(Replayable)
				q.Configure(time.UnixMilli(t), op.Limit, op.Window)
				nc := cand{p: q, low: c.low, reading: c.reading}
				if _, ok := next[nc.key(user)]; !ok {
					next[nc.key(user)] = nc
				}
			}
		}
		su.states = su.states[:0]
		for _, c := range next {
			su.states = append(su.states, c)
			if readings {
				su.transition = max(su.transition, hi+transitionSpan(c.p.Lifetime(time.UnixMilli(hi), user), s.longest).Milliseconds())
			}
		}
		if len(su.states) > searchMaxStates {
			su.giveUp(CauseSearch)
		}
	}
}

// freshRemaining is the most any reading allows a fresh user under the
// configuration in force: no reading leaves a user with history more.
func (s *searchOracle) freshRemaining() int {
	var models []Replayable
	for _, c := range s.fresh(0) {
		models = append(models, c.p)
	}
	return freshRemaining(models)
}

// Judge implements [Oracle].
func (s *searchOracle) Judge(op TimedOp) (Judgement, string, error) {
	if err := op.validate(); err != nil {
		return Undecided, "", err
	}
	j, why := s.judge(op)
	return j, why, nil
}

func (s *searchOracle) judge(op TimedOp) (Judgement, string) {
	if op.Kind == OpConfigure {
		if err := contract.ValidateConfig(op.Limit, op.Window); err == nil {
			s.configure(op)
		}
		return Certain, ""
	}
	su := s.user(op.User)
	lo, hi := s.millis(op.Lo, op.Hi)
	if op.Kind == OpReset {
		low := int64(-1 << 62)
		if len(su.states) > 0 {
			low = max(lo, slices.MinFunc(su.states, func(a, b cand) int { return cmpInt(a.low, b.low) }).low)
		}
		s.users[op.User] = &searchUser{states: s.fresh(low)}
		return Certain, ""
	}
	if op.Free {
		s.takeFree(su, op.User, lo, hi)
		return s.undecided(CauseNotJudged), "" // its answer is not judged
	}
	if op.Kind == OpRemaining && op.Remaining > s.most {
		su.off = true // no state of any reading leaves more than a fresh user has
		return Impossible, fmt.Sprintf("no reading of the profile leaves more than a fresh user gets, %d", s.most)
	}
	if su.off {
		return s.undecided(su.why), ""
	}
	if s.overBudget(su.states, lo, hi) {
		su.giveUp(CauseSearch)
		return s.undecided(CauseSearch), ""
	}
	next := map[string]cand{}
	answers := map[string]bool{}
	want := ""
	switch op.Kind {
	case OpAllow:
		want = strconv.FormatBool(op.Allowed)
	default:
		want = strconv.Itoa(op.Remaining)
	}
	for _, c := range su.states {
		from := max(c.low, lo)
		if hi-from > searchMaxWidth {
			su.giveUp(CauseSearch)
			return s.undecided(CauseSearch), ""
		}
		for t := from; t <= hi; t++ {
			q := c.p.Clone().(Replayable)
			var got string
			if op.Kind == OpAllow {
				ok, err := AllowN(q, time.UnixMilli(t), op.User, op.cost())
				if err != nil { // a profile that takes no cost: not judged
					su.giveUp(CauseNotJudged)
					return s.undecided(CauseNotJudged), ""
				}
				got = strconv.FormatBool(ok)
			} else {
				n, _ := q.Remaining(time.UnixMilli(t), op.User)
				got = strconv.Itoa(n)
			}
			answers[got] = true
			if got != want {
				continue
			}
			keepEarliest(next, op.User, cand{p: q, low: t, reading: c.reading})
		}
	}
	if len(next) == 0 {
		su.giveUp(CauseReading)
		if lo < su.transition && (op.Kind != OpRemaining || op.Remaining <= s.most) {
			return s.undecided(CauseReading), "" // a reading of the change that is not modelled may give it
		}
		return Impossible, s.impossible(op, answers)
	}
	su.take(next)
	if len(answers) == 1 {
		return Certain, ""
	}
	return s.undecided(CauseTiming), ""
}

// takeFree follows a request of cost 0 by user over [lo, hi] ([TimedOp.Free])
// from every state: it did nothing, at any instant of the interval (the
// earliest stands for them all), or, where the profile lets such a write
// move a window ([freeWriter]), it saved the state at one of them.
func (s *searchOracle) takeFree(su *searchUser, user string, lo, hi int64) {
	if su.off {
		return
	}
	if s.overBudget(su.states, lo, hi) {
		su.giveUp(CauseSearch)
		return
	}
	next := map[string]cand{}
	for _, c := range su.states {
		from := max(c.low, lo)
		if hi-from > searchMaxWidth {
			su.giveUp(CauseSearch)
			return
		}
		if from > hi {
			continue // no instant of the interval comes after the user's previous call
		}
		keepEarliest(next, user, cand{p: c.p, low: from, reading: c.reading})
		if fw, ok := c.p.(freeWriter); !ok || !fw.freeMoves() {
			continue
		}
		for t := from; t <= hi; t++ {
			q := c.p.Clone().(freeWriter)
			q.writeFree(time.UnixMilli(t), user)
			keepEarliest(next, user, cand{p: q, low: t, reading: c.reading})
		}
	}
	if len(next) == 0 {
		su.giveUp(CauseNotJudged) // the next answer cannot be judged: none is failed
		return
	}
	su.take(next)
}

// keepEarliest keeps nc in next, by its state's key for user, unless a
// state of that key is there from an earlier instant.
func keepEarliest(next map[string]cand, user string, nc cand) {
	if old, ok := next[nc.key(user)]; !ok || nc.low < old.low {
		next[nc.key(user)] = nc
	}
}

// take makes next the user's states; past searchMaxStates its later
// answers are undecided.
func (su *searchUser) take(next map[string]cand) {
	su.states = su.states[:0]
	for _, c := range next {
		su.states = append(su.states, c)
	}
	if len(su.states) > searchMaxStates {
		su.giveUp(CauseSearch)
	}
}

// giveUp leaves the user's later answers undecided, for cause c.
func (su *searchUser) giveUp(c Cause) { su.off, su.why = true, c }

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// impossible says why no instant gives the answer: what the profile would
// have answered instead.
func (s *searchOracle) impossible(op TimedOp, answers map[string]bool) string {
	var got []string
	for a := range answers {
		switch a {
		case "true":
			a = "allowed"
		case "false":
			a = "denied"
		}
		got = append(got, a)
	}
	slices.Sort(got)
	name := "its model"
	if p, err := s.spec.New(s.n, s.w); err == nil {
		name = p.Describe()
	}
	if len(got) == 0 {
		return "no instant of the call's interval comes after the user's previous call"
	}
	if op.Kind == OpAllow && op.cost() != 1 {
		name += fmt.Sprintf(", to a request of cost %d,", op.cost())
	}
	return fmt.Sprintf("at every instant of the call's interval, after the user's earlier answers, %s answers %s", name, joinOr(got))
}

func joinOr(s []string) string {
	switch len(s) {
	case 1:
		return s[0]
	case 2:
		return s[0] + " or " + s[1]
	}
	return fmt.Sprintf("%s, or %s", joinComma(s[:len(s)-1]), s[len(s)-1])
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

// JudgeBurst implements [Oracle]: the burst's requests are decided one
// after the other, each at a whole millisecond of [lo, hi] no earlier than
// the one before, and every way gives a number allowed. Each state the
// user may be in is followed on its own (burstFrom), so that a profile
// with many unseen states (a clock of whole seconds at any of 1000
// phases) is judged as one with a few: the numbers allowed are the union
// of every state's, and an impossible answer is impossible from each.
func (s *searchOracle) JudgeBurst(user string, lo, hi time.Time, sent, allowed int) (Judgement, string) {
	su := s.user(user)
	if su.off {
		return s.undecided(su.why), "any number"
	}
	l, h := s.millis(lo, hi)
	budget := searchBudget
	least, most := sent, 0
	survivors := map[string]cand{}
	for _, c := range su.states {
		ends, ok := s.burstFrom(cand{p: c.p, low: c.low, reading: c.reading}, user, l, h, sent, &budget)
		if !ok {
			return s.burstByCount(su, user, l, h, sent, allowed)
		}
		for _, e := range ends {
			least, most = min(least, e.n), max(most, e.n)
			if e.n != allowed {
				continue
			}
			k := e.key(user)
			if old, ok := survivors[k]; !ok || e.low < old.low {
				survivors[k] = cand{p: e.p, low: e.low, reading: e.reading}
			}
		}
	}
	want := spanWord(least, most)
	su.states = su.states[:0]
	for _, c := range survivors {
		su.states = append(su.states, c)
	}
	switch {
	case len(su.states) == 0:
		su.giveUp(CauseReading)
		if l < su.transition {
			return s.undecided(CauseReading), want // a reading of the change that is not modelled may give it
		}
		return Impossible, want
	case len(su.states) > searchMaxStates:
		// Decided, but too many states to follow the user further.
		su.giveUp(CauseSearch)
	}
	if least == most {
		return Certain, want
	}
	return s.undecided(CauseTiming), want
}

// burstByCount judges a burst that the search over every instant could
// not follow, where the user is fresh at the burst and the profile has no
// grid fixed to the clock ([Algorithm.Anchored]): its decisions then
// depend only on the instants' distances from the first request, so every
// admissible schedule is one whose first request is at l, shifted, and the
// search pins it there. A burst that lies within one window of its first
// request under every anchor is so decided by its count. The states it
// ends in stand shifted, so the user is followed no further (its later
// answers are undecided, for the search's bounds).
func (s *searchOracle) burstByCount(su *searchUser, user string, l, h int64, sent, allowed int) (Judgement, string) {
	su.giveUp(CauseSearch)
	if !s.freshAt(su, l, user) {
		return s.undecided(CauseSearch), "any number"
	}
	if !s.spec.Anchored() {
		return s.burstFloor(su, user, l, sent, allowed)
	}
	budget := searchBudget
	least, most := sent, 0
	for _, c := range su.states {
		from := max(c.low, l)
		first := c.p.Clone().(Replayable)
		n := 0
		if ok, _ := first.Allow(time.UnixMilli(from), user); ok {
			n = 1
		}
		if sent == 1 {
			least, most = min(least, n), max(most, n)
			continue
		}
		ends, ok := s.burstFrom(cand{p: first, low: from, n: n, reading: c.reading}, user, from, h, sent-1, &budget)
		if !ok {
			return s.undecided(CauseSearch), "any number"
		}
		for _, e := range ends {
			least, most = min(least, e.n), max(most, e.n)
		}
	}
	j := judgeSpan(least, most, allowed)
	if j == Undecided {
		s.cause = CauseTiming
	}
	return j, spanWord(least, most)
}

// burstFloor judges a burst of a fresh user that the search could not
// follow, on a profile with a grid fixed to the clock (a window at the
// limiter's own whole second, at any of 1000 phases): whatever the
// instants, its first requests, as many as a fresh user may make at l
// one after the other (Remaining), are allowed: no profile refuses a
// user what it has not spent, and a later instant only frees more. Fewer
// allowed than that is impossible; any other count is undecided. A
// burst of 8 to a fresh user, 1 allowed, was left undecided, and a
// window at the limiter's second was identified for a log whose lock
// refused the rest (issue 61).
func (s *searchOracle) burstFloor(su *searchUser, user string, l int64, sent, allowed int) (Judgement, string) {
	floor := sent
	for _, c := range su.states {
		n, err := c.p.Clone().(Replayable).Remaining(time.UnixMilli(max(l, c.low)), user)
		if err != nil {
			return s.undecided(CauseSearch), "any number"
		}
		floor = min(floor, n)
	}
	if allowed < floor {
		return Impossible, fmt.Sprintf("at least %d", floor)
	}
	return s.undecided(CauseSearch), fmt.Sprintf("at least %d", floor)
}

// freshAt reports whether every state user may be in at l answers as a
// fresh user would: none holds anything that still matters.
func (s *searchOracle) freshAt(su *searchUser, l int64, user string) bool {
	for _, c := range su.states {
		if c.p.Lifetime(time.UnixMilli(max(l, c.low)), user) > 0 {
			return false
		}
	}
	return len(su.states) > 0
}

// burstFrom follows a burst of sent requests of user from one state,
// each decided at a whole millisecond of [l, h] no earlier than the one
// before, and returns every state it may end in with how many were
// allowed; false when that takes more than what remains of budget, or
// more states than a search follows.
func (s *searchOracle) burstFrom(start cand, user string, l, h int64, sent int, budget *int) ([]cand, bool) {
	type key struct {
		state string
		n     int
	}
	cur := []cand{start}
	for range sent {
		next := map[key]cand{}
		for _, c := range cur {
			from := max(c.low, l)
			*budget -= int(h-from) + 1
			if *budget < 0 || h-from > searchMaxWidth || !s.budget.take(h-from+1) {
				return nil, false
			}
			for t := from; t <= h; t++ {
				q := c.p.Clone().(Replayable)
				n := c.n
				if ok, _ := q.Allow(time.UnixMilli(t), user); ok {
					n++
				}
				nc := cand{p: q, low: t, n: n, reading: c.reading}
				k := key{nc.key(user), n}
				if old, ok := next[k]; !ok || t < old.low {
					next[k] = nc
				}
			}
		}
		if len(next) > searchMaxStates {
			return nil, false
		}
		cur = cur[:0]
		for _, c := range next {
			cur = append(cur, c)
		}
	}
	return cur, true
}

// Lifetimes bounds how long from now user's state still matters, over
// every state the user may be in: the shortest and the longest.
func (s *searchOracle) Lifetimes(now time.Time, user string) (shortest, longest time.Duration) {
	su := s.users[user]
	if su == nil || su.off {
		return 0, s.w
	}
	shortest = -1
	for _, c := range su.states {
		l := c.p.Lifetime(now, user)
		if shortest < 0 || l < shortest {
			shortest = l
		}
		longest = max(longest, l)
	}
	return max(0, shortest), longest
}

// RetryBounds implements [Oracle]: over every state the user may be in
// and every admissible instant.
func (s *searchOracle) RetryBounds(user string, lo, hi time.Time) (least, most time.Duration) {
	su := s.users[user]
	if su == nil || su.off {
		return 0, s.w * 3 // every profile's wait is under a few windows
	}
	l, h := s.millis(lo, hi)
	if s.overBudget(su.states, l, h) {
		return 0, s.w * 3
	}
	least = -1
	for _, c := range su.states {
		for t := max(c.low, l); t <= h; t++ {
			d := c.p.RetryAfter(time.UnixMilli(t), user)
			if least < 0 || d < least {
				least = d
			}
			most = max(most, d)
		}
	}
	return max(0, least), most
}

// clocked is a model that follows a clock of the limiter's own, ticking
// at a phase the grader cannot see (align=first-second's clock of whole
// seconds): its states at one phase apart from those at another.
type clocked interface {
	// clockPhase is the phase of its clock, in ms.
	clockPhase() int64
}

// clockPhase implements clocked: the ms of the second its clock ticks at
// (0 unless align=first-second).
func (f *fixedWindow) clockPhase() int64 { return f.phase }

// ClockPhases are, for each user o judged and did not leave undecided,
// the phases of the limiter's own clock (ms, [Variant.Unseen]) at which
// some state explains all that user's answers. The oracle follows each
// user at every phase on its own, as if each had a clock of its own;
// one limiter has one, so a phase must explain every user: the caller
// intersects. ok is false when o's profile has no such clock.
func ClockPhases(o Oracle) (perUser [][]int64, ok bool) {
	s, isSearch := o.(*searchOracle)
	if !isSearch || !s.realTime {
		return nil, false
	}
	if ps, _ := s.spec.Unseen(s.n, s.w); len(ps) < 2 {
		return nil, false // a fresh limiter of s.spec is in one state: no clock unseen
	}
	users := slices.Sorted(maps.Keys(s.users))
	for _, u := range users {
		su := s.users[u]
		if su.off {
			continue
		}
		var phases []int64
		for _, c := range su.states {
			p, isClocked := c.p.(clocked)
			if !isClocked {
				return nil, false
			}
			phases = append(phases, p.clockPhase())
		}
		slices.Sort(phases)
		perUser = append(perUser, slices.Compact(phases))
	}
	return perUser, true
}
