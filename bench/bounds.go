package bench

import (
	"container/heap"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/rlconform/rlconform/model"
)

// Judge is what a run's decisions are judged against: the profile the
// limiter claims ([model.Variant]; the zero Spec is the sliding log), the
// limit N and window W it was configured with, and the wall-clock instant
// of the run's offset 0 (a window aligned to the epoch has its edges on
// the Unix epoch, so the check needs to know where the run lies on it).
type Judge struct {
	Profile model.Variant
	Limit   int
	Window  time.Duration
	Start   time.Time
}

// Check judges decisions (offsets from j.Start) by the profile's rules
// (see [Judge.Rules]); end is when the run ended: an errored call may
// have taken effect at any instant up to it. It is O(n log n).
func (j Judge) Check(decisions []Decision, end time.Duration) (Exactness, error) {
	began := time.Now()
	r, err := j.rules()
	if err != nil {
		return Exactness{}, err
	}
	ex := r.check(byUser(decisions), end, scope{})
	ex.Took = time.Since(began)
	return ex, nil
}

// profileName is the profile judged, with every parameter.
func (j Judge) profileName() string {
	if full, err := j.Profile.Complete(); err == nil {
		return full.String()
	}
	return j.Profile.String()
}

// Rules says, one line each, what the check holds the profile to: its
// overshoot bounds and its under-admission rule.
func (j Judge) Rules() ([]string, error) {
	r, err := j.rules()
	if err != nil {
		return nil, err
	}
	var out []string
	if r.epoch {
		out = append(out, fmt.Sprintf("at most %d allowed in each window [kW, (k+1)W) of %s", r.n, r.grid))
	}
	for _, b := range r.linear {
		out = append(out, b.rule)
	}
	return append(out, r.under.rule), nil
}

// rules are the checks of one profile, N per W.
type rules struct {
	profile string
	n, w    int64 // W in ns
	start   int64 // the run's offset 0, in Unix ns
	// epoch: at most N allowed in each window [o+kW, o+(k+1)W) of a fixed
	// grid, judged by assigning each allowed call to a window its span
	// meets (earliest deadline first: a maximum matching). The grid's
	// origin o (Unix ns) is the epoch, or for align=go-zero an edge of
	// Go's grid (time.Time.Truncate's, counted from 0001-01-01 UTC).
	epoch  bool
	origin int64
	grid   string // the grid's name
	linear []linearBound
	under  underRule
}

// linearBound is a bound on the allowed calls of one user whose admissible
// instants all lie within a span of E ns: count × W − rate × E ≤ k, over
// any E (within 0) or only E < within.
type linearBound struct {
	rate   int64
	k      i128
	within int64
	rule   string
}

// bound is the most calls the bound admits within e ns.
func (b linearBound) bound(e, w int64) int { return b.k.add(mul128(b.rate, e)).floorDiv(w) }

// underRule is what a denial needs, by the profile: log, at least limit
// allowed calls (or, countDenied, calls of any outcome) before it within
// less than lookback; bucket, a bucket of capacity holding less than one
// token whatever the timing.
type underRule struct {
	bucket      bool
	limit       int64
	lookback    int64
	countDenied bool
	capacity    int64
	rule        string
}

func (j Judge) rules() (rules, error) {
	if j.Limit < 1 || j.Window <= 0 {
		return rules{}, fmt.Errorf("bench: limit %d per %v: want at least 1 per 1ns", j.Limit, j.Window)
	}
	n, w := int64(j.Limit), int64(j.Window)
	env, err := j.Profile.Envelope(n, j.Window)
	if err != nil {
		return rules{}, fmt.Errorf("bench: the profile judged: %w", err)
	}
	r := rules{profile: j.profileName(), n: n, w: w, start: j.Start.UnixNano(), epoch: env.Grid}
	if grid, ok := j.Profile.Grid(); ok && env.Grid {
		// An edge near the run's start: Go's zero time in ns is out of
		// an int64's range.
		r.origin, r.grid = grid.Floor(time.Unix(0, r.start), j.Window).UnixNano(), grid.Name
	}
	for _, b := range env.Linear {
		r.linear = append(r.linear, linearBound{rate: b.Rate, k: mul128(b.Windows, w).sub(i128{lo: uint64(b.Less)}), within: b.Within*w + b.WithinPlus, rule: b.Rule})
	}
	u := env.Under
	r.under = underRule{bucket: u.Bucket, capacity: u.Capacity, limit: u.Limit, lookback: u.LookbackWindows * w, countDenied: u.CountDenied, rule: u.Rule}
	return r, nil
}

