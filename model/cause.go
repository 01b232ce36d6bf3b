package model

// Cause is why an oracle left an answer undecided: what a run that wants
// it decided must change.
type Cause int

// The causes of an undecided answer.
const (
	// CauseTiming: instants of the calls' intervals give different answers
	// (an entry, a window edge or a refill within the round trips).
	CauseTiming Cause = iota
	// CauseSearch: the search over every admissible instant outgrew its
	// bounds for the user (states, steps, or an interval wider than it
	// follows), and gave the user up: its later answers are undecided.
	CauseSearch
	// CauseReading: a change of configuration the profile reads several
	// ways, within the time the user's history still matters.
	CauseReading
	// CauseNotJudged: an answer no profile rule decides (a request of cost
	// 0, a cost the profile does not take).
	CauseNotJudged
)

// String says the cause in a few words.
func (c Cause) String() string {
	switch c {
	case CauseSearch:
		return "the search's bounds"
	case CauseReading:
		return "a change of configuration read several ways"
	case CauseNotJudged:
		return "answers no rule decides"
	}
	return "the round trips"
}

// UndecidedCause is why o's latest judgement was undecided (CauseTiming
// when o does not say).
func UndecidedCause(o Oracle) Cause {
	if c, ok := o.(interface{ lastCause() Cause }); ok {
		return c.lastCause()
	}
	return CauseTiming
}
