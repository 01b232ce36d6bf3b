package result

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Level groups specs by how much they demand. Levels are cumulative: a
// limiter conformant at strict also passes core.
type Level string

// The levels, in order.
const (
	Core   Level = "core"   // the eight behaviours every limiter must get right
	Strict Level = "strict" // an exact sliding window, under concurrency, on a shared store
	Robust Level = "robust" // odd input, key hygiene, store faults
	// All is every level: today the same specs as Robust, and whatever
	// level is added later.
	All Level = "all"
)

// LevelOrder lists the levels in order, All excluded.
func LevelOrder() []Level { return []Level{Core, Strict, Robust} }

// ParseLevel parses core, strict, robust or all.
func ParseLevel(s string) (Level, error) {
	switch s {
	case string(Core), string(Strict), string(Robust), string(All):
		return Level(s), nil
	}
	return "", fmt.Errorf("unknown level %q: want core, strict, robust or all", s)
}

// Includes reports whether a run at level l grades specs of level s.
func (l Level) Includes(s Level) bool {
	return l == All || slices.Index(LevelOrder(), s) <= slices.Index(LevelOrder(), l)
}

// Status is the outcome of one spec.
type Status string

// The statuses. Only Passed counts as a pass; only Failed is a verdict
// against the limiter.
const (
	Passed  Status = "pass"
	Failed  Status = "fail"
	Skipped Status = "skip"
	// Inconclusive: the spec ran but could not decide (a check that ran out
	// of time, timing that left every answer undecided). Never a pass.
	Inconclusive Status = "inconclusive"
	// Errored: something around the limiter failed (the grader's Redis, the
	// target's store, the grader itself), so the spec says nothing about the
	// limiter. Never a pass, never a verdict.
	Errored Status = "error"
	// Interrupted: the run was stopped (Ctrl-C, SIGTERM, a deadline) before
	// the spec finished or began.
	Interrupted Status = "interrupted"
	// NotRun: the run could not go on (a fault around the limiter, a target
	// too slow to grade) before this spec began.
	NotRun Status = "not-run"
)

// Kind says what kind of evidence a failed (or errored) spec holds.
type Kind string

// The kinds of failure.
const (
	// KindWrongAnswer: at one step the target gave an answer the model would
	// not give. Failure.Step, Operation, Got and Want say which.
	KindWrongAnswer Kind = "wrong-answer"
	// KindViolation: a rule broken outside one answer (more than N allowed
	// by a burst, a key without TTL, a history no serial order explains, an
	// outage that allowed requests).
	KindViolation Kind = "violation"
	// KindTargetError: the target returned an error where an answer was due,
	// or the wrong kind of error.
	KindTargetError Kind = "target-error"
	// KindHang: a call did not return within its deadline.
	KindHang Kind = "hang"
	// KindPanic: the target panicked.
	KindPanic Kind = "panic"
	// KindFault: the store, the network or the grader failed; the status is
	// Errored, never Failed.
	KindFault Kind = "fault"
	// KindInconclusive: the spec ran but could not decide.
	KindInconclusive Kind = "inconclusive"
	// KindSlow: the target answered every call, but too slowly for the
	// spec to finish in its time: inconclusive, never a failure.
	KindSlow Kind = "slow"
	// KindOutOfTime: in real time, the spec's waits for its windows did
	// not fit in its time (the spec timeout is too short for the window),
	// while the target answered quickly: inconclusive, never a failure,
	// and not the target's slowness.
	KindOutOfTime Kind = "out-of-time"
	// KindNoAnswer: a call got no answer (a reset connection, a timeout:
	// contract.ErrNoAnswer), so its outcome is unknown and the rest of the
	// spec could not be judged: inconclusive, never a failure.
	KindNoAnswer Kind = "no-answer"
	// KindStoreFailed: the target's store failed while the spec ran (the
	// run's watch of the store saw it stop, start afresh or fail over, or
	// the target said an answer was its store-failure policy's): its
	// answers then were not its algorithm's. Inconclusive, never a
	// failure and never a pass.
	KindStoreFailed Kind = "store-failed"
)

