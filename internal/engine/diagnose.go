package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlconform/rlconform/internal/alternatives"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/result"
)

// TraceOp is one checked operation of a spec: at its instant on the fake
// clock, or in real time sent at at and answered at until.
type TraceOp struct {
	At    time.Time
	until time.Time // real time: when the answer came; zero on the fake clock
	inst  int       // the instance; for a burst, the user's index in it
	Kind  model.OpKind
	User  string
	Got   string        // allowed, denied, or the remaining count
	Cost  int           // allow: its cost, 0 for AllowRequest (cost 1)
	N     int           // configure: the limit; burst: requests per user
	W     time.Duration // configure: the window
	// burst: how many were allowed, over how many instances
	allowed, instances int
	// wrong: the exact log answers otherwise (set by diagnose)
	wrong bool
}

// candidate is an algorithm a history may show, with what to do about it
// (the variants of one algorithm share a hint).
type candidate struct {
	// key names the candidate alike in every spec of a run (names carry
	// each spec's configuration).
	key, name, hint string
	// replay replays ops on a fresh algorithm and reports whether it gives
	// every answer, and its name with the configuration in force at the end.
	replay func(ops []TraceOp) (bool, string)
	// varies: honest implementations of it report remaining differently,
	// so its remaining answers name it but never rule it out.
	varies bool
	// spec is the profile it is; zero for a sliding log with a mistake.
	spec model.Variant
}

// clue is what one spec's answers say of one candidate: whether it gives
// every one of them.
type clue struct {
	key, name, hint string
	// explains: it gives every answer, so it may be named; fits: no answer
	// rules it out (a remaining answer of an algorithm whose remaining
	// varies does not).
	explains, fits bool
	// silent: it gives the answers only as the graded profile does (one
	// instance of instances that each keep their own state), so it is no
	// diagnosis of them.
	silent bool
}

// evidence replays the spec's trace on the algorithms a limiter may really
// be: the graded profile, and each candidate. It returns, for each
// candidate, whether it gives every answer the target gave, and whether the
// graded profile does. It says nothing (nil) without a trace, or when the
// configuration changes after the first request or the clock steps back
// (what the alternatives do then is not settled enough to name one).
//
// In real time an instant is only known to lie between sending and
// receiving: an algorithm explains the history when it gives every answer
// with all instants taken at the sending, at the answer, or half-way. That
// is a diagnosis, not a verdict: the verdict is the interval oracle's.
// Those three timings miss a history whose calls straddle the
// algorithm's edges one each way (a slow first call, then one across the
// window it opened): of a spec that failed, a profile they do not explain
// is replayed on its real-time oracle too, which admits any timing (see
// admits).
func (h *Harness) evidence(failed bool) (clues []clue, graded bool) {
	if len(h.trace) == 0 {
		return nil, false
	}
	requested := false
	for i, op := range h.trace {
		switch {
		case op.Kind == model.OpConfigure && requested:
			return nil, false
		case op.Kind != model.OpConfigure:
			requested = true
		}
		if i > 0 && op.At.Before(h.trace[i-1].At) {
			return nil, false // the clock stepped back: the alternatives do not say what happens then
		}
	}
	traces := [][]TraceOp{slices.Clone(h.trace)}
	if h.fake == nil {
		traces = [][]TraceOp{timed(h.trace, 0), timed(h.trace, 1), timed(h.trace, 2)}
	}
	explains := func(replay func([]TraceOp) (bool, string)) (bool, string) {
		for _, t := range traces {
			if ok, name := replay(t); ok {
				return true, name
			}
		}
		return false, ""
	}
	N, W := h.env.MaxRequests, h.env.Window
	fresh := func() alternatives.Algorithm { p, _ := h.run.profile.New(N, W); return p }
	graded, _ = explains(func(ops []TraceOp) (bool, string) { return replayAll(fresh(), false, ops), "" })
	for _, t := range traces {
		markWrong(fresh(), t)
	}
	what := "log"
	if !h.run.profile.IsSlidingLog() {
		what = "state"
	}
	perInstance := "instances that each keep their own " + what + " (not one limit over the shared store)"
	cands := []candidate{{
		"per-instance", perInstance,
		"keep the " + what + " in the shared store, not in the instance's memory",
		func(ops []TraceOp) (bool, string) {
			ok, multi := replayPerInstance(fresh, ops)
			if !multi {
				return ok, "" // one instance: the graded profile itself, which names nothing
			}
			return ok, perInstance
		}, false, model.Variant{},
	}}
	// Each replay on fresh algorithms: a replay changes the one it runs on.
	alternatives := func() []alternatives.Alternative {
		return alternatives.For(algorithmsOf(h.run.cfg), h.run.profile, N, W)
	}
	for i, a := range alternatives() {
		cands = append(cands, candidate{a.Key, a.Describe(), a.Hint, func(ops []TraceOp) (bool, string) {
			fresh := alternatives()[i]
			return replayAll(fresh.Algorithm, fresh.RemainingVaries, ops), fresh.Describe()
		}, a.RemainingVaries, a.Variant})
	}
	budget := model.NewBudget(diagnosisSteps)
	if h.ctx != nil {
		budget.Until(h.ctx.Done()) // the spec's time: its verdict waits for the diagnosis
	}
	for _, c := range cands {
		ok, name := explains(c.replay)
		if !ok && failed && h.fake == nil && h.admits(c.spec, !c.varies, budget) {
			ok, name = true, c.name
		}
		silent := ok && name == ""
		if !ok || silent {
			name = c.name
		}
		fits := ok
		if !ok && c.varies {
			fits, _ = explains(func(ops []TraceOp) (bool, string) {
				return c.replay(slices.DeleteFunc(slices.Clone(ops), func(op TraceOp) bool { return op.Kind == model.OpRemaining }))
			})
		}
		clues = append(clues, clue{key: c.key, name: name, hint: c.hint, explains: ok, fits: fits, silent: silent})
	}
	return clues, graded
}

