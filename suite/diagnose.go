package suite

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlconform/rlconform/model"
)

// traceOp is one checked operation of a spec: at its instant on the fake
// clock, or in real time sent at at and answered at until.
type traceOp struct {
	at    time.Time
	until time.Time // real time: when the answer came; zero on the fake clock
	inst  int       // the instance; for a burst, the user's index in it
	kind  byte      // 'A' allow, 'G' remaining, 'R' reset, 'C' configure, 'B' burst
	user  string
	got   string        // allowed, denied, or the remaining count
	n     int           // configure: the limit; burst: requests per user
	w     time.Duration // configure: the window
	// burst: how many were allowed, over how many instances
	allowed, instances int
	// wrong: the exact log answers otherwise (set by diagnose)
	wrong bool
}

// candidate is an algorithm a history may show, with what to do about it
// (the variants of one algorithm share a hint).
type candidate struct {
	name, hint string
	// replay replays ops on a fresh algorithm and reports whether it gives
	// every answer, and its name with the configuration in force at the end.
	replay func(ops []traceOp) (bool, string)
}

// diagnose replays the spec's trace on the algorithms a limiter may really
// be, and returns those that give every answer the target gave: the
// history is what they would answer. It needs exact instants (the fake
// clock) and a trace.
//
// It says nothing when the exact log explains the trace (the spec failed
// on something else than an answer), or when the configuration changes
// after the first request (what the alternatives do then is not settled
// enough to name one).
//
// In real time an instant is only known to lie between sending and
// receiving: an algorithm explains the history when it gives every answer
// with all instants taken at the sending, at the answer, or half-way. That
// is a diagnosis, not a verdict: the verdict is the interval oracle's.
func (h *harness) diagnose() []candidate {
	if len(h.trace) == 0 {
		return nil
	}
	requested := false
	for i, op := range h.trace {
		switch {
		case op.kind == 'C' && requested:
			return nil
		case op.kind != 'C':
			requested = true
		}
		if i > 0 && op.at.Before(h.trace[i-1].at) {
			return nil // the clock stepped back: the alternatives do not say what happens then
		}
	}
	traces := [][]traceOp{slices.Clone(h.trace)}
	if h.fake == nil {
		traces = [][]traceOp{timed(h.trace, 0), timed(h.trace, 1), timed(h.trace, 2)}
	}
	explains := func(replay func([]traceOp) (bool, string)) (bool, string) {
		for _, t := range traces {
			if ok, name := replay(t); ok {
				return true, name
			}
		}
		return false, ""
	}
	n, w := h.env.MaxRequests, h.env.Window
	graded := func() model.Algorithm { p, _ := h.run.profile.New(n, w); return p }
	if ok, _ := explains(func(ops []traceOp) (bool, string) { return replayAll(graded(), false, ops), "" }); ok {
		return nil
	}
	for _, t := range traces {
		markWrong(graded(), t)
	}
	what := "log"
	if !h.run.profile.IsSlidingLog() {
		what = "state"
	}
	perInstance := "instances that each keep their own " + what + " (not one limit over the shared store)"
	cands := []candidate{{
		perInstance,
		"keep the " + what + " in the shared store, not in the instance's memory",
		func(ops []traceOp) (bool, string) { return replayPerInstance(graded, ops), perInstance },
	}}
	// Each replay on fresh algorithms: a replay changes the one it runs on.
	alternatives := func() []model.Alternative { return model.Alternatives(h.run.profile, n, w) }
	for i, a := range alternatives() {
		cands = append(cands, candidate{a.Describe(), a.Hint, func(ops []traceOp) (bool, string) {
			fresh := alternatives()[i]
			return replayAll(fresh.Algorithm, fresh.RemainingVaries, ops), fresh.Describe()
		}})
	}
	var out []candidate
	for _, c := range cands {
		if ok, name := explains(c.replay); ok {
			c.name = name
			out = append(out, c)
		}
	}
	return out
}

// timed is the real-time trace with every instant taken at the sending
// (0), the answer (1) or half-way (2).
func timed(ops []traceOp, at int) []traceOp {
	out := make([]traceOp, len(ops))
	for i, op := range ops {
		if !op.until.IsZero() {
			switch at {
			case 1:
				op.at = op.until
			case 2:
				op.at = op.at.Add(op.until.Sub(op.at) / 2)
			}
		}
		out[i] = op
	}
	return out
}

// replayAll replays ops on a and reports whether it gives every answer
// (of remaining too, unless its remaining varies between implementations).
func replayAll(a model.Algorithm, varies bool, ops []traceOp) bool {
	for _, op := range ops {
		if !step(op, func(int) model.Algorithm { return a }, varies) {
			return false
		}
	}
	return true
}

// markWrong marks the remaining answers of ops that the exact log a gives
// otherwise.
func markWrong(a model.Algorithm, ops []traceOp) {
	for i := range ops {
		op := &ops[i]
		if op.kind == 'G' {
			n, _ := a.Remaining(op.at, op.user)
			op.wrong = strconv.Itoa(n) != op.got
			continue
		}
		step(*op, func(int) model.Algorithm { return a }, false)
	}
}

// hintOf is the hint of the algorithms found, when they share one (the
// variants of one algorithm): then the answers show what to change;
// otherwise "".
func hintOf(found []candidate) string {
	for _, c := range found[1:] {
		if c.hint != found[0].hint {
			return ""
		}
	}
	return found[0].hint
}

// replayPerInstance replays ops on one model of the graded profile per
// instance.
func replayPerInstance(fresh func() model.Algorithm, ops []traceOp) bool {
	logs := map[int]model.Algorithm{}
	multi := false
	var configured []traceOp // instances made later start with these
	of := func(i int) model.Algorithm {
		if i > 0 {
			multi = true
		}
		if logs[i] == nil {
			logs[i] = fresh()
			for _, c := range configured {
				logs[i].Configure(c.n, c.w)
			}
		}
		return logs[i]
	}
	for _, op := range ops {
		switch {
		case op.kind == 'C':
			configured = append(configured, op)
			for _, a := range logs {
				a.Configure(op.n, op.w)
			}
		case op.kind == 'R': // Reset reached instance 0: the others keep their logs
			of(0).Reset(op.user)
		case !step(op, of, false):
			return false
		}
		if op.kind == 'B' && op.instances > 1 {
			multi = true
		}
	}
	return multi // with one instance this is the exact log: no diagnosis
}

// step applies op to the algorithm of its instance and reports whether
// the answer matches. An algorithm whose remaining varies matches every
// remaining answer but a wrong one (op.wrong): a diagnosis must explain
// what went wrong.
func step(op traceOp, of func(int) model.Algorithm, varies bool) bool {
	switch op.kind {
	case 'A':
		ok, _ := of(op.inst).Allow(op.at, op.user)
		return allowedWord(ok) == op.got
	case 'G':
		if varies {
			return !op.wrong
		}
		n, _ := of(op.inst).Remaining(op.at, op.user)
		return strconv.Itoa(n) == op.got
	case 'R':
		of(0).Reset(op.user)
		return true
	case 'C':
		of(0).Configure(op.n, op.w)
		return true
	case 'B':
		allowed := 0
		k := max(1, op.instances)
		for i := range op.n {
			if ok, _ := of((i+op.inst)%k).Allow(op.at, op.user); ok {
				allowed++
			}
		}
		return allowed == op.allowed
	}
	return true
}

// diagnosis is the message's line naming what explains the history.
func diagnosis(found []candidate) string {
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
