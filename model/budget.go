package model

import "sync/atomic"

// Budget bounds the profile steps that searches take together (every
// replay of a diagnosis, or of an identification): once it is spent, each
// search it bounds gives its users up (their answers undecided), and
// Exhausted says so, so that its caller draws nothing from them. A nil
// *Budget bounds nothing. It is safe for concurrent use.
type Budget struct {
	steps int64
	left  atomic.Int64
	out   atomic.Bool
	done  <-chan struct{} // closed: spent, whatever is left
}

// NewBudget returns a budget of steps profile steps.
func NewBudget(steps int64) *Budget {
	b := &Budget{steps: steps}
	b.left.Store(steps)
	return b
}

// Until makes b spent once done is closed (a context's Done: the time
// the searches may take is up), and returns b.
func (b *Budget) Until(done <-chan struct{}) *Budget {
	b.done = done
	return b
}

// take spends n steps, and reports false when fewer were left (or the
// time is up). A search refused counts in Spent too: what was asked.
func (b *Budget) take(n int64) bool {
	if b == nil {
		return true
	}
	left := b.left.Add(-n)
	select {
	case <-b.done:
		b.out.Store(true)
		return false
	default:
	}
	if left < 0 {
		b.out.Store(true)
		return false
	}
	return true
}

// Exhausted reports whether a search needed more steps than were left.
func (b *Budget) Exhausted() bool { return b != nil && b.out.Load() }

// Spent is how many steps were asked for (more than the budget once
// exhausted): a search that asked for none since an earlier reading did
// not depend on b.
func (b *Budget) Spent() int64 { return b.steps - b.left.Load() }

// Bound makes o's searches spend b (an oracle that does not search, the
// sliding log's, takes few steps and is not bounded), and returns o.
func Bound(o Oracle, b *Budget) Oracle {
	if s, ok := o.(*searchOracle); ok {
		s.budget = b
	}
	return o
}
