package engine

import (
	"time"

	"github.com/rlconform/rlconform/grade"
)

// Estimate is grade's: what a run will do, known before it starts.
type Estimate = grade.Estimate

// The time model of a spec in real time, from endpoint runs of the whole
// catalogue (5/1s to 5/8s and 50/1s at the default pace: the run took
// 12.8 s per second of window plus the 480 requests of
// strict/linearizable at the pace, over 12 specs, of which the longest took
// 2.4 windows with its requests and sent at most 4N+8, or 480).
const (
	// typicalWindows and typicalSends(n) are a spec's average: its waits,
	// in windows, and its requests.
	typicalWindows = 1.1
	// boundWindows and boundSends(n) bound the longest spec: the http/
	// specs wait for an epoch edge and a client's return (about two
	// windows, a third and a fourth when the edge is probed again).
	boundWindows = 4
	// boundSlack is added to a spec's bound: round trips, the first
	// spec's round-trip probe, a loaded machine.
	boundSlack = 30 * time.Second
)

func typicalSends(n int) int { return 2*n + 40 }
func boundSends(n int) int   { return 4*n + 500 }

// Estimate says which of the specs cfg selects will run on t, and, when t
// has no clock control, how long they take and the bounds they need
// (grade.Estimate). The error is cfg's.
func (cat Catalogue) Estimate(cfg Config, t Target) (Estimate, error) {
	full, err := cat.validated(cfg)
	if err != nil {
		return Estimate{}, err
	}
	e, err := estimate(full, t, selectSpecs(full, cat))
	e.Shortened = e.RealTime && mayShorten(cfg.RealTimeWindow == 0, t.Capabilities)
	return e, err
}

// EstimateIdentify is Estimate for the probes Identify runs with cfg.
func (cat Catalogue) EstimateIdentify(cfg Config, t Target) (Estimate, error) {
	cfg.Profile, cfg.IDs, cfg.Labels, cfg.Level = "", identifyProbes, nil, ""
	full, err := cat.validated(cfg)
	if err != nil {
		return Estimate{}, err
	}
	return estimate(full, t, probeSpecs(selectSpecs(full, cat), t))
}

// estimate is Estimate for specs, cfg with its defaults.
func estimate(cfg Config, t Target, specs []Spec) (Estimate, error) {
	profile, err := cfg.Variant()
	if err != nil {
		return Estimate{}, err
	}
	r := &runner{cfg: cfg, redis: cfg.Redis, profile: profile}
	var e Estimate
	single := 0 // the specs that run alone, when others run side by side
	for i := range specs {
		s := &specs[i]
		if why, _ := r.missing(t, s); why != "" || s.outside(profile, t.Capabilities.Clock) != "" {
			e.Skipped++
			continue
		}
		e.Run++
		if e.Run > 1 && alone(t, s) {
			single++
		}
	}
	if t.Capabilities.Clock {
		return e, nil
	}
	e.RealTime, e.Window = true, cfg.RealTimeWindow
	typical, bound := specTimes(cfg.Limit, cfg.RealTimeWindow, t.MaxRPS, sharedWait(t, profile.IsSlidingLog(), cfg.RealTimeWindow))
	// The first spec runs alone, then the others that may share the
	// target lanes at a time, then the rest one at a time (parallel.go).
	e.Lanes = r.lanes(t, e.Run)
	if lanes := e.Lanes; lanes == 1 {
		e.Typical = time.Duration(e.Run) * typical
	} else {
		pooled := e.Run - 1 - single
		e.Typical = time.Duration(1+(pooled+lanes-1)/lanes+single) * typical
	}
	e.SpecTimeout = bound
	e.MaxDuration = time.Duration(e.Run) * bound
	return e, nil
}

// specTimes are a real-time spec's typical time and its bound under a
// limit of n per w, sent at most rps requests a second (0: no bound),
// after a wait of shared for a limit every request shares.
func specTimes(n int, w time.Duration, rps int, shared time.Duration) (typical, bound time.Duration) {
	paced := func(sends int) time.Duration {
		if rps <= 0 {
			return 0
		}
		return time.Duration(float64(sends) / float64(rps) * float64(time.Second))
	}
	typical = shared + time.Duration(typicalWindows*float64(w)) + paced(typicalSends(n))
	bound = shared + boundWindows*w + paced(boundSends(n)) + boundSlack
	return typical, bound
}

// sharedWait is how long each spec first waits on a target whose every
// request shares one limit (0 for any other): what the one before it left
// must expire, a window after it for a log, two for the other profiles
// (Harness.quiet), and a second for the margin.
func sharedWait(t Target, log bool, w time.Duration) time.Duration {
	switch {
	case !t.SharedLimit:
		return 0
	case log:
		return w + time.Second
	}
	return 2*w + time.Second
}

// specBound is the least spec timeout a spec of the run needs on t
// (Estimate.SpecTimeout), 0 with clock control.
func (r *runner) specBound(t Target) time.Duration {
	if t.Capabilities.Clock {
		return 0
	}
	w := r.cfg.RealTimeWindow
	_, bound := specTimes(r.cfg.Limit, w, t.MaxRPS, sharedWait(t, r.profile.IsSlidingLog(), w))
	return bound
}
