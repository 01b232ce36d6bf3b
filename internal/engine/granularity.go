package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
)

// The windows of the granularity probe: one that is not a whole number of
// seconds, then one that is.
const (
	probeFineWindow  = 1500 * time.Millisecond
	probeWholeWindow = 2 * time.Second
)

// validGranularity checks a target's declared window granularity.
func validGranularity(t Target) error {
	g := t.Capabilities.WindowGranularity
	if t.Capabilities.UnitWindows && g != 0 {
		return fmt.Errorf("target %s: Capabilities.UnitWindows and WindowGranularity exclude each other", t.Name)
	}
	if g == 0 {
		return nil
	}
	if g < time.Millisecond || g > contract.MaxWindowGranularity || g%time.Millisecond != 0 {
		return fmt.Errorf("target %s: Capabilities.WindowGranularity %v: want 0 (any window) or whole milliseconds from 1ms to %v", t.Name, g, contract.MaxWindowGranularity)
	}
	return nil
}

// learnGranularity sets, once per run, the unit of the windows the run
// chooses for t: the one t declares, or, for a target with Configure that
// declares none, what one probe finds (a window of 1.5s refused with
// ErrInvalidConfig and one of 2s taken: whole seconds). The run's windows
// are then rounded up to it, and its report says so: a window the grader
// chose is one the target takes.
func (r *runner) learnGranularity(ctx context.Context, t Target) {
	if r.granularity != 0 {
		return
	}
	r.granularity = time.Millisecond
	if t.Capabilities.UnitWindows {
		r.notes = append(r.notes, fmt.Sprintf("the target takes only the windows %v (as it declares): every window the grader chose is one of them, a spec that would change the window to another grades the rest and says so, and strict/config-range and robust/invalid-config are not graded", contract.UnitWindowList()))
		return
	}
	var from string
	switch g := t.Capabilities.WindowGranularity; {
	case g > time.Millisecond:
		r.granularity, from = g, "as it declares"
	case g == 0 && t.Capabilities.Configure:
		if refusal := r.probeGranularityBounded(ctx, t); refusal != nil {
			r.granularity = time.Second
			from = fmt.Sprintf("it refused Configure(%d, %v) (%v) and took Configure(%d, %v)", r.cfg.Limit, probeFineWindow, refusal, r.cfg.Limit, probeWholeWindow)
		}
	}
	if r.granularity == time.Millisecond {
		return
	}
	var rounded []string
	for _, w := range []*time.Duration{&r.cfg.Window, &r.cfg.RealTimeWindow} {
		if up := roundUp(*w, r.granularity); up != *w {
			rounded = append(rounded, fmt.Sprintf("%v to %v", *w, up))
			*w = up
		}
	}
	note := fmt.Sprintf("the target takes only windows in whole multiples of %v (%s): every window the grader chose is one, and only strict/config-range grades that the contract's range begins at 1ms", r.granularity, from)
	if len(rounded) > 0 {
		note += fmt.Sprintf("; the run's windows were rounded up from %s", strings.Join(rounded, " and "))
	}
	r.notes = append(r.notes, note)
}

// probeGranularityBounded is probeGranularity in a goroutine of its own,
// waited for at most the spec timeout and a hang's bound: a target whose
// Configure ignores its context leaves the probe behind, saying nothing,
// and the first spec then fails it as hung (it runs apart, as every spec
// does).
func (r *runner) probeGranularityBounded(ctx context.Context, t Target) error {
	env := r.baseEnv(t, r.runPrefix()+"granularity:")
	env.Window = probeWholeWindow
	if t.Capabilities.Clock {
		env.Clock = fakeclock.New(FakeStart)
	}
	probeCtx, cancel := context.WithTimeout(ctx, r.cfg.SpecTimeout)
	done := make(chan error, 1)
	go func() {
		defer cancel()
		done <- probeGranularity(probeCtx, t, env)
	}()
	wait := time.NewTimer(r.cfg.SpecTimeout + hangBound(r.cfg.SpecTimeout))
	defer wait.Stop()
	select {
	case err := <-done:
		return err
	case <-wait.C:
		return nil
	}
}

// probeGranularity returns the error with which a fresh instance of t,
// made with env, refuses a window that is not a whole number of seconds,
// when it takes one that is; otherwise nil. Anything else (both taken,
// both refused, another error) says nothing: the specs then grade what
// the target does.
func probeGranularity(ctx context.Context, t Target, env Env) error {
	lim, closer, err := t.New(ctx, env)
	if err != nil {
		return nil // the first spec reports it
	}
	if closer != nil {
		defer closer()
	}
	fine := lim.Configure(ctx, env.MaxRequests, probeFineWindow)
	if !errors.Is(fine, contract.ErrInvalidConfig) || lim.Configure(ctx, env.MaxRequests, probeWholeWindow) != nil {
		return nil
	}
	return fine
}

// roundUp is d rounded up to a whole multiple of unit.
func roundUp(d, unit time.Duration) time.Duration {
	if unit <= 0 || d%unit == 0 {
		return d
	}
	return (d/unit + 1) * unit
}