// Mode is how time passed for a spec.
type Mode string

// The modes.
const (
	// FakeClock: the target read "now" from a clock the spec moved.
	FakeClock Mode = "fake-clock"
	// RealTime: the target read its own clock; the spec waited.
	RealTime Mode = "real-time"
)

// Result is the outcome of one spec on one target.
type Result struct {
	ID     string
	Level  Level
	Rule   string
	Status Status
	// Mode is how time passed (empty for a spec that was skipped before it
	// began).
	Mode Mode
	// Message is the whole explanation, as a person reads it: why the spec
	// failed (with the configuration and the timeline) or was skipped, or
	// what a passing spec has to say of how it probed (empty for most).
	Message string
	// Failure holds the same evidence as fields, for tools; nil unless the
	// status is Failed, Errored or Inconclusive.
	Failure  *Failure
	Duration time.Duration
	// ExpectedFailure: the spec is in Config.ExpectFail.
	ExpectedFailure bool
	// Structural, for a skipped spec: no target of this kind can have it
	// graded (a remote target cannot take a cancelled context in flight,
	// only an endpoint has rate-limit fields, the profile does not grade
	// it), as opposed to a capability the target could declare or an
	// option the run could be given.
	Structural bool
}

// Failure is the structured evidence of a failed spec.
type Failure struct {
	Kind Kind
	// Summary is the first line of the explanation.
	Summary string
	// Step is the 1-based step of the timeline that went wrong, 0 when the
	// failure is not one step.
	Step int
	// At is the instant of that step, from the spec's start.
	At time.Duration
	// Instance is the instance (0-based) that answered.
	Instance int
	// Operation is the call, e.g. AllowRequest("u").
	Operation string
	// Got is what the target answered and Want what the model answers.
	Got, Want string
	// Explanation says what the model counted just before the step.
	Explanation string
	// Hint is what to change: for the algorithm the answers show when one
	// does, else the usual cause of this spec's failures.
	Hint string
	// Explained names the well-known algorithms (fixed windows, GCRA, a
	// sliding log with a classic mistake...) that give every answer of the
	// failing spec, when one does.
	Explained []string
	// Timeline is the spec's operations as data (nil when it recorded
	// none): what the message shows as text, for charts.
	Timeline *Timeline
	// History, for a concurrent history no serial order explains, is its
	// operations, each over its call's interval, those that cannot be
	// ordered marked (Op.Unordered); nil otherwise.
	History *Timeline
}

// Report is the outcome of a run on one target.
type Report struct {
	Target string
	// Targets are every address graded (several instances of one limiter).
	Targets []string
	Seed    uint64
	Level   Level
	// Profile is the algorithm graded against (model.Variant.String, e.g.
	// "sliding-log" or "gcra:burst=limit").
	Profile string
	// Limit and Window are the configuration graded (its scale): the
	// limit N, and the window W of a target with clock control, or else
	// of its specs in real time as the run began (the notes say when it
	// was raised). Zero in a report of an older version.
	Limit   int           `json:",omitempty"`
	Window  time.Duration `json:",omitempty"`
	Results []Result
	// Selection, when not empty, says that the run graded only some specs
	// of its level, and which (Config.IDs, Config.Labels).
	Selection string
	// Aborted, when not empty, says why the run stopped early (the target
	// or the grader's store stopped answering, an interrupt).
	Aborted string
	// StoppedAt, when not empty, is the spec whose failure stopped the run
	// (it was asked to stop at the first failure, grade.Config.FailFast):
	// the specs not begun then were not run.
	StoppedAt string `json:",omitempty"`
	// Notes are what the run has to say beyond the results, such as keys
	// it could not clean up.
	Notes []string
	// Diagnosis is what every answer of the run says of the cause of its
	// failures, when one cause is consistent with them all (nil: none);
	// the run that made the report sets it, and Verdict reports it.
	Diagnosis *Diagnosis `json:",omitempty"`
}