// check is Check on decisions already grouped by [byUser], judging the
// calls sc judges (every one for the zero scope).
func (r rules) check(grouped []Decision, end time.Duration, sc scope) Exactness {
	ex := Exactness{Profile: r.profile}
	if sc.k == nil {
		sc.k = &scratch{}
	}
	k := sc.k
	allowed, judged, flagged := k.allowed[:0], k.judged[:0], k.flagged[:0]
	defer func() { k.allowed, k.judged, k.flagged = allowed, judged, flagged }()
	eachUserAt(grouped, func(at int, calls []Decision) {
		mine := sc.part(at, len(calls))
		denied := false
		allowed, judged = allowed[:0], judged[:0]
		for i, c := range calls {
			switch c.Outcome {
			case Denied:
				denied = true
			case Errored:
				ex.Failed++
			case Allowed:
				allowed, judged = append(allowed, c), append(judged, mine.judges(i))
			}
		}
		if denied {
			ex.UsersAtLimit++
		}
		flagged = slices.Grow(flagged[:0], len(allowed))[:len(allowed)]
		clear(flagged)
		worst := ex.Worst
		if r.epoch {
			r.epochWindows(&ex, allowed, flagged, judged)
		}
		for _, b := range r.linear {
			r.linearCheck(&ex, b, allowed, flagged, judged, k)
		}
		if ex.Worst != worst { // found this user's: a view of allowed, reused for the next
			ex.Worst.Calls = slices.Clone(ex.Worst.Calls)
		}
		for i, f := range flagged {
			if f && judged[i] {
				ex.Overshoot++
			}
		}
		if r.under.bucket {
			r.bucketUnder(&ex, calls, end, mine)
		} else {
			underAdmission(&ex, calls, r.under, end, mine)
		}
	})
	ex.Decisions = len(grouped) - ex.Failed
	return ex
}

// found offers a set of allowed calls that break a bound as the worst
// window: the one past its bound by the largest part of it, then the one
// of the lowest bound (the most concentrated). The window's Calls are a
// view of calls, which check copies once it is done with the user: a
// limiter that lets everything through grows its worst window at every
// call, and a copy each time was quadratic (TestAFailoverIsAFigure, half
// a second of such calls in process, did not finish in 10 minutes).
func found(ex *Exactness, calls []Decision, count, bound int, from, to time.Duration, rule string) {
	if !worse(count, bound, ex.Worst) {
		return
	}
	ex.Worst = &Window{User: calls[0].User, Allowed: count, Bound: bound, Rule: rule, From: from, To: to, Calls: calls}
}

// worse reports whether a set of count allowed calls past bound is worse
// than the window w (nil: none yet): past its bound by a larger part of
// it, (count−bound)/bound, or by as much with a lower bound.
func worse(count, bound int, w *Window) bool {
	if w == nil {
		return true
	}
	mine, theirs := (count-bound)*max(1, w.Bound), (w.Allowed-w.Bound)*max(1, bound)
	return mine > theirs || (mine == theirs && bound < w.Bound)
}