// admits tells whether profile c gives every answer of the spec's
// real-time trace at some instant of each call, judged by c's real-time
// oracle (remaining answers too, with remaining): false for no profile
// (a mistake's sliding log), and for a trace it does not judge alone (a
// concurrent burst, whose search would be slow for a diagnosis, or a
// configuration changed under a history), and once b, the diagnosis's
// budget of search steps, is spent or the spec's time is up: a search
// that gave up admits nothing, and so does a profile on a clock of the
// limiter's own that explains each user at a phase of its own, but no
// phase every user. The diagnosis runs on the spec's goroutine
// after its verdict; unbounded, its searches once kept a failed spec
// from returning for over a minute under -race.
func (h *Harness) admits(c model.Variant, remaining bool, b *model.Budget) bool {
	if c.Name == "" || b.Exhausted() || slices.ContainsFunc(h.trace, func(op TraceOp) bool { return op.Kind == model.OpBurst }) ||
		slices.ContainsFunc(h.trace[1:], func(op TraceOp) bool { return op.Kind == model.OpConfigure }) {
		return false
	}
	p := probe{n: h.env.MaxRequests, w: h.env.Window, realTime: true, trace: h.trace}
	out, _, oracle := replayProbe(c, p, remaining, false, b)
	if out != nil || b.Exhausted() {
		return false
	}
	// One limiter has one clock: every user at one phase of it (as
	// identify asks, see onePhase).
	users, clocked := model.ClockPhases(oracle)
	return !clocked || onePhase(users, clockLate)
}

// timed is the real-time trace with every instant taken at the sending
// (0), the answer (1) or half-way (2).
func timed(ops []TraceOp, At int) []TraceOp {
	out := make([]TraceOp, len(ops))
	for i, op := range ops {
		if !op.until.IsZero() {
			switch At {
			case 1:
				op.At = op.until
			case 2:
				op.At = op.At.Add(op.until.Sub(op.At) / 2)
			}
		}
		out[i] = op
	}
	return out
}

// replayAll replays ops on a and reports whether it gives every answer
// (of remaining too, unless its remaining varies between implementations).
func replayAll(a alternatives.Algorithm, varies bool, ops []TraceOp) bool {
	for _, op := range ops {
		if !step(op, func(int) alternatives.Algorithm { return a }, varies) {
			return false
		}
	}
	return true
}

