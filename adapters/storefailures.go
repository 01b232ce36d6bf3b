package adapters

import (
	"fmt"
	"sync"
	"time"

	"github.com/rlconform/rlconform/contract"
)

// StoreFailures records the answers a target said were its store-failure
// policy's (see [contract.HeaderStoreFailure]), in bounded memory: how many, and the
// spans of time they fell in. A run asks it, for each spec, whether any
// fell while the spec ran: such a spec is no verdict. Safe for
// concurrent use; the zero value is ready.
type StoreFailures struct {
	mu    sync.Mutex
	n     int64
	spans []failureSpan
}

type failureSpan struct {
	from, to time.Time
	policy   string
	n        int64
}

// maxFailureSpans bounds the spans kept (the oldest merge past it);
// failureGap is the most time between two answers of one span.
const (
	maxFailureSpans = 256
	failureGap      = time.Second
)

// add records an answer of policy, answered between sent and returned.
func (s *StoreFailures) add(policy string, sent, returned time.Time) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if k := len(s.spans) - 1; k >= 0 && s.spans[k].policy == policy && sent.Sub(s.spans[k].to) < failureGap {
		last := &s.spans[k]
		last.from, last.to, last.n = minTime(last.from, sent), maxTime(last.to, returned), last.n+1
		return
	}
	s.spans = append(s.spans, failureSpan{sent, returned, policy, 1})
	if len(s.spans) > maxFailureSpans {
		a := s.spans[0]
		s.spans[1].from, s.spans[1].n = minTime(a.from, s.spans[1].from), a.n+s.spans[1].n
		s.spans = s.spans[1:]
	}
}

// Between says whether answers of the policy fell between from and to,
// and how many ("" when none did).
func (s *StoreFailures) Between(from, to time.Time) string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sp := range s.spans {
		if sp.to.Before(from) || sp.from.After(to) {
			continue
		}
		return fmt.Sprintf("the target said %d answer(s) from %s to %s were its store-failure policy's (%s): its store failed",
			sp.n, sp.from.Format("15:04:05.000"), sp.to.Format("15:04:05.000"), sp.policy)
	}
	return ""
}

// Count is how many answers the target said were its policy's.
func (s *StoreFailures) Count() int64 {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// policyAnswer checks an answer said to be the store-failure policy's:
// policy must be "allow" or "deny", and the answer (allowed) what that
// policy answers.
func policyAnswer(policy string, allowed bool) error {
	p, err := contract.ParseStoreFailure(policy)
	switch {
	case err != nil || p == contract.StoreFailureError:
		return fmt.Errorf("store_failure %q: want \"allow\" or \"deny\" (an answer of the policy error is a 503)", policy)
	case (p == contract.StoreFailureAllow) != allowed:
		return fmt.Errorf("store_failure %q with allowed %v: that policy answers allowed %v", policy, allowed, !allowed)
	}
	return nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