// linearCheck finds, for every allowed call j (sorted by Sent), a set of
// calls i..j that breaks b: with E the span from the earliest admissible
// instant of call i to the latest of any call p..j (p the first call
// within b.within of it, or the first call of all), count × W − rate × E
// > k. E bounds the span of i..j from above, so a set found breaks the
// bound whatever the instants. For a fixed p and j the best i minimises
// i×W − rate×lo_i: a deque of minima; p only moves forward as j grows, and
// a deque of maxima keeps the latest instant. Linear. Only the sets that
// end with a call judged[j] are reported.
func (r rules) linearCheck(ex *Exactness, b linearBound, allowed []Decision, flagged, judged []bool, k *scratch) {
	if len(allowed) == 0 {
		return
	}
	base := earliest(allowed[0])
	lo := func(i int) int64 { return int64(earliest(allowed[i]) - base) }
	hi := func(i int) int64 { return int64(latest(allowed[i]) - base) }
	g := slices.Grow(k.g[:0], len(allowed))[:len(allowed)]
	k.g = g
	for i := range allowed {
		g[i] = mul128(int64(i), r.w).sub(mul128(b.rate, lo(i)))
	}
	maxQ, minQ := k.maxQ[:0], k.minQ[:0]
	defer func() { k.maxQ, k.minQ = maxQ[:0], minQ[:0] }()
	p := 0
	for j := range allowed {
		for len(maxQ) > 0 && hi(maxQ[len(maxQ)-1]) <= hi(j) {
			maxQ = maxQ[:len(maxQ)-1]
		}
		maxQ = append(maxQ, j)
		for len(minQ) > 0 && g[minQ[len(minQ)-1]].cmp(g[j]) >= 0 {
			minQ = minQ[:len(minQ)-1]
		}
		minQ = append(minQ, j)
		for b.within > 0 && p <= j && hi(maxQ[0])-lo(p) >= b.within {
			p++
			if maxQ[0] < p {
				maxQ = maxQ[1:]
			}
			if len(minQ) > 0 && minQ[0] < p {
				minQ = minQ[1:]
			}
		}
		if p > j {
			continue
		}
		i, m := minQ[0], hi(maxQ[0])
		count := j - i + 1
		v := mul128(int64(count), r.w).sub(mul128(b.rate, m-lo(i)))
		if v.cmp(b.k) <= 0 || !judged[j] {
			continue
		}
		flagged[j] = true
		found(ex, allowed[i:j+1], count, b.bound(m-lo(i), r.w), allowed[i].Sent, allowed[maxQ[0]].Returned, b.rule)
	}
}

// epochWindows assigns each allowed call to a window [o+kW, o+(k+1)W) of
// the fixed grid (origin o: the epoch's, or Go's zero time's for
// align=go-zero) that its admissible span meets, at most N to a window,
// earliest last window first: a maximum assignment (windows are taken in
// order, and a call that can wait for a later window leaves its place to
// one that cannot). A call left over is past the limit whatever the instants;
// the worst window is reported with the windows j..k it proves full
// (Hall's condition: more calls whose spans lie within them than N each),
// when a call judged[x] is left over.
func (r rules) epochWindows(ex *Exactness, allowed []Decision, flagged, judged []bool) {
	if len(allowed) == 0 {
		return
	}
	a := r.assignEpochWindows(allowed, flagged)
	if a.failed == 0 || !a.judgedLeftOver(judged) {
		return
	}
	r.reportEpochProof(ex, a.worstProof(allowed))
}

// epochRecord is one window of the fixed grid the assignment visited.
type epochRecord struct {
	k, maxLast int64 // the window, and the last window of any call assigned to it
	full       bool
	from       int // the first call assigned to it, in assignedOrder
}

// epochAssignment is the outcome of assigning allowed calls to the fixed
// grid's windows: which call went where and which were left over, kept so that a
// call left over can be proved past the limit.
type epochAssignment struct {
	first, last   []int64 // each call's first and last admissible window
	records       []epochRecord
	assignedOrder []int   // calls in the order assigned
	assignedTo    []int64 // each assigned call's window
	failedAt      []int64 // each call left over: the window it was left over in
	isFailed      []bool
	failed        int
	failWindows   []int // records with a call left over
}