// Diagnosis names the well-known algorithms that give every answer of the
// specs of a run that say something of them, passed and failed alike.
type Diagnosis struct {
	// Explained are their names, in the words of the first failure they
	// explain.
	Explained []string
	// Hint is what to change then.
	Hint string
	// Weighed is how many specs' answers were weighed.
	Weighed int
}

// Count returns how many results have status st.
func (rep *Report) Count(st Status) int {
	n := 0
	for _, r := range rep.Results {
		if r.Status == st {
			n++
		}
	}
	return n
}

// Outcome is the verdict of a run.
type Outcome string

// The outcomes, each with its exit code in the command line.
const (
	// Conformant (exit 0): every graded spec passed (or failed as expected).
	Conformant Outcome = "conformant"
	// NotConformant (exit 1): a spec failed that was not expected to: the
	// limiter is wrong.
	NotConformant Outcome = "not-conformant"
	// Undecided (exit 2): nothing failed, but the run cannot vouch for the
	// limiter: a spec was inconclusive or errored, the run was aborted or
	// interrupted, nothing was graded, or an expected failure passed.
	Undecided Outcome = "undecided"
)

// Verdict is the one judgement of a run, used by Check, Run, Register and
// the command line alike.
type Verdict struct {
	Outcome Outcome
	// Level is the level the run graded.
	Level Level
	// Selection is Report.Selection: only some specs of the level.
	Selection string
	// Reasons say why the outcome is not Conformant, one line each.
	Reasons []string
	// NotGraded are the levels of the run whose every spec was skipped
	// while another level graded some: the outcome says nothing of them,
	// and the verdict line names them apart, never as part of the level
	// it claims (CONFORMANT at strict (nothing graded at robust)).
	NotGraded []Level
	// Coverage counts the specs by what happened to them.
	Coverage Coverage
	// Explained names, when a spec failed on its answers, the well-known
	// algorithms that give every answer of every spec of the run that says
	// something of them, passed and failed alike: the cause consistent
	// with the whole run. Hint is what to change then; Weighed is how many
	// specs' answers were weighed.
	Explained []string
	Hint      string
	Weighed   int
}

// Coverage counts a run's specs.
type Coverage struct {
	Selected, Graded, Passed, Failed, ExpectedFailures, Skipped, Inconclusive, Errored, Interrupted, NotRun int
	// RealTime is how many graded specs ran in real time.
	RealTime int
	// SkippedBy counts skipped specs by reason.
	SkippedBy map[string]int
	// Structural counts the skipped specs no target of this kind can have
	// graded (Result.Structural).
	Structural int
}

