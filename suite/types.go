package suite

import (
	"github.com/rlconform/rlconform/grade"
	"github.com/rlconform/rlconform/internal/specs"
)

// The types a run is given and lists are package grade's, where their
// fields are documented; suite names them so that a test reads
// suite.Run(t, suite.Config{}, suite.Target{...}).
type (
	// Config tunes a run. The zero value runs every spec with the
	// defaults. See [grade.Config].
	Config = grade.Config
	// Target is a limiter to grade: a name, the capabilities it declares,
	// and a factory for fresh instances. See [grade.Target].
	Target = grade.Target
	// Env is what a target's factory gets for one spec. See [grade.Env].
	Env = grade.Env
	// HTTPAnswer is what an endpoint answered one request. See
	// [grade.HTTPAnswer].
	HTTPAnswer = grade.HTTPAnswer
	// SpecInfo describes a spec for listings. See [grade.SpecInfo].
	SpecInfo = grade.SpecInfo
	// StoreFault is a fault put on a target's store, or its end
	// (Target.StoreFault). See [grade.StoreFault].
	StoreFault = grade.StoreFault
)

// MaxParallel bounds Config.Parallel: specs side by side in one run.
const MaxParallel = grade.MaxParallel

// The faults a Target.StoreFault is asked for, in this order: stop,
// resume, freeze, resume. See [grade.StoreStop].
const (
	StoreStop   = grade.StoreStop
	StoreFreeze = grade.StoreFreeze
	StoreResume = grade.StoreResume
)

// Validate reports every problem of cfg: an unknown level, id, label or
// expected failure (with the nearest valid name), a selection that matches
// no spec, a configuration out of range.
func Validate(cfg Config) error { return specs.All().Validate(cfg) }