// assignEpochWindows makes the assignment epochWindows describes, window
// after window, and flags each call left over (no window of its span had
// room for it).
func (r rules) assignEpochWindows(allowed []Decision, flagged []bool) *epochAssignment {
	window := func(d time.Duration) int64 { return floorDiv(r.start+int64(d)-r.origin, r.w) }
	n := len(allowed)
	a := &epochAssignment{
		first: make([]int64, n), last: make([]int64, n),
		assignedTo: make([]int64, n), failedAt: make([]int64, n), isFailed: make([]bool, n),
	}
	for i, d := range allowed {
		a.first[i], a.last[i] = window(earliest(d)), window(latest(d))
	}
	var (
		pending = &byLast{last: a.last}
		next    = 0
		k       = a.first[0]
	)
	for next < n || pending.Len() > 0 {
		if pending.Len() == 0 {
			k = max(k, a.first[next])
		}
		for next < n && a.first[next] <= k {
			heap.Push(pending, next)
			next++
		}
		rec := epochRecord{k: k, maxLast: k, from: len(a.assignedOrder)}
		for c := int64(0); c < r.n && pending.Len() > 0; c++ {
			x := heap.Pop(pending).(int)
			a.assignedTo[x] = k
			a.assignedOrder = append(a.assignedOrder, x)
			rec.maxLast = max(rec.maxLast, a.last[x])
		}
		rec.full = int64(len(a.assignedOrder)-rec.from) == r.n
		for pending.Len() > 0 && a.last[pending.idx[0]] <= k {
			x := heap.Pop(pending).(int)
			a.failedAt[x], a.isFailed[x] = k, true
			flagged[x] = true
			a.failed++
			if len(a.failWindows) == 0 || a.failWindows[len(a.failWindows)-1] != len(a.records) {
				a.failWindows = append(a.failWindows, len(a.records))
			}
		}
		a.records = append(a.records, rec)
		k++
	}
	return a
}

// epochProof is a set of allowed calls whose spans all lie within the
// windows firstK..lastK, excess more of them than those windows may allow.
type epochProof struct {
	set           []Decision
	excess        int
	firstK, lastK int64
}

// worstProof is the worst of the proofs of the first few windows with a
// call left over: the one most past its bound per window, then the one of
// the fewest windows.
func (a *epochAssignment) worstProof(allowed []Decision) *epochProof {
	var best *epochProof
	for _, at := range a.failWindows[:min(len(a.failWindows), 16)] {
		p := a.proof(at, allowed)
		windows := p.lastK - p.firstK
		if best == nil || int64(p.excess)*(best.lastK-best.firstK+1) > int64(best.excess)*(windows+1) ||
			(int64(p.excess)*(best.lastK-best.firstK+1) == int64(best.excess)*(windows+1) && windows < best.lastK-best.firstK) {
			best = &p
		}
	}
	return best
}

// judgedLeftOver reports whether a call judged[x] was left over.
func (a *epochAssignment) judgedLeftOver(judged []bool) bool {
	for x, failed := range a.isFailed {
		if failed && judged[x] {
			return true
		}
	}
	return false
}

// proof is the proof of record at, a window k with a call left over: the
// windows j..k it proves full, found by going back while the window before
// was visited, full, and took only calls that had to be in by k; with the
// calls assigned to them and those left over in them.
func (a *epochAssignment) proof(at int, allowed []Decision) epochProof {
	k := a.records[at].k
	j := at
	for j > 0 && a.records[j-1].k == a.records[j].k-1 && a.records[j-1].full && a.records[j-1].maxLast <= k {
		j--
	}
	p := epochProof{firstK: a.records[j].k, lastK: k}
	for _, x := range a.assignedOrder[a.records[j].from:] {
		if a.assignedTo[x] <= k {
			p.set = append(p.set, allowed[x])
		}
	}
	for x := range allowed {
		if a.isFailed[x] && a.failedAt[x] >= p.firstK && a.failedAt[x] <= k && a.first[x] >= p.firstK && a.last[x] <= k {
			p.set = append(p.set, allowed[x])
			p.excess++
		}
	}
	return p
}

