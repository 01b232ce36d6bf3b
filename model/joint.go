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
//	denied at j:   t(j) - t(e_N) <= W - 1
//
// and remaining r (c = N - r entries count) says that e_c counts and
// e_(c+1) does not. Such a system has a solution if and only if its
// constraint graph has no negative cycle, which Bellman-Ford tells: an
// answer is impossible exactly when no one choice of instants for the
// whole history gives every answer so far.
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
func active(e, n int, w int64) edge   { return edge{e, n, w - 1} }
func inactive(e, n int, w int64) edge { return edge{n, e, -w} }

// answer returns the constraints an answer puts on node n, and false when
// it is impossible outright (more entries needed than were ever allowed).
func (j *joint) answer(n int, op TimedOp, limit int, w int64) ([]edge, bool) {
	switch op.Kind {
	case OpAllow:
		e := j.recent(limit)
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
