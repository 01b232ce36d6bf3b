package specs

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/rlconform/rlconform/internal/engine"
	"github.com/rlconform/rlconform/model/lincheck"
	"github.com/rlconform/rlconform/result"
)

// unordered returns, for the report's chart, the operations of the users
// whose part of history no serial order explains, each over its call's
// real interval from the history's start, in the order called. Of each
// such user, the operations that could come next after the longest
// serial order porcupine found (called before any other operation left
// out of it had returned) and that the model refuses there are marked
// Unordered, with the answer the model gives there as Want.
//
// m partitions history as the check did (by user), and info holds, for
// each partition, the longest linearizable prefixes that include each
// operation (porcupine numbers a partition's operations in its order).
func unordered(h *engine.Harness, m porcupine.Model, history []porcupine.Operation, info porcupine.LinearizationInfo) []result.Op {
	if m.Partition == nil || m.Init == nil || m.Step == nil {
		return nil
	}
	parts, partials := m.Partition(history), info.PartialLinearizations()
	if len(parts) != len(partials) {
		return nil // not the check's partition: nothing to mark
	}
	var out []result.Op
	for p, part := range parts {
		var longest []int
		for _, lin := range partials[p] {
			if len(lin) > len(longest) {
				longest = lin
			}
		}
		if len(longest) == len(part) {
			continue // this user's operations are explained
		}
		refused := frontier(m, part, longest)
		for id, o := range part {
			op := historyOp(h, o)
			if want, ok := refused[id]; ok {
				op.Unordered, op.Want = true, want
			}
			out = append(out, op)
		}
	}
	slices.SortStableFunc(out, func(a, b result.Op) int { return int(a.At - b.At) })
	for i := range out {
		out[i].Step = i + 1
	}
	return out
}

// frontier returns the operations of part (by index) that could follow
// the serial order longest, by their calls' instants, and that the model
// refuses after it, each with the answer the model accepts there ("" when
// it accepts none of those tried).
func frontier(m porcupine.Model, part []porcupine.Operation, longest []int) map[int]string {
	state := m.Init()
	placed := map[int]bool{}
	for _, id := range longest {
		_, state = m.Step(state, part[id].Input, part[id].Output)
		placed[id] = true
	}
	earliest := int64(-1) // the first return of what the order leaves out
	for id, o := range part {
		if !placed[id] && (earliest < 0 || o.Return < earliest) {
			earliest = o.Return
		}
	}
	out := map[int]string{}
	for id, o := range part {
		if placed[id] || o.Call > earliest {
			continue
		}
		if ok, _ := m.Step(state, o.Input, o.Output); ok {
			continue
		}
		out[id] = accepted(m, state, o)
	}
	return out
}

// accepted is the answer the model takes for o's call in state, of those
// a call of its kind may give: the other allow answer, or a count up to
// the limit; "" when it takes none of them.
func accepted(m porcupine.Model, state any, o porcupine.Operation) string {
	in, got := o.Input.(lincheck.Input), o.Output.(lincheck.Output)
	try := func(out lincheck.Output) bool { ok, _ := m.Step(state, in, out); return ok }
	switch in.Op {
	case 'a':
		if try(lincheck.Output{Allowed: !got.Allowed}) {
			return engine.AllowedWord(!got.Allowed)
		}
	case 'r':
		for n := range max(got.Remaining, 0) + 1 {
			if try(lincheck.Output{Remaining: n}) {
				return strconv.Itoa(n)
			}
		}
	}
	return ""
}

// historyOp is o as the report's data.
func historyOp(h *engine.Harness, o porcupine.Operation) result.Op {
	in, got := o.Input.(lincheck.Input), o.Output.(lincheck.Output)
	op := result.Op{At: time.Duration(o.Call), Until: time.Duration(o.Return), User: h.Short(in.User), Count: 1,
		Limit: h.N(), Window: h.W()}
	switch in.Op {
	case 'a':
		op.Kind, op.Got = result.OpAllow, engine.AllowedWord(got.Allowed)
		op.Op = "AllowRequest(" + op.User + ")"
		if in.Cost > 0 {
			op.Op = fmt.Sprintf("AllowRequestN(%s, %d)", op.User, in.Cost)
		}
	case 'r':
		op.Kind, op.Got = result.OpRemaining, strconv.Itoa(got.Remaining)
		op.Op = "GetRemainingRequests(" + op.User + ")"
	default:
		op.Kind, op.Got = result.OpReset, "ok"
		op.Op = "Reset(" + op.User + ")"
	}
	if got.Unknown {
		op.Got = "error"
	}
	return op
}
