package model

// joint is one user's sequential history as a system of difference
// constraints over the instants of its operations (integer ms): each
// instant lies in its call's interval, instants never decrease along the
// history (one clock), and each answer is one or two constraints. With
// instants non-decreasing, the entries active at an operation are a suffix
// of the allowed ones, so "allowed while fewer than N count" says exactly
// that the Nth most recent entry has left the window:
//
//	allowed at j:  t(e_N) <= t(j) - W
//	denied at j:   t(j) - t(e_N) <= W - 1   (W in real time: see MayCount)
//
// and remaining r (c = N - r entries count) says that e_c counts and
// e_(c+1) does not. An allowed request of cost n is n entries at its one
// instant (its node, n times among the allowed), and its answer is the
// one above with e_(N-n+1) for e_N: it fits when at most N-n entries
// count. Such a system has a solution if and only if its
// constraint graph has no negative cycle, which Bellman-Ford tells: an
// answer is impossible exactly when no one choice of instants for the
// whole history gives every answer so far.
//
// Entries that can no longer count at any later instant are settled
// (settle): their nodes are dropped once the bounds they imply are folded
// into the remaining nodes' intervals, so the system holds what can still
// change an answer, not the whole history.
type joint struct {
	lo, hi  []int64 // bounds of each operation's instant (node i+1)
	edges   []edge  // t(to) - t(from) <= w
	allowed []int   // nodes of the allowed entries since the last reset
	off     bool    // bursts (unordered entries) or a failure: no longer judged
}

// edge is the constraint t(to) - t(from) <= w; node 0 is the instant 0.
type edge struct {
	from, to int
	w        int64
}

// add appends an operation's instant in [lo, hi] after the previous one
// and returns its node.
func (j *joint) add(lo, hi int64) int {
	j.lo, j.hi = append(j.lo, lo), append(j.hi, hi)
	n := len(j.lo)
	j.edges = append(j.edges, edge{0, n, hi}, edge{n, 0, -lo})
	if n > 1 {
		j.edges = append(j.edges, edge{n, n - 1, 0}) // t(n-1) <= t(n)
	}
	return n
}

// recent is the k-th most recent allowed entry (1-based), or 0 if none.
func (j *joint) recent(k int) int {
	if k < 1 || k > len(j.allowed) {
		return 0
	}
	return j.allowed[len(j.allowed)-k]
}

// active says "entry e counts at node n" (window w), inactive the opposite.
// In whole milliseconds of real time (realTime), an entry exactly w old
// may still count ([MayCount]).
func active(e, n int, w int64, realTime bool) edge {
	if realTime {
		return edge{e, n, w}
	}
	return edge{e, n, w - 1}
}
func inactive(e, n int, w int64) edge { return edge{n, e, -w} }

// answer returns the constraints an answer puts on node n, and false when
// it is impossible outright (more entries needed than were ever allowed).
func (j *joint) answer(n int, op TimedOp, limit int, w int64, realTime bool) ([]edge, bool) {
	active := func(e, n int, w int64) edge { return active(e, n, w, realTime) }
	switch op.Kind {
	case OpAllow:
		// Cost c fits when at most N-c entries count: the (N-c+1)-th most
		// recent has left (for c = 1, the N-th).
		k := limit - op.cost() + 1
		if k < 1 { // more than N: never allowed
			return nil, !op.Allowed
		}
		e := j.recent(k)
		switch {
		case op.Allowed && e == 0:
			return nil, true
		case op.Allowed:
			return []edge{inactive(e, n, w)}, true
		case e == 0:
			return nil, false
		}
		return []edge{active(e, n, w)}, true
	case OpRemaining:
		c := limit - op.Remaining
		switch {
		case op.Remaining < 0 || c < 0:
			return nil, false
		case op.Remaining == 0: // at least N count
			if e := j.recent(limit); e != 0 {
				return []edge{active(e, n, w)}, true
			}
			return nil, false
		}
		var out []edge
		if c > 0 {
			e := j.recent(c)
			if e == 0 {
				return nil, false
			}
			out = append(out, active(e, n, w))
		}
		if e := j.recent(c + 1); e != 0 {
			out = append(out, inactive(e, n, w))
		}
		return out, true
	}
	return nil, true
}