// Verdict judges the report.
func (rep *Report) Verdict() Verdict {
	v := Verdict{Level: rep.Level, Selection: rep.Selection, Coverage: Coverage{Selected: len(rep.Results), SkippedBy: map[string]int{}}}
	c := &v.Coverage
	var failed, undecided []string
	for _, r := range rep.Results {
		if r.Status != Skipped && r.Status != Interrupted && r.Status != NotRun {
			c.Graded++
			if r.Mode == RealTime {
				c.RealTime++
			}
		}
		switch r.Status {
		case Passed:
			c.Passed++
			if r.ExpectedFailure {
				undecided = append(undecided, fmt.Sprintf("%s: passed, but is listed as an expected failure: remove it from the list", r.ID))
			}
		case Failed:
			if r.ExpectedFailure {
				c.ExpectedFailures++
				continue
			}
			c.Failed++
			failed = append(failed, fmt.Sprintf("%s: %s", r.ID, r.summary()))
		case Skipped:
			c.Skipped++
			c.SkippedBy[r.Message]++
			if r.Structural {
				c.Structural++
			}
		case Inconclusive:
			c.Inconclusive++
			undecided = append(undecided, fmt.Sprintf("%s: inconclusive: %s", r.ID, r.summary()))
		case Errored:
			c.Errored++
			undecided = append(undecided, fmt.Sprintf("%s: could not be graded: %s", r.ID, r.summary()))
		case Interrupted:
			c.Interrupted++
		case NotRun:
			c.NotRun++
		}
	}
	if c.Interrupted > 0 {
		undecided = append(undecided, fmt.Sprintf("%d spec(s) interrupted before they finished", c.Interrupted))
	}
	if c.NotRun > 0 {
		undecided = append(undecided, fmt.Sprintf("%d spec(s) not run", c.NotRun))
	}
	if rep.Aborted != "" {
		undecided = append(undecided, "the run was aborted: "+rep.Aborted)
	}
	if rep.StoppedAt != "" {
		undecided = append(undecided, "the run stopped at its first failure, "+rep.StoppedAt+", as asked (fail-fast)")
	}
	switch {
	case len(rep.Results) == 0 && rep.Aborted == "":
		undecided = append(undecided, "no spec selected: nothing was graded")
	case c.Graded == 0 && c.Interrupted == 0 && c.NotRun == 0:
		undecided = append(undecided, "every spec was skipped: nothing was graded")
	}
	if c.Graded > 0 {
		v.NotGraded = rep.levelsNotGraded()
	}
	switch {
	case len(failed) > 0:
		v.Outcome, v.Reasons = NotConformant, append(failed, undecided...)
		if d := rep.Diagnosis; d != nil {
			v.Explained, v.Hint, v.Weighed = d.Explained, d.Hint, d.Weighed
		}
	case len(undecided) > 0:
		v.Outcome, v.Reasons = Undecided, undecided
	default:
		v.Outcome = Conformant
	}
	return v
}

// levelsNotGraded lists the levels with specs in the report, every one
// of them skipped.
func (rep *Report) levelsNotGraded() []Level {
	var out []Level
	for _, lv := range rep.Levels() {
		if lv.NothingGraded() {
			out = append(out, lv.Level)
		}
	}
	return out
}

// Err is nil when the target is conformant at the report's level;
// otherwise it says why, one line per reason.
func (rep *Report) Err() error {
	v := rep.Verdict()
	if v.Outcome == Conformant {
		return nil
	}
	return fmt.Errorf("%s: %s", v.Outcome, strings.Join(v.Reasons, "\n"))
}

// String is the verdict line: the outcome with what was graded, e.g.
// "CONFORMANT at strict: 21 of 23 graded (12 in real time), 21 passed, 2
// skipped: 2 needs Reset, which the target does not declare".
func (v Verdict) String() string {
	var head string
	switch v.Outcome {
	case Conformant:
		head = "CONFORMANT"
	case NotConformant:
		head = "NOT CONFORMANT"
	default:
		head = "UNDECIDED"
	}
	switch {
	case v.Selection != "" && v.Level != "" && v.Level != All:
		head += " on the specs selected (" + v.Selection + ") up to " + string(v.Level)
	case v.Selection != "":
		head += " on the specs selected (" + v.Selection + ")"
	case v.Level != "" && len(v.NotGraded) > 0:
		head += v.gradedLevels()
	case v.Level != "":
		head += " at " + string(v.Level)
	}
	if len(v.NotGraded) > 0 {
		names := make([]string, len(v.NotGraded))
		for i, l := range v.NotGraded {
			names[i] = string(l)
		}
		head += " (nothing graded at " + strings.Join(names, ", ") + ")"
	}
	return head + ": " + v.Coverage.String()
}

// gradedLevels names the levels of the verdict that graded a spec: " at
// L" when they are the levels up to L, else " on levels A and B only".
func (v Verdict) gradedLevels() string {
	var graded []string
	prefix, gap := true, false
	for _, l := range LevelOrder() {
		switch {
		case !v.Level.Includes(l):
		case slices.Contains(v.NotGraded, l):
			gap = true
		default:
			prefix = prefix && !gap
			graded = append(graded, string(l))
		}
	}
	switch {
	case len(graded) == 0:
		return " at " + string(v.Level)
	case prefix:
		return " at " + graded[len(graded)-1]
	case len(graded) == 1:
		return " on level " + graded[0] + " only"
	}
	return " on levels " + strings.Join(graded, " and ") + " only"
}

