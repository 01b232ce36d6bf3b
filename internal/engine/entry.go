package engine

import (
	"context"
	"flag"
	"fmt"
	"testing"

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
func (cat Catalogue) Check(ctx context.Context, cfg Config, target Target) (*result.Report, error) {
	r, err := newRunner(ctx, cfg, cat, target)
	if err != nil {
		return nil, err
	}
	defer r.close()
	rep := r.newReport(target)
	defer func() { rep.Notes = append(rep.Notes, r.finish()...) }()
	specs := r.selected()
	lanes := r.lanes(target, len(specs))
	for i := range specs {
		if lanes > 1 && r.margin != 0 && stopped(rep) == "" {
			// The margin is measured (by the first real-time spec, alone):
			// the rest run side by side.
			r.sideBySide(ctx, target, specs[i:], rep, lanes)
			break
		}
		r.checkOne(ctx, target, &specs[i], rep)
	}
	return rep, nil
}

// checkOne runs s into rep, or says why it was not run.
func (r *runner) checkOne(ctx context.Context, target Target, s *Spec, rep *result.Report) {
	if why := stopped(rep); why != "" {
		rep.Results = append(rep.Results, r.notRun(s, "not run: "+why, ctx.Err() != nil))
		return
	}
	r.runInto(ctx, target, s, rep)
	if ctx.Err() != nil && stopped(rep) == "" {
		rep.Aborted = "interrupted: " + context.Cause(ctx).Error()
	}
}

// Run grades target with go test, one subtest per spec id (suite.Run).
func (cat Catalogue) Run(t *testing.T, cfg Config, target Target) {
	t.Helper()
	s, err := cat.Start(context.Background(), cfg, target)
	if err != nil {
		t.Fatalf("rlconform: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	t.Logf("rlconform: grading %s at level %s, %s", target.Name, s.r.cfg.Level, s.Reproduce(t.Name()))
	test := t.Name()
	for _, sp := range s.r.selected() {
		t.Run(sp.ID, func(t *testing.T) {
			// A failure points at the caller's call of Run, not at this file.
			t.Helper()
			switch act, msg := s.Grade(t.Context(), sp.ID); act {
			case ActSkip:
				t.Skip(msg)
			case ActFail:
				t.Error(msg + "\n" + s.Reproduce(test))
			case ActLog:
				t.Log(msg)
			}
		})
	}
	v := s.Finish(func(line string) { t.Log(line) })
	if why := s.NothingGraded(v); why != "" {
		t.Error(why)
	}
}

// Tree is the specs a test framework's tree holds for cfg, the -rlconform.*
// flags applied: before the flags are parsed (a tree built at package
// level) every spec, so that the flags select when the specs run (Session
// skips the others, saying so); after, the selected ones. The error is
// cfg's.
func (cat Catalogue) Tree(cfg Config) ([]TreeSpec, error) {
	full, err := cat.validated(flagOverrides(cfg))
	if err != nil {
		return nil, err
	}
	if !flag.Parsed() {
		full.Level, full.IDs, full.Labels = result.All, nil, nil
	}
	var out []TreeSpec
	for _, s := range selectSpecs(full, cat) {
		out = append(out, TreeSpec{ID: s.ID, Title: s.title(), Labels: s.labels()})
	}
	return out, nil
}

// TreeSpec is one spec as a test framework's tree shows it.
type TreeSpec struct {
	ID, Title string
	// Labels are its level and needs-<capability> for each thing it needs.
	Labels []string
}

// Session grades one target one spec at a time, as a test framework
// drives it: Start, Grade each spec, Finish, Close.
type Session struct {
	r        *runner
	rep      *result.Report
	target   Target
	selected map[string]*Spec
}

// Start begins grading target with cfg, the -rlconform.* flags applied.
func (cat Catalogue) Start(ctx context.Context, cfg Config, target Target) (*Session, error) {
	r, err := newRunner(ctx, flagOverrides(cfg), cat, target)
	if err != nil {
		return nil, err
	}
	s := &Session{r: r, rep: r.newReport(target), target: target, selected: map[string]*Spec{}}
	for _, sp := range r.selected() {
		s.selected[sp.ID] = &sp
	}
	return s, nil
}

// Reproduce is the go test command line that reruns the session's
// choices (test: the test's name, "" for none).
func (s *Session) Reproduce(test string) string { return reproduce(s.r.cfg, test) }

// Grade runs spec id and says what the test framework does with its
// result, and with what message.
func (s *Session) Grade(ctx context.Context, id string) (Action, string) {
	sp := s.selected[id]
	switch {
	case sp == nil:
		return ActSkip, "not selected: the run grades level " + string(s.r.cfg.Level) + selectionNote(s.r.cfg)
	case stopped(s.rep) != "":
		why := stopped(s.rep)
		s.rep.Results = append(s.rep.Results, s.r.notRun(sp, why, false))
		return ActSkip, "not run: " + why
	}
	return judge(s.r.runInto(ctx, s.target, sp, s.rep), s.r.cfg)
}

// Finish writes the run's notes, its verdict, the reasons and the run's
// diagnosis, a line each, to log, and returns the verdict.
func (s *Session) Finish(log func(line string)) result.Verdict {
	for _, note := range s.r.finish() {
		log("rlconform: " + note)
	}
	v := s.rep.Verdict()
	log(fmt.Sprintf("rlconform: %s", v))
	for _, why := range v.Reasons {
		log("rlconform:   - " + why)
	}
	if d := v.Diagnosis(); d != "" {
		log("rlconform: " + d)
	}
	return v
}

// NothingGraded says, for the verdict Finish returned, that the session
// graded no spec, which fails the test that ran it; "" when it graded
// one, or was interrupted (the interruption says why). The one rule of
// the go test and Ginkgo entry points.
func (s *Session) NothingGraded(v result.Verdict) string {
	if v.Coverage.Graded > 0 || v.Coverage.Interrupted > 0 {
		return ""
	}
	return fmt.Sprintf("rlconform: nothing was graded for %s: %s", s.target.Name, v.Coverage)
}

// Close releases what the session holds (the Redis it obtained).
func (s *Session) Close() error { return s.r.close() }

// runInto runs one spec, judges what failed around it, and adds the
// result to rep (aborting it when the run cannot go on).
func (r *runner) runInto(ctx context.Context, target Target, s *Spec, rep *result.Report) result.Result {
	res := r.runSpec(ctx, target, s)
	if stuck := r.stuckSpec(); stuck != "" {
		rep.Aborted = stuck
	} else if why := r.judgeAround(ctx, target, s, &res); why != "" {
		rep.Aborted = why
	} else if r.stopsHere(res) {
		rep.StoppedAt = res.ID
	}
	rep.Results = append(rep.Results, res)
	reconcile(rep, r.diags)
	return rep.Results[len(rep.Results)-1]
}

// stopsHere reports whether the run stops after res: it failed, not as
// expected, and the run was asked to stop at the first failure.
func (r *runner) stopsHere(res result.Result) bool {
	return r.cfg.FailFast && res.Status == result.Failed && !res.ExpectedFailure
}

// stopped is why no further spec of rep runs ("" while they do): the run
// was aborted, or stopped at its first failure (Config.FailFast).
func stopped(rep *result.Report) string {
	switch {
	case rep.Aborted != "":
		return rep.Aborted
	case rep.StoppedAt != "":
		return failFastWhy(rep.StoppedAt)
	}
	return ""
}

// failFastWhy says why a run asked to stop at its first failure, id,
// runs nothing after it.
func failFastWhy(id string) string {
	return "the run stopped at its first failure, " + id + " (fail-fast)"
}

// Action is what a go test or Ginkgo entry point does with one result.
type Action int

// The actions.
const (
	ActPass Action = iota
	ActLog         // pass, with a message (an expected failure)
	ActSkip
	ActFail
)

// judge is the one place that turns a result into pass, skip or fail for
// the test frameworks, as Report.Verdict does for a whole run.
func judge(res result.Result, cfg Config) (Action, string) {
	switch res.Status {
	case result.Passed:
		if res.ExpectedFailure {
			return ActFail, res.ID + " passed, but is listed in Config.ExpectFail: remove it from the list"
		}
		return ActPass, ""
	case result.Failed:
		if res.ExpectedFailure {
			return ActLog, "expected failure (Config.ExpectFail):\n" + res.Message
		}
		return ActFail, res.Message
	case result.Skipped:
		return ActSkip, res.Message
	case result.Inconclusive:
		return ActSkip, "INCONCLUSIVE (not a pass): " + res.Message
	case result.Interrupted, result.NotRun:
		return ActSkip, string(res.Status) + ": " + res.Message
	default: // Errored
		return ActFail, "could not be graded (a fault around the limiter, not a verdict on it): " + res.Message
	}
}

// Count returns how many specs a run with cfg selects (0 for an invalid
// Config).
func (cat Catalogue) Count(cfg Config) int {
	full, err := cat.validated(cfg)
	if err != nil {
		return 0
	}
	return len(selectSpecs(full, cat))
}
