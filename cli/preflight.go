package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/adapters/rls"
	"github.com/rlconform/rlconform/suite"
)

// preflightAttempts: a check whose requests outlast the window proves
// nothing, and is tried once more.
const preflightAttempts = 2

// maxPreflightLimit bounds the requests the check sends: the largest N
// run and identify grade (bench takes any policy, and then says the
// check was skipped).
const maxPreflightLimit = 10000

// rlsSpread is how far apart the pre-flight's requests past N to an RLS
// server are sent: in milliseconds of their own, so that a limiter that
// counts requests of one millisecond as one (a ZSET member per
// millisecond) refuses some, and is graded, not taken for a server to
// which no limit applies.
const rlsSpread = 2 * time.Millisecond

// spent is what one pre-flight attempt saw: how many requests of the
// first identity were sent and admitted (it stops at the first
// refusal), whether the second identity's first request was admitted,
// and how long it all took, from the first request leaving to the last
// answer.
type spent struct {
	sent, admitted int
	fresh          bool
	took           time.Duration
	// Of an RLS server's answers (which say what limit applies, or that
	// none does): whether one carried a current_limit, how long the
	// first identity's requests took, and how many admitted answers that
	// said none remained came too soon after another such for any unit
	// of quota to have come back between them (lastZero: when the latest
	// such was sent).
	rls, limited bool
	spanned      time.Duration
	zeroes       int
	lastZero     time.Time
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
// check, nor with N above maxPreflightLimit. An RLS server is asked
// past N too, and its answers read for a server that does not enforce
// (spent.unenforced): an error too, naming what was sent (sent).
func preflight(ctx context.Context, t suite.Target, p adapters.Policy, identity, sent string, stderr io.Writer) error {
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
		if errors.Is(err, rls.ErrNotEnforced) {
			return fmt.Errorf("%w; %s (nothing was graded)", err, sent)
		}
		if err != nil {
			return fmt.Errorf("the pre-flight check of --identity %s: %w", identity, err)
		}
		if err := s.unenforced(p, sent); err != nil {
			return err
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
	// An RLS server is asked up to 2N+1 times, the last N+1 apart by
	// rlsSpread: one that never refuses within them, and says no limit
	// applies, is not enforcing.
	for s.sent < p.Limit || (s.rls && s.admitted == s.sent && s.sent < 2*p.Limit+1) {
		if s.sent >= p.Limit {
			select {
			case <-ctx.Done():
				return s, context.Cause(ctx)
			case <-time.After(rlsSpread):
			}
		}
		a, err := t.Request(ctx, 0, first)
		if err != nil {
			return s, err
		}
		if s.sent == 0 {
			began, s.rls = a.Sent, a.Form == rls.Form
		}
		s.sent++
		s.spanned = a.Returned.Sub(began)
		s.saw(a, p)
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

// saw notes what an RLS server's answer a says of the limit p. An
// admission that says none remained, decided less than W/N after another
// such was sent, is one no profile gives (with N of 2 or more: a log's
// entry leaves W after it was made, a bucket or a weighted counter gives
// back a unit in W/N, a fixed window's new one leaves N-1): it was over
// the limit, and let through.
func (s *spent) saw(a suite.HTTPAnswer, p adapters.Policy) {
	if !s.rls {
		return
	}
	s.limited = s.limited || a.PolicyLimit != nil
	if !a.Allowed || a.Remaining == nil || *a.Remaining != 0 {
		return
	}
	if !s.lastZero.IsZero() && p.Limit >= 2 && a.Returned.Sub(s.lastZero) < p.Window/time.Duration(p.Limit) {
		s.zeroes++
	}
	s.lastZero = a.Sent
}

// unenforced says why an RLS server's answers show that it does not
// enforce a limit on what is sent (nil when they do not): it admitted
// requests after saying none remained, too soon for any quota to have
// come back (a rule in shadow_mode), or it admitted 2N+1 requests within
// the window and named no current_limit (a domain or descriptor no rule
// matches, or an unlimited rule).
func (s spent) unenforced(p adapters.Policy, sent string) error {
	switch {
	case !s.rls:
		return nil
	case s.zeroes >= 2:
		return fmt.Errorf("%w: it admitted %d requests of one identity, each answered with limit_remaining 0 less than W/N (%v) after another such, too soon for any quota to come back: they were over the limit, and let through, as a rule in shadow_mode is (envoyproxy/ratelimit answers so); %s (nothing was graded)",
			rls.ErrNotEnforced, s.zeroes, p.Window/time.Duration(max(1, p.Limit)), sent)
	case !s.limited && s.admitted == s.sent && s.sent > p.Limit && s.spanned <= p.Window:
		return fmt.Errorf("no limit applies to what is sent: the server admitted all %d requests of one identity within %v, none answered with a current_limit: envoyproxy/ratelimit answers so a domain it does not know, a descriptor no rule matches, or an unlimited rule (or the server limits nothing, which these answers cannot tell apart); %s: check --domain and --descriptor against the server's configuration (nothing was graded)",
			s.sent, s.spanned.Round(time.Millisecond), sent)
	}
	return nil
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
