package suite

import (
	"context"
	"flag"
	"testing"

	"github.com/onsi/ginkgo/v2"
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
	r, err := newRunner(ctx, cfg, target)
	if err != nil {
		return nil, err
	}
	defer r.close()
	rep := r.newReport(target)
	defer func() { rep.Notes = append(rep.Notes, r.finish()...) }()
	for _, s := range r.selected() {
		if rep.Aborted != "" {
			rep.Results = append(rep.Results, r.notRun(&s, "not run: "+rep.Aborted, ctx.Err() != nil))
			continue
		}
		r.runInto(ctx, target, &s, rep)
		if ctx.Err() != nil && rep.Aborted == "" {
			rep.Aborted = "interrupted: " + context.Cause(ctx).Error()
		}
	}
	return rep, nil
}

// Run grades target with go test: every spec is a subtest named by its id,
// so `go test -run 'TestLimiter/core/'` picks specs. It needs no Ginkgo and
// can be called any number of times in one test binary. Flags of the form
// -rlconform.seed override cfg (see RegisterFlags).
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
	cfg = flagOverrides(cfg)
	r, err := newRunner(context.Background(), cfg, target)
	if err != nil {
		t.Fatalf("rlconform: %v", err)
	}
	t.Cleanup(func() { r.close() })
	t.Logf("rlconform: grading %s at level %s, %s", target.Name, r.cfg.Level, r.cfg.reproduce(t.Name()))
	rep := r.newReport(target)
	test := t.Name()
	for _, s := range r.selected() {
		t.Run(s.id, func(t *testing.T) {
			// A failure points at the caller's call of Run, not at this file.
			t.Helper()
			if rep.Aborted != "" {
				rep.Results = append(rep.Results, r.notRun(&s, rep.Aborted, false))
				t.Skipf("not run: %s", rep.Aborted)
			}
			res := r.runInto(t.Context(), target, &s, rep)
			switch act, msg := judge(res, r.cfg); act {
			case actSkip:
				t.Skip(msg)
			case actFail:
				t.Error(msg + "\n" + r.cfg.reproduce(test))
			case actLog:
				t.Log(msg)
			}
		})
	}
	for _, note := range r.finish() {
		t.Log("rlconform: " + note)
	}
	v := rep.Verdict()
	t.Logf("rlconform: %s", v)
	for _, why := range v.Reasons {
		t.Logf("rlconform:   - %s", why)
	}
	if d := v.Diagnosis(); d != "" {
		t.Logf("rlconform: %s", d)
	}
	if v.Coverage.Graded == 0 {
		t.Errorf("rlconform: nothing was graded for %s: %s", target.Name, v.Coverage)
	}
}

