package mutants

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rlconform/rlconform/contract"
)

// The reconfiguration mutants plant one fault of Configure around the
// reference implementation of a profile, the same fault for every
// algorithm: no honest reading of a change of configuration explains it
// (docs/profiles.md names the readings). The wrapper runs each call under
// the configuration the fault says, Configure-ing the reference limiter
// just before it.

// configFault says under which configuration a call runs.
type configFault int

const (
	// stickyConfig: a user keeps the configuration in force at its first
	// request until it is Reset (Symfony's fixed window and token bucket
	// store the limit and the interval in the user's state).
	stickyConfig configFault = iota
	// ignoredWindow: Configure takes the limit and keeps the window.
	ignoredWindow
	// ignoredRaise: a user with history keeps the lowest limit it has
	// seen: a raised limit reaches only users without history.
	ignoredRaise
	// oldLimitRemaining: decisions follow the configuration, but a user's
	// remaining is counted under the limit in force at its first request.
	oldLimitRemaining
	// oldWhileActive: a user keeps the configuration in force at its
	// first request while it stays active; one idle for two of its
	// windows takes the one in force (a configuration stored with the
	// user's state, which expires with it: Symfony's fixed window).
	oldWhileActive
)

type limitConfig struct {
	n int
	w time.Duration
}

// reconfigured is the reference limiter of a profile with a configFault.
type reconfigured struct {
	mu    sync.Mutex
	inner contract.RateLimiterContract
	clock func() time.Time
	fault configFault
	cur   limitConfig
	users map[string]limitConfig // the configuration each user keeps
	last  map[string]time.Time   // oldWhileActive: each user's last call
}

// reconfigureMutant is the reference implementation of profile with fault.
func reconfigureMutant(profile string, fault configFault) func(Store) (contract.RateLimiterContract, error) {
	return func(s Store) (contract.RateLimiterContract, error) {
		inner, err := mutated(s, profile, func(src string) (string, error) { return src, nil })
		if err != nil {
			return nil, err
		}
		clock := time.Now
		if s.Clock != nil {
			clock = s.Clock.Now
		}
		return &reconfigured{inner: inner, clock: clock, fault: fault, cur: limitConfig{s.MaxRequests, s.Window},
			users: map[string]limitConfig{}, last: map[string]time.Time{}}, nil
	}
}

// under runs call with the configuration the fault gives user, for a
// decision (query false) or a query of what remains.
func (r *reconfigured) under(ctx context.Context, user string, query bool, call func() error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock()
	kept, seen := r.users[user]
	if last, ok := r.last[user]; r.fault == oldWhileActive && ok && now.Sub(last) >= 2*kept.w {
		seen = false // idle long enough: its state, and the configuration stored with it, expired
	}
	r.last[user] = now
	if !seen {
		kept = r.cur
		r.users[user] = kept
	}
	cfg := r.cur
	switch r.fault {
	case stickyConfig, oldWhileActive:
		cfg = kept
	case ignoredRaise:
		cfg.n = min(kept.n, r.cur.n)
		r.users[user] = limitConfig{cfg.n, cfg.w}
	case oldLimitRemaining:
		if query {
			cfg.n = kept.n
		}
	}
	if err := r.inner.Configure(ctx, cfg.n, cfg.w); err != nil {
		return fmt.Errorf("mutant: %w", err)
	}
	return call()
}

// AllowRequest implements [contract.RateLimiterContract].
func (r *reconfigured) AllowRequest(ctx context.Context, user string) (ok bool, err error) {
	err = r.under(ctx, user, false, func() (err error) { ok, err = r.inner.AllowRequest(ctx, user); return err })
	return ok, err
}

// GetRemainingRequests implements [contract.RateLimiterContract].
func (r *reconfigured) GetRemainingRequests(ctx context.Context, user string) (n int, err error) {
	err = r.under(ctx, user, true, func() (err error) { n, err = r.inner.GetRemainingRequests(ctx, user); return err })
	return n, err
}

// Reset implements [contract.RateLimiterContract]: the user starts afresh.
func (r *reconfigured) Reset(ctx context.Context, user string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.users, user)
	delete(r.last, user)
	return r.inner.Reset(ctx, user)
}

// Configure implements [contract.RateLimiterContract].
func (r *reconfigured) Configure(ctx context.Context, n int, w time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.inner.Configure(ctx, n, w); err != nil {
		return err
	}
	if r.fault == ignoredWindow {
		w = r.cur.w
	}
	r.cur = limitConfig{n, w}
	return nil
}

// reconfigureMutants are the four faults under each profile other than the
// sliding log (whose own mutants are reconfigure-ignored, window-ignored
// and remaining-no-clamp).
func reconfigureMutants() []Mutant {
	faults := []struct {
		name, breaks string
		fault        configFault
		caughtBy     []string
	}{
		{"reconfigure-sticky", "a user keeps the limit and the window in force at its first request until it is reset", stickyConfig, []string{"core/reconfigure"}},
		{"reconfigure-window-ignored", "Configure takes the limit and ignores the window", ignoredWindow, []string{"core/reconfigure"}},
		{"reconfigure-raise-ignored", "a user with history keeps the lowest limit it has seen: a raise reaches only users without history", ignoredRaise, []string{"core/reconfigure"}},
		{"reconfigure-remaining-old-limit", "after a change a user's remaining is counted under the limit in force at its first request", oldLimitRemaining, []string{"strict/lowered-limit"}},
		{"reconfigure-old-while-active", "a change reaches only users without history: an active user keeps the configuration of its first request until it has been idle for two of its windows", oldWhileActive, []string{"strict/raised-limit"}},
	}
	profiles := []struct{ prefix, profile string }{
		{"fw", "fixed-window"}, {"sc", counterProfile}, {"gcra", gcraProfile}, {"tb", bucketProfile},
	}
	var out []Mutant
	for _, p := range profiles {
		for _, f := range faults {
			out = append(out, Mutant{Name: p.prefix + "-" + f.name, Breaks: f.breaks, CaughtBy: f.caughtBy, NeedsRedis: true,
				New: reconfigureMutant(p.profile, f.fault), Profile: p.profile})
		}
	}
	return out
}