// Diagnosis is the run's diagnosis as a person reads it, one line and its
// hint, or "" when there is none.
func (v Verdict) Diagnosis() string {
	if len(v.Explained) == 0 {
		return ""
	}
	specs := fmt.Sprintf("the %d specs that say something of it, passed and failed,", v.Weighed)
	if v.Weighed == 1 {
		specs = "the one spec that says something of it"
	}
	out := fmt.Sprintf("diagnosis of the run: every answer of %s is what %s would give", specs, v.Explained[0])
	if len(v.Explained) > 1 {
		out = fmt.Sprintf("diagnosis of the run: every answer of %s is what any of these would give: %s", specs, strings.Join(v.Explained, "; "))
	}
	if v.Hint != "" {
		out += "\n  hint: " + v.Hint
	}
	return out
}

// String says how many specs were graded, and why the others were not.
func (c Coverage) String() string {
	var parts []string
	graded := fmt.Sprintf("%d of %d graded", c.Graded, c.Selected)
	if c.RealTime > 0 {
		graded += fmt.Sprintf(" (%d in real time)", c.RealTime)
	}
	parts = append(parts, graded)
	for _, p := range []struct {
		n    int
		what string
	}{{c.Passed, "passed"}, {c.Failed, "failed"}, {c.ExpectedFailures, "expected failure(s)"},
		{c.Inconclusive, "inconclusive"}, {c.Errored, "could not be graded"}, {c.Interrupted, "interrupted"}, {c.NotRun, "not run"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	if c.Skipped > 0 {
		// Each reason up to its explanation (the table has it whole), the
		// same short reasons counted together.
		short := map[string]int{}
		for why, n := range c.SkippedBy {
			if i := strings.Index(why, ": "); i > 0 {
				why = why[:i]
			}
			if i := strings.Index(why, " ("); i > 0 {
				why = why[:i]
			}
			short[why] += n
		}
		reasons := make([]string, 0, len(short))
		for why := range short {
			reasons = append(reasons, why)
		}
		slices.Sort(reasons)
		s := fmt.Sprintf("%d skipped", c.Skipped)
		for i, why := range reasons {
			sep := ": "
			if i > 0 {
				sep = "; "
			}
			s += fmt.Sprintf("%s%d %s", sep, short[why], why)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// summary is the one line that says what went wrong.
func (r *Result) summary() string {
	if r.Failure != nil && r.Failure.Summary != "" {
		return r.Failure.Summary
	}
	return firstLine(r.Message)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// LevelVerdict is the outcome of one level of the report: how many of its
// specs passed (or failed as expected), failed, were skipped or undecided.
type LevelVerdict struct {
	Level                                     Level
	Outcome                                   Outcome
	Passed, Failed, Skipped, Undecided, Total int
}

// NothingGraded reports whether the level had specs and skipped them all.
func (lv LevelVerdict) NothingGraded() bool { return lv.Total > 0 && lv.Skipped == lv.Total }

// Levels judges each level of the report separately. A level that graded
// nothing (NothingGraded) is Undecided: never conformant.
func (rep *Report) Levels() []LevelVerdict {
	var out []LevelVerdict
	for _, l := range LevelOrder() {
		if !rep.Level.Includes(l) {
			continue
		}
		lv := LevelVerdict{Level: l}
		for _, r := range rep.Results {
			if r.Level != l {
				continue
			}
			lv.Total++
			switch {
			case r.Status == Skipped:
				lv.Skipped++
			case r.Status == Passed && !r.ExpectedFailure, r.Status == Failed && r.ExpectedFailure:
				lv.Passed++
			case r.Status == Failed:
				lv.Failed++
			default:
				lv.Undecided++
			}
		}
		switch {
		case lv.Failed > 0:
			lv.Outcome = NotConformant
		case lv.Undecided > 0 || lv.Passed == 0:
			lv.Outcome = Undecided
		default:
			lv.Outcome = Conformant
		}
		out = append(out, lv)
	}
	return out
}