// feasible reports whether the constraints, with extra, have a solution.
func (j *joint) feasible(extra []edge) bool {
	nodes := len(j.lo) + 1
	dist := make([]int64, nodes) // from a virtual source at distance 0 to all
	edges := append(j.edges[:len(j.edges):len(j.edges)], extra...)
	for range nodes + 1 { // a solution settles within nodes rounds
		changed := false
		for _, e := range edges {
			if d := dist[e.from] + e.w; d < dist[e.to] {
				dist[e.to], changed = d, true
			}
		}
		if !changed {
			return true
		}
	}
	return false
}

// reset forgets the user's history: after a Reset, no earlier entry
// counts, and what follows is judged from scratch (sound: only the order
// with earlier operations is forgotten).
func (j *joint) reset() { *j = joint{} }

// settleAt is how many nodes the system holds before settle looks for
// nodes to drop: enough that it runs rarely.
func settleAt(limit int) int { return 4*limit + 64 }

// settle drops the oldest nodes once no entry among them can count at any
// later instant: every allowed entry before the first one that may still
// count at the latest node's earliest instant, and every operation before
// that entry. The bounds the dropped nodes put on the kept ones are folded
// into the kept nodes' intervals first (their tightest bounds, by shortest
// paths through the whole system), so dropping them only forgets relations
// between kept nodes that ran through dropped ones: sound, and the system
// stays as large as one window's operations, not the whole history.
//
// An entry dropped here would count again only if the window were raised
// past it, which the oracle does not judge (see [intervalOracle]).
func (j *joint) settle(w int64, limit int, realTime bool) {
	nodes := len(j.lo)
	if j.off || nodes < settleAt(limit) {
		return
	}
	upper, lower, ok := j.bounds()
	if !ok {
		return
	}
	now := lower[nodes]
	keep := nodes // first node kept
	for _, e := range j.allowed {
		if MayCount(now-upper[e], w, realTime) {
			keep = e
			break
		}
	}
	if keep <= 1 {
		return
	}
	shift := keep - 1
	lo, hi := make([]int64, 0, nodes-shift), make([]int64, 0, nodes-shift)
	var edges []edge
	for n := keep; n <= nodes; n++ {
		lo, hi = append(lo, lower[n]), append(hi, upper[n])
		m := n - shift
		edges = append(edges, edge{0, m, upper[n]}, edge{m, 0, -lower[n]})
		if m > 1 {
			edges = append(edges, edge{m, m - 1, 0})
		}
	}
	for _, e := range j.edges { // the answers' constraints between kept nodes
		order := e.from == e.to+1 && e.w == 0
		if e.from >= keep && e.to >= keep && !order {
			edges = append(edges, edge{e.from - shift, e.to - shift, e.w})
		}
	}
	var allowed []int
	for _, a := range j.allowed {
		if a >= keep {
			allowed = append(allowed, a-shift)
		}
	}
	j.lo, j.hi, j.edges, j.allowed = lo, hi, edges, allowed
}

// bounds returns the tightest bounds the system puts on every node's
// instant (index i for node i; index 0 is unused), and false when it has
// no solution: upper by shortest paths from node 0, lower by shortest
// paths to it.
func (j *joint) bounds() (upper, lower []int64, ok bool) {
	nodes := len(j.lo) + 1
	const inf = int64(1) << 62
	relax := func(reverse bool) ([]int64, bool) {
		dist := make([]int64, nodes)
		for i := range dist {
			dist[i] = inf
		}
		dist[0] = 0
		for range nodes + 1 {
			changed := false
			for _, e := range j.edges {
				from, to := e.from, e.to
				if reverse {
					from, to = to, from
				}
				if dist[from] == inf {
					continue
				}
				if d := dist[from] + e.w; d < dist[to] {
					dist[to], changed = d, true
				}
			}
			if !changed {
				return dist, true
			}
		}
		return nil, false
	}
	up, ok := relax(false)
	if !ok {
		return nil, nil, false
	}
	down, ok := relax(true)
	if !ok {
		return nil, nil, false
	}
	lower = make([]int64, nodes)
	for i := range down {
		lower[i] = -down[i]
	}
	return up, lower, true
}