// Register adds the catalogue for each target to the caller's Ginkgo tree,
// one ordered container per target with one It per spec, labelled with the
// spec's level and needs (label filters such as `--ginkgo.label-filter=core`
// work). Call it before RunSpecs (at package level, or in the test function),
// once: Ginkgo runs one RunSpecs per process, which the caller's suite owns.
// The -rlconform.* flags (RegisterFlags) are read when the specs run, so they
// work with either form; at package level every spec is in the tree, and
// those the run does not select are skipped, saying so.
// Results are judged as by Run. An invalid Config fails the container.
//
// Typical usage:
//
//	var _ = suite.Register(suite.Config{}, myTarget)
//
//	func TestMine(t *testing.T) { RegisterFailHandler(Fail); RunSpecs(t, "mine") }
func Register(cfg Config, targets ...Target) bool {
	// At package level Register runs before go test parses the flags: the
	// tree then holds every spec, and the -rlconform.* flags select and
	// seed them when the specs run (the others are skipped, saying so).
	late := !flag.Parsed()
	full, verr := flagOverrides(cfg).validated()
	tree := selectSpecs(full)
	if late && verr == nil {
		all := full
		all.Level, all.IDs, all.Labels = result.All, nil, nil
		tree = selectSpecs(all)
	}
	for _, target := range targets {
		ginkgo.Describe("rlconform "+target.Name, ginkgo.Ordered, ginkgo.ContinueOnFailure, func() {
			var (
				r        *runner
				rep      *result.Report
				selected map[string]bool // the specs this run grades
			)
			ginkgo.BeforeAll(func(ctx ginkgo.SpecContext) {
				if verr != nil {
					ginkgo.Fail("rlconform: " + verr.Error())
				}
				run := flagOverrides(cfg)
				if _, err := run.validated(); err != nil {
					ginkgo.Fail("rlconform: " + err.Error())
				}
				var err error
				r, err = newRunner(ctx, run, target)
				if err != nil {
					ginkgo.Fail("rlconform: " + err.Error())
				}
				selected = map[string]bool{}
				for _, s := range r.selected() {
					selected[s.id] = true
				}
				rep = r.newReport(target)
				ginkgo.GinkgoWriter.Printf("rlconform: grading %s, %s\n", target.Name, r.cfg.reproduce(""))
				ginkgo.DeferCleanup(r.close)
			})
			if verr != nil {
				ginkgo.It("has a valid configuration", func() {})
				return
			}
			for _, s := range tree {
				ginkgo.It(s.title(), ginkgo.Label(s.labels()...), func(ctx ginkgo.SpecContext) {
					if !selected[s.id] {
						ginkgo.Skip("not selected: the run grades level " + string(r.cfg.Level) + r.cfg.selectionNote())
					}
					if rep.Aborted != "" {
						rep.Results = append(rep.Results, r.notRun(&s, rep.Aborted, false))
						ginkgo.Skip("not run: " + rep.Aborted)
					}
					res := r.runInto(ctx, target, &s, rep)
					switch act, msg := judge(res, r.cfg); act {
					case actSkip:
						ginkgo.Skip(msg)
					case actFail:
						ginkgo.Fail(msg + "\n" + r.cfg.reproduce(""))
					case actLog:
						ginkgo.GinkgoWriter.Println(msg)
					}
				})
			}
			ginkgo.AfterAll(func() {
				if rep == nil {
					return
				}
				for _, note := range r.finish() {
					ginkgo.GinkgoWriter.Println("rlconform: " + note)
				}
				v := rep.Verdict()
				ginkgo.GinkgoWriter.Printf("rlconform: %s\n", v)
				for _, why := range v.Reasons {
					ginkgo.GinkgoWriter.Printf("rlconform:   - %s\n", why)
				}
				if d := v.Diagnosis(); d != "" {
					ginkgo.GinkgoWriter.Printf("rlconform: %s\n", d)
				}
				if v.Coverage.Graded == 0 && v.Coverage.Interrupted == 0 {
					ginkgo.Fail("rlconform: nothing was graded for " + target.Name + ": " + v.Coverage.String())
				}
			})
		})
	}
	return true
}

// runInto runs one spec, judges what failed around it, and adds the
// result to rep (aborting it when the run cannot go on).
func (r *runner) runInto(ctx context.Context, target Target, s *spec, rep *result.Report) result.Result {
	res := r.runSpec(ctx, target, s)
	if r.stuck != "" {
		rep.Aborted = r.stuck
	} else if why := r.afterSpec(ctx, target, &res); why != "" {
		rep.Aborted = why
	}
	rep.Results = append(rep.Results, res)
	reconcile(rep, r.diags)
	return rep.Results[len(rep.Results)-1]
}

// action is what a go test or Ginkgo entry point does with one result.
type action int

const (
	actPass action = iota
	actLog         // pass, with a message (an expected failure)
	actSkip
	actFail
)

// judge is the one place that turns a result into pass, skip or fail for
// the test frameworks, as Report.Verdict does for a whole run.
func judge(res result.Result, cfg Config) (action, string) {
	switch res.Status {
	case result.Passed:
		if res.ExpectedFailure {
			return actFail, res.ID + " passed, but is listed in Config.ExpectFail: remove it from the list"
		}
		return actPass, ""
	case result.Failed:
		if res.ExpectedFailure {
			return actLog, "expected failure (Config.ExpectFail):\n" + res.Message
		}
		return actFail, res.Message
	case result.Skipped:
		return actSkip, res.Message
	case result.Inconclusive:
		return actSkip, "INCONCLUSIVE (not a pass): " + res.Message
	case result.Interrupted, result.NotRun:
		return actSkip, string(res.Status) + ": " + res.Message
	default: // Errored
		return actFail, "could not be graded (a fault around the limiter, not a verdict on it): " + res.Message
	}
}

// Count returns how many specs a run with cfg selects (0 for an invalid
// Config).
func Count(cfg Config) int {
	full, err := cfg.validated()
	if err != nil {
		return 0
	}
	return len(selectSpecs(full))
}