// markWrong marks the remaining answers of ops that the exact log a gives
// otherwise.
func markWrong(a alternatives.Algorithm, ops []TraceOp) {
	for i := range ops {
		op := &ops[i]
		if op.Kind == model.OpRemaining {
			N, _ := a.Remaining(op.At, op.User)
			op.wrong = strconv.Itoa(N) != op.Got
			continue
		}
		step(*op, func(int) alternatives.Algorithm { return a }, false)
	}
}

// hintOf is the hint of the algorithms found, when they share one (the
// variants of one algorithm): then the answers show what to change;
// otherwise "".
func hintOf(found []clue) string {
	for _, c := range found[1:] {
		if c.hint != found[0].hint {
			return ""
		}
	}
	return found[0].hint
}

// replayPerInstance replays ops on one model of the graded profile per
// instance, and reports whether it gives every answer and whether more
// than one instance answered (with one, it is the graded profile).
func replayPerInstance(fresh func() alternatives.Algorithm, ops []TraceOp) (ok, multi bool) {
	logs := map[int]alternatives.Algorithm{}
	var configured []TraceOp // instances made later start with these
	of := func(i int) alternatives.Algorithm {
		if i > 0 {
			multi = true
		}
		if logs[i] == nil {
			logs[i] = fresh()
			for _, c := range configured {
				logs[i].Configure(c.At, c.N, c.W)
			}
		}
		return logs[i]
	}
	for _, op := range ops {
		switch {
		case op.Kind == model.OpConfigure:
			configured = append(configured, op)
			for _, a := range logs {
				a.Configure(op.At, op.N, op.W)
			}
		case op.Kind == model.OpReset: // Reset reached instance 0: the others keep their logs
			of(0).Reset(op.User)
		case !step(op, of, false):
			return false, multi
		}
		if op.Kind == model.OpBurst && op.instances > 1 {
			multi = true
		}
	}
	return true, multi
}

// step applies op to the algorithm of its instance and reports whether
// the answer matches. An algorithm whose remaining varies matches every
// remaining answer but a wrong one (op.wrong): a diagnosis must explain
// what went wrong.
func step(op TraceOp, of func(int) alternatives.Algorithm, varies bool) bool {
	switch op.Kind {
	case model.OpAllow:
		ok, _ := allowCost(of(op.inst), op.At, op.User, op.Cost)
		return AllowedWord(ok) == op.Got
	case model.OpRemaining:
		if varies {
			return !op.wrong
		}
		N, _ := of(op.inst).Remaining(op.At, op.User)
		return strconv.Itoa(N) == op.Got
	case model.OpReset:
		of(0).Reset(op.User)
		return true
	case model.OpConfigure:
		of(0).Configure(op.At, op.N, op.W)
		return true
	case model.OpBurst:
		allowed := 0
		k := max(1, op.instances)
		for i := range op.N {
			if ok, _ := of((i+op.inst)%k).Allow(op.At, op.User); ok {
				allowed++
			}
		}
		return allowed == op.allowed
	}
	return true
}

// diagnosed is what a spec's answers say of the candidates, kept with its
// result so that the run weighs every spec's answers before naming one.
type diagnosed struct {
	// clues are nil when the answers say nothing (see evidence).
	clues []clue
	// graded: the graded profile gives every answer.
	graded bool
	// failed: the spec failed on its answers (a wrong answer or a
	// violation); base is then its message without the diagnosis, and
	// hint the spec's own.
	failed     bool
	base, hint string
}

// found is what explains the answers of a spec that failed on them, but
// none that the answers of the specs ruled out do not give; and those
// ruled out, each with the spec that ruled it out.
func (d *diagnosed) found(ruledOut map[string]string) (found, dropped []clue) {
	if d.graded {
		return nil, nil // the answers are right: the spec failed on something else
	}
	for _, c := range d.clues {
		switch {
		case !c.explains, c.silent:
		case ruledOut[c.key] != "":
			dropped = append(dropped, c)
		default:
			found = append(found, c)
		}
	}
	return dropTwins(found), dropTwins(dropped)
}

// dropTwins leaves out of cs each profile on Go's grid (align=go-zero)
// whose twin on the epoch's is in cs too: they gave the same answers
// (under every window that divides a day the two grids are one), and the
// epoch's names them both.
func dropTwins(cs []clue) []clue {
	keys := map[string]bool{}
	for _, c := range cs {
		keys[c.key] = true
	}
	return slices.DeleteFunc(cs, func(c clue) bool {
		twin := strings.Replace(c.key, "align=go-zero", "align=epoch", 1)
		return twin != c.key && keys[twin]
	})
}

