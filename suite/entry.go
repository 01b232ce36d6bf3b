package suite

import (
	"context"
	"testing"

	"github.com/onsi/ginkgo/v2"
)

// Check runs the catalogue on target and returns the report. The error is
// for a run that could not start (no Redis); a non-conformant target is a
// report whose Err is not nil.
//
// Typical usage, outside of go test (the rlconform command does this):
//
//	rep, err := suite.Check(ctx, suite.Config{Level: suite.Strict}, target)
//	fmt.Print(rep.Table())
func Check(ctx context.Context, cfg Config, target Target) (*Report, error) {
	r, err := newRunner(ctx, cfg, target)
	if err != nil {
		return nil, err
	}
	defer r.close()
	rep := &Report{Target: target.Name, Seed: r.cfg.Seed, Level: r.cfg.Level}
	for _, s := range r.selected() {
		res := r.runSpec(ctx, target, &s)
		rep.Results = append(rep.Results, res)
		if err := r.stillAlive(ctx, target, res); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// Run grades target with go test: every spec is a subtest named by its id,
// so `go test -run 'TestLimiter/core/'` picks specs. It needs no Ginkgo and
// can be called any number of times in one test binary.
//
// Typical usage:
//
//	func TestLimiter(t *testing.T) {
//		suite.Run(t, suite.Config{}, suite.Target{Name: "mine", Capabilities: contract.All(), NeedsRedis: true, New: newMine})
//	}
func Run(t *testing.T, cfg Config, target Target) {
	t.Helper()
	r, err := newRunner(context.Background(), cfg, target)
	if err != nil {
		t.Fatalf("rlconform: %v", err)
	}
	t.Cleanup(func() { r.close() })
	t.Logf("rlconform: grading %s at level %s, seed %d", target.Name, r.cfg.Level, r.cfg.Seed)
	ran, skippedAll := 0, true
	for _, s := range r.selected() {
		t.Run(s.id, func(t *testing.T) {
			res := r.runSpec(t.Context(), target, &s)
			if err := r.stillAlive(t.Context(), target, res); err != nil {
				t.Fatalf("rlconform: %v", err)
			}
			ran++
			switch res.Status {
			case Skipped:
				t.Skip(res.Message)
			case Failed, Inconclusive:
				skippedAll = false
				t.Error(res.Message)
			default:
				skippedAll = false
			}
		})
	}
	if ran > 0 && skippedAll {
		t.Errorf("rlconform: every spec was skipped for %s: nothing was graded", target.Name)
	}
}

// Register adds the catalogue for each target to the caller's Ginkgo tree,
// one ordered container per target with one It per spec, labelled with the
// spec's level and needs (label filters such as `--ginkgo.label-filter=core`
// work). Call it before RunSpecs (at package level, or in the test function),
// once: Ginkgo runs one RunSpecs per process, which the caller's suite owns.
//
// Typical usage:
//
//	var _ = suite.Register(suite.Config{}, myTarget)
//
//	func TestMine(t *testing.T) { RegisterFailHandler(Fail); RunSpecs(t, "mine") }
func Register(cfg Config, targets ...Target) bool {
	level := cfg.withDefaults().Level
	for _, target := range targets {
		ginkgo.Describe("rlconform "+target.Name, ginkgo.Ordered, ginkgo.ContinueOnFailure, func() {
			var r *runner
			graded, skippedAll := 0, true
			ginkgo.BeforeAll(func(ctx ginkgo.SpecContext) {
				var err error
				r, err = newRunner(ctx, cfg, target)
				if err != nil {
					ginkgo.Fail(err.Error())
				}
				ginkgo.GinkgoWriter.Printf("rlconform: grading %s, seed %d\n", target.Name, r.cfg.Seed)
				ginkgo.DeferCleanup(r.close)
			})
			for _, s := range catalogue() {
				if !level.includes(s.level) || !s.matches(cfg.IDs) || !s.hasLabel(cfg.Labels) {
					continue
				}
				ginkgo.It(s.title(), ginkgo.Label(s.labels()...), func(ctx ginkgo.SpecContext) {
					res := r.runSpec(ctx, target, &s)
					if err := r.stillAlive(ctx, target, res); err != nil {
						ginkgo.AbortSuite(res.Message + "\n" + err.Error())
					}
					graded++
					switch res.Status {
					case Skipped:
						ginkgo.Skip(res.Message)
					case Failed, Inconclusive:
						skippedAll = false
						ginkgo.Fail(res.Message)
					default:
						skippedAll = false
					}
				})
			}
			ginkgo.AfterAll(func() {
				if graded > 0 && skippedAll {
					ginkgo.Fail("rlconform: every spec was skipped for " + target.Name + ": nothing was graded")
				}
			})
		})
	}
	return true
}

// Count returns how many specs a run with cfg selects.
func Count(cfg Config) int {
	cfg = cfg.withDefaults()
	n := 0
	for _, s := range catalogue() {
		if cfg.Level.includes(s.level) && s.matches(cfg.IDs) && s.hasLabel(cfg.Labels) {
			n++
		}
	}
	return n
}