// reportEpochProof reports the calls of best as breaking the fixed grid's
// limit, naming the grid and the windows they fill.
func (r rules) reportEpochProof(ex *Exactness, best *epochProof) {
	set := best.set
	slices.SortStableFunc(set, func(a, b Decision) int { return int(a.Sent - b.Sent) })
	edge := func(k int64) time.Duration { return time.Duration(k*r.w + r.origin - r.start) }
	rule := fmt.Sprintf("at most %d allowed in each window [kW, (k+1)W) of %s: %d in the %d window(s) [%+.3fms, %+.3fms)",
		r.n, r.grid, len(set), best.lastK-best.firstK+1, float64(edge(best.firstK))/1e6, float64(edge(best.lastK+1))/1e6)
	from, to := set[0].Sent, set[0].Returned
	for _, c := range set {
		to = max(to, c.Returned)
	}
	found(ex, set, len(set), len(set)-best.excess, from, to, rule)
}

// byLast is a heap of call indexes by their last window.
type byLast struct {
	idx  []int
	last []int64
}

func (h *byLast) Len() int           { return len(h.idx) }
func (h *byLast) Less(a, b int) bool { return h.last[h.idx[a]] < h.last[h.idx[b]] }
func (h *byLast) Swap(a, b int)      { h.idx[a], h.idx[b] = h.idx[b], h.idx[a] }
func (h *byLast) Push(x any)         { h.idx = append(h.idx, x.(int)) }
func (h *byLast) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// bucketUnder finds the denied calls of one user (GCRA, or a bucket
// refilled continuously) at which the bucket held a token whatever the
// timing. The bucket at the instant t of a denial d holds, for the last
// instant s it was full (or made, full), C + N(t−s)/W − A tokens, with A
// the requests allowed from s to d; a denial needs that below 1. A call
// allowed from s on was decided after s, so its latest admissible instant
// is at least s; one decided before d was sent before d's answer. So a
// denial is explained only if, for some s ≤ t,
//
//	#{a : latest(a) ≥ s, earliest(a) ≤ latest(d)} > C − 1 + N·max(0, earliest(d) − s)/W
//
// The count only falls as s passes the latest instants, so s need only be
// one of them (at most earliest(d)), or earliest(d) itself: a prefix
// maximum over the calls sorted by their latest instant, and two binary
// searches per denial. Errored calls count as allowed, up to end; calls of
// another answer, within their own span. The calls a streaming judge let
// go count through sc.carry. Only the denials sc judges are checked (and
// counted in ex.Denials, and in ex.Decided when C allowed calls surely lay
// within less than the time of one token, W/N, before it: the bucket was
// then empty whatever the timing).
func (r rules) bucketUnder(ex *Exactness, calls []Decision, end time.Duration, sc scope) {
	k := sc.k
	los, his, sure := k.los[:0], k.his[:0], &k.sure
	sure.reset()
	defer func() { k.los, k.his = los, his }()
	var base time.Duration
	if len(calls) > 0 {
		base = earliest(calls[0])
	}
	for _, c := range calls {
		switch c.Outcome {
		case Allowed, Other:
			los, his = append(los, int64(earliest(c)-base)), append(his, int64(latest(c)-base))
			if c.Outcome == Allowed {
				sure.add(c)
			}
		case Errored:
			lo, hi := model.Admissible(c.Sent, end)
			los, his = append(los, int64(lo-base)), append(his, int64(hi-base))
		}
	}
	slices.Sort(los)
	slices.Sort(his)
	sure.sort()
	best, bestAt := r.bestRefills(his, k)
	need := mul128(r.under.capacity-1, r.w)
	token := time.Duration(r.w / r.n)
	for i, d := range calls {
		if d.Outcome != Denied || !sc.judges(i) {
			continue
		}
		ex.Denials++
		if sure.count(d, token) >= r.under.capacity {
			ex.Decided++
			continue
		}
		lo, hi := int64(earliest(d)-base), int64(latest(d)-base)
		before, _ := slices.BinarySearch(los, hi+1) // earliest ≤ latest(d)
		// s = earliest(d): the calls that may be from then on, no refill.
		gone, _ := slices.BinarySearch(his, lo) // latest < earliest(d)
		worst := mul128(int64(before-gone), r.w)
		s := lo
		// s = his[k] ≤ earliest(d): (before − less)×W − N(earliest(d) − s).
		if upTo, _ := slices.BinarySearch(his, lo+1); upTo > 0 {
			v := mul128(int64(before), r.w).sub(mul128(r.n, lo)).add(best[upTo-1])
			if v.cmp(worst) > 0 {
				worst, s = v, his[bestAt[upTo-1]]
			}
		}
		// s among the calls let go: every kept call is after it.
		if c := sc.carry; c != nil && c.any {
			v := c.m.sub(mulSigned(r.n, int64(base))).add(mul128(int64(before), r.w)).sub(mul128(r.n, lo))
			if v.cmp(worst) > 0 {
				worst, s = v, math.MinInt64
			}
		}
		if worst.cmp(need) > 0 {
			continue
		}
		ex.UnderAdmitted++
		sBelow, _ := slices.BinarySearch(his, s)
		counted := before - sBelow
		if ex.WorstUnder == nil || counted < ex.WorstUnder.Counted {
			var nearby []Decision
			for _, a := range calls {
				if a.Outcome != Denied && earliest(a) <= latest(d) && int64(latest(Decision{Sent: a.Sent, Returned: returnedOrEnd(a, end)})-base) >= s {
					nearby = append(nearby, a)
				}
			}
			ex.WorstUnder = &UnderAdmission{Call: d, User: d.User, Counted: counted, Nearby: nearby, Rule: r.under.rule}
		}
	}
}