// render writes the diagnosis d of a failed result into its message and
// failure: what explains its answers and no other spec's answers rule out.
func render(r *result.Result, d *diagnosed, ruledOut map[string]string) {
	if d == nil || !d.failed || r.Failure == nil {
		return
	}
	found, dropped := d.found(ruledOut)
	r.Failure.Explained, r.Failure.Hint = nil, d.hint
	msg := d.base
	if len(found) > 0 {
		for _, c := range found {
			r.Failure.Explained = append(r.Failure.Explained, c.name)
		}
		if hint := hintOf(found); hint != "" {
			r.Failure.Hint = hint
		}
		msg += "  " + diagnosis(found) + "\n"
	}
	for _, c := range dropped {
		msg += fmt.Sprintf("  (not %s, which gives these answers too: %s rules it out)\n", c.name, ruledOut[c.key])
	}
	if r.Failure.Hint != "" {
		msg += "  hint: " + r.Failure.Hint + "\n"
	}
	r.Message = msg
}

// reconcile renders every failed result's diagnosis again with what every
// other result's answers rule out, so that no spec names a cause that
// another spec's answers disprove, and sets the run's diagnosis. diags
// holds each result's diagnosis by spec id. A result's answers say
// something only when they are complete enough for the graded profile or
// a candidate to give them all (see evidence).
func reconcile(rep *result.Report, diags map[string]*diagnosed) {
	for i := range rep.Results {
		r := rep.Results[i]
		if d := diags[r.ID]; !weighs(r, d) || !d.failed || r.Status != result.Failed {
			continue
		}
		ruledOut := map[string]string{}
		for j, o := range rep.Results {
			if od := diags[o.ID]; j != i && weighs(o, od) {
				for _, c := range od.clues {
					if !c.fits && ruledOut[c.key] == "" {
						ruledOut[c.key] = o.ID
					}
				}
			}
		}
		render(&rep.Results[i], diags[r.ID], ruledOut)
	}
	rep.Diagnosis = runDiagnosis(rep, diags)
}

// weighs reports whether a result's answers say something of the
// candidates: a spec that passed or failed (not one that could not be
// graded) and whose trace the graded profile or a candidate gives in full.
func weighs(r result.Result, d *diagnosed) bool {
	return d != nil && d.clues != nil && (r.Status == result.Passed || r.Status == result.Failed)
}

// runDiagnosis names what gives every answer of the first spec that failed
// on its answers and fits those of every other spec of the run that says
// something (passed and failed alike): the one cause consistent with the
// whole run, in the words of the first failure it explains, with the
// hint and how many specs' answers it gives; nil when there is none.
func runDiagnosis(rep *result.Report, diags map[string]*diagnosed) *result.Diagnosis {
	var first *diagnosed
	specs := 0
	consistent := map[string]bool{}
	for _, r := range rep.Results {
		d := diags[r.ID]
		if !weighs(r, d) || r.ExpectedFailure {
			continue
		}
		specs++
		if first == nil && d.failed && !d.graded {
			first = d
		}
		for _, c := range d.clues {
			so, seen := consistent[c.key]
			consistent[c.key] = (so || !seen) && c.fits
		}
	}
	if first == nil {
		return nil
	}
	var found []clue
	for _, c := range first.clues {
		if c.explains && !c.silent && consistent[c.key] {
			found = append(found, c)
		}
	}
	found = dropTwins(found)
	if len(found) == 0 {
		return nil
	}
	var names []string
	for _, c := range found {
		names = append(names, c.name)
	}
	return &result.Diagnosis{Explained: names, Hint: hintOf(found), Weighed: specs}
}

// diagnosis is the message's line naming what explains the history.
func diagnosis(found []clue) string {
	if len(found) == 0 {
		return ""
	}
	names := make([]string, len(found))
	for i, c := range found {
		names[i] = c.name
	}
	if len(names) == 1 {
		return fmt.Sprintf("diagnosis: every answer of this spec is what %s would give", names[0])
	}
	return "diagnosis: every answer of this spec is what any of these would give: " + strings.Join(names, "; ")
}
