package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/suite"
)

// preflightAttempts: a check whose requests outlast the window proves
// nothing, and is tried once more.
const preflightAttempts = 2

// maxPreflightLimit bounds the requests the check sends: the largest N
// run and identify grade (bench takes any policy, and then says the
// check was skipped).
const maxPreflightLimit = 10000

// spent is what one pre-flight attempt saw: how many requests of the
// first identity were sent and admitted (it stops at the first
// refusal), whether the second identity's first request was admitted,
// and how long it all took, from the first request leaving to the last
// answer.
type spent struct {
	sent, admitted int
	fresh          bool
	took           time.Duration
}

// preflight checks, before the first spec, that the identity reaches the
// endpoint: one fresh identity spends the policy's N (stopping at its
// first refusal), then a second fresh identity's first request must be
// admitted. A refusal of that request, when the first identity's were
// admitted, means the service counts both as one user: the identity does
// not reach it, and no verdict could mean anything. A fresh identity's
// very first request refused means the same, or a limit spent by
// someone else. Either is an error (exit 2); a check that outlasted the
// window is tried again, then said undecided and not held against the
// service. With one shared limit (--identity none) there is nothing to
// check, nor with N above maxPreflightLimit.
func preflight(ctx context.Context, t suite.Target, p adapters.Policy, identity string, stderr io.Writer) error {
	if t.SharedLimit || t.Request == nil {
		return nil
	}
	if p.Limit > maxPreflightLimit {
		fmt.Fprintf(stderr, "rlconform: pre-flight skipped: it would send N+1 = %d requests (it checks policies of N up to %d); whether --identity %s reaches the service is not checked\n",
			p.Limit+1, maxPreflightLimit, identity)
		return nil
	}
	for attempt := 1; ; attempt++ {
		s, err := spend(ctx, t, p)
		if err != nil {
			return fmt.Errorf("the pre-flight check of --identity %s: %w", identity, err)
		}
		decided, err := s.judge(p, identity)
		switch {
		case err != nil:
			return err
		case decided:
			fmt.Fprintf(stderr, "rlconform: pre-flight: %d request(s) of one identity (%d admitted), then a fresh one's admitted, all within the window %v: the identity (%s) reaches the service\n",
				s.sent, s.admitted, p.Window, identity)
			return nil
		case attempt < preflightAttempts:
			fmt.Fprintf(stderr, "rlconform: pre-flight: its %d requests took %v, longer than the window %v, which proves nothing: trying once more\n",
				s.sent+1, s.took.Round(time.Millisecond), p.Window)
		default:
			fmt.Fprintf(stderr, "rlconform: pre-flight: undecided (its %d requests took %v, longer than the window %v, twice): whether --identity %s reaches the service is not known; grading anyway\n",
				s.sent+1, s.took.Round(time.Millisecond), p.Window, identity)
			return nil
		}
	}
}

// spend makes one attempt: up to N requests of one fresh identity, then
// one of another.
func spend(ctx context.Context, t suite.Target, p adapters.Policy) (spent, error) {
	stamp := time.Now().UnixNano()
	first, second := fmt.Sprintf("rlconform-preflight-%d-a", stamp), fmt.Sprintf("rlconform-preflight-%d-b", stamp)
	var s spent
	var began time.Time
	for s.sent < p.Limit {
		a, err := t.Request(ctx, 0, first)
		if err != nil {
			return s, err
		}
		if s.sent == 0 {
			began = a.Sent
		}
		s.sent++
		if !a.Allowed {
			break
		}
		s.admitted++
	}
	if s.admitted == 0 {
		return s, nil
	}
	b, err := t.Request(ctx, 0, second)
	if err != nil {
		return s, err
	}
	s.fresh, s.took = b.Allowed, b.Returned.Sub(began)
	return s, nil
}

// judge is what an attempt shows: decided when the identity reaches the
// service, an error when it does not, neither (undecided) when the
// second identity was admitted only after a window had passed.
func (s spent) judge(p adapters.Policy, identity string) (decided bool, err error) {
	switch {
	case s.admitted == 0:
		return false, fmt.Errorf("the pre-flight check: the first request of a fresh identity was refused (--identity %s): the service refuses a user it has never seen, so the identity does not reach it, or its limit is spent by other traffic, or is 0; check --identity (nothing was graded)",
			identity)
	case !s.fresh:
		return false, fmt.Errorf("the identity does not reach the service: after %d requests of one identity (%d admitted), a request of a fresh one was refused (--identity %s): the service counts every request as one user's; check --identity (nothing was graded)",
			s.sent, s.admitted, identity)
	case s.took > p.Window:
		return false, nil
	}
	return true, nil
}
