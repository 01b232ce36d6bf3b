package grade

import "time"

// Estimate is what a run (or identify's probes) will do, known before it
// starts: how many of the specs selected will run, and, in real time,
// how long they take, so that the bounds on a spec and on the run can
// follow the window.
type Estimate struct {
	// Run is how many specs will run; Skipped how many will be skipped,
	// as far as the target's declarations and the profile tell before the
	// run (a capability it lacks, a spec the profile or the kind of target
	// does not grade).
	Run, Skipped int
	// RealTime: the target has no clock control, so the specs wait out
	// windows of Window (the run's RealTimeWindow).
	RealTime bool
	Window   time.Duration
	// Shortened: Window is the run's default and t declares millisecond
	// windows, so the run may take shorter ones once the first spec has
	// measured the round trips (ten margins: Config.RealTimeWindow), and
	// the specs then take less than Typical says.
	Shortened bool
	// Lanes is how many specs run side by side after the first, in real
	// time (Config.Parallel, Target.Lanes); 1: one at a time; 0 with
	// clock control.
	Lanes int
	// Typical is about how long the specs that run take in real time: per
	// spec, 1.1 windows and 2N+40 requests at the target's MaxRPS (what
	// an endpoint's runs measured on average), and with a SharedLimit the
	// wait for the limit to be fresh. 0 with clock control, where a spec's
	// time is its calls'.
	Typical time.Duration
	// SpecTimeout is the least Config.SpecTimeout that lets every spec
	// that runs finish in real time: four windows, 4N+500 requests at the
	// target's MaxRPS, the shared limit's wait and 30 s (the longest spec
	// takes under 2.5 windows and sends at most 4N+480). MaxDuration is
	// SpecTimeout for each spec that runs: a bound on the whole run that
	// cuts no spec short. Both 0 with clock control.
	SpecTimeout, MaxDuration time.Duration
}
