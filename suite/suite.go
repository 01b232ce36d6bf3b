package suite

import (
	"context"
	"testing"

	"github.com/rlconform/rlconform/grade"
	"github.com/rlconform/rlconform/internal/specs"
	"github.com/rlconform/rlconform/result"
)

// Check runs the catalogue on target and returns the report. The error is
// for a run that could not start (an invalid Config, no Redis); a run that
// starts always gives a report, whose Verdict says whether the target is
// conformant. A run that could not go on (the grader's Redis or the target
// stopped answering) or was stopped by ctx has Report.Aborted set, and its
// unfinished specs marked Interrupted.
//
// Typical usage, outside of go test (the rlconform command does this):
//
//	rep, err := suite.Check(ctx, suite.Config{Level: result.Strict}, target)
//	if err != nil { ... }
//	fmt.Println(rep.Verdict())
func Check(ctx context.Context, cfg Config, target Target) (*result.Report, error) {
	return specs.All().Check(ctx, cfg, target)
}

// Run grades target with go test: every spec is a subtest named by its id,
// so `go test -run 'TestLimiter/core/'` picks specs. It needs no Ginkgo and
// can be called any number of times in one test binary. The -rlconform.*
// flags of the test binary (-rlconform.seed, -rlconform.level,
// -rlconform.id, -rlconform.label, -rlconform.expect-fail,
// -rlconform.profile, -rlconform.report-dir) override cfg.
//
// A spec that fails is a failed subtest; a skipped or inconclusive spec is a
// skipped subtest with the reason (inconclusive is never a pass); a spec in
// Config.ExpectFail that fails passes, and one that passes fails (the list is
// out of date). A spec that could not be graded (the grader's Redis died)
// fails the test, saying so.
//
// Typical usage:
//
//	func TestLimiter(t *testing.T) {
//		suite.Run(t, suite.Config{}, suite.Target{Name: "mine", Capabilities: contract.All(), NeedsRedis: true, New: newMine})
//	}
func Run(t *testing.T, cfg Config, target Target) {
	t.Helper()
	specs.All().Run(t, cfg, target)
}

// Identify probes target (with its clock when it has one, in real time
// otherwise), then replays every answer on every profile and its
// parameters: the result says which explain all of them and which are
// ruled out, by what. cfg.Profile is not used; the probes run with
// cfg.Limit and cfg.Window (cfg.RealTimeWindow in real time). An error
// means the probes could not run (a fault, a target that stopped
// answering, a probe too slow to finish), never that nothing fits.
//
// A target that refuses a window the probes configure (with
// [contract.ErrInvalidConfig]: one that takes only whole seconds, say) is
// probed again with windows of whole seconds, and the identification
// notes it; when it refuses those too, the error names the configuration
// refused and the target's answer.
func Identify(ctx context.Context, cfg Config, target Target) (*result.Identification, error) {
	return specs.All().Identify(ctx, cfg, target)
}

// Count returns how many specs a run with cfg selects (0 for an invalid
// Config).
func Count(cfg Config) int { return specs.All().Count(cfg) }

// Specs lists the catalogue, with the rules of the sliding log.
func Specs() []SpecInfo {
	out, _ := ProfileSpecs("")
	return out
}

// ProfileSpecs lists the catalogue as it grades a profile
// (model.ParseVariant: NAME[:key=value,...]; "" is the sliding log): each
// rule as the profile states it, and why a spec does not grade it.
func ProfileSpecs(profile string) ([]SpecInfo, error) {
	return specs.All().ProfileSpecs(profile)
}

// Estimate says, before a run, how many of the specs cfg selects will run
// on target and, when it has no clock control, how long they take in
// real time and the SpecTimeout and the bound on the whole run they need
// (the command line's defaults for --spec-timeout and --max-duration).
// The error is cfg's.
func Estimate(cfg Config, target Target) (grade.Estimate, error) {
	return specs.All().Estimate(cfg, target)
}

// EstimateIdentify is Estimate for the probes Identify runs with cfg.
func EstimateIdentify(cfg Config, target Target) (grade.Estimate, error) {
	return specs.All().EstimateIdentify(cfg, target)
}