// bestRefills is, for each k, the largest N×his[i] − less(i)×W over i ≤
// k and the i that has it, with less(i) the calls whose latest instant is
// before his[i] (the first of equals has the most calls at or after it):
// his are the latest instants of the calls that may spend a token,
// sorted.
func (r rules) bestRefills(his []int64, k *scratch) ([]i128, []int) {
	best := slices.Grow(k.best[:0], len(his))[:len(his)]
	bestAt := slices.Grow(k.bestAt[:0], len(his))[:len(his)]
	k.best, k.bestAt = best, bestAt
	less := 0
	for i, h := range his {
		if i > 0 && h != his[i-1] {
			less = i
		}
		v := mul128(r.n, h).sub(mul128(int64(less), r.w))
		best[i], bestAt[i] = v, i
		if i > 0 && best[i-1].cmp(v) >= 0 {
			best[i], bestAt[i] = best[i-1], bestAt[i-1]
		}
	}
	return best, bestAt
}

// bucketCarry sums up, for a bucket's rule, the calls that may have spent
// a token which a streaming judge let go ([Stream]): m is the largest
// Ev(s)×W + N×s over their latest instants s (Unix ns, widened as the
// judgement's), Ev(s) the calls let go whose latest instant is s or
// later. Every call kept ends after every one let go (or, read late, is
// counted as if it did: more calls, never fewer), so for s among them
// the count of a denial's rule is Ev(s) plus every kept call that
// may begin by the denial's end.
type bucketCarry struct {
	any bool
	m   i128
}

// let adds calls let go, his their latest instants (sorted, each at
// least every one let go before), to the carry of a bucket of n per w. A
// call read late may end before one let go already: it is then counted
// at every instant let go before too, and for its own instant s the term
// of the first instant let go before at or after s is at least its own
// (as many calls or more, a later instant), so the carry is never less
// than the sum it stands for: a denial it explains is explained.
func (c *bucketCarry) let(his []int64, n, w int64) {
	k := int64(len(his))
	if k == 0 {
		return
	}
	if c.any {
		c.m = c.m.add(mul128(k, w))
	}
	for i, s := range his {
		v := mul128(k-int64(i), w).add(mulSigned(n, s))
		if !c.any || v.cmp(c.m) > 0 {
			c.m, c.any = v, true
		}
	}
}

// shifted is the carry with every instant moved by delta.
func (c *bucketCarry) shifted(delta time.Duration, n int64) *bucketCarry {
	if c == nil || !c.any {
		return c
	}
	return &bucketCarry{any: true, m: c.m.add(mulSigned(n, int64(delta)))}
}
