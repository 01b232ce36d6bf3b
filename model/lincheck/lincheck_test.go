package lincheck_test

import (
	"sync/atomic"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"

	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/model/lincheck"
)

func same(s string) string { return s }

// op is one call of client c over [call, ret] (porcupine's clock) at the
// fake clock's instant at, ms.
func op(c int, call, ret int64, in lincheck.Input, out lincheck.Output) porcupine.Operation {
	return porcupine.Operation{ClientId: c, Call: call, Return: ret, Input: in, Output: out}
}

// Two concurrent allows of a limit of 1 at one instant: one allowed and
// one denied is linearizable, both allowed is not, and one allowed with
// the other's outcome unknown is.
func TestSlidingLog(t *testing.T) {
	allow := lincheck.Input{Op: 'a', User: "u", At: 1000}
	m := lincheck.SlidingLog(1, 1000, same)
	check := func(a, b lincheck.Output) bool {
		return porcupine.CheckOperations(m, []porcupine.Operation{op(0, 0, 10, allow, a), op(1, 1, 9, allow, b)})
	}
	assert.True(t, check(lincheck.Output{Allowed: true}, lincheck.Output{}))
	assert.False(t, check(lincheck.Output{Allowed: true}, lincheck.Output{Allowed: true}))
	assert.True(t, check(lincheck.Output{Allowed: true}, lincheck.Output{Unknown: true}))
}

// The same history graded as a fixed window and in real time: an allow
// whose interval spans the window's edge may have been decided after it.
func TestProfileRealTime(t *testing.T) {
	var overflow atomic.Bool
	m := lincheck.Profile(model.MustVariant("fixed-window:align=epoch"), 1, 1000, same, true, &overflow)
	first := op(0, 0, 1, lincheck.Input{Op: 'a', User: "u", Lo: 1_767_225_600_990, Hi: 1_767_225_600_995}, lincheck.Output{Allowed: true})
	across := op(0, 2, 3, lincheck.Input{Op: 'a', User: "u", Lo: 1_767_225_600_996, Hi: 1_767_225_601_005}, lincheck.Output{Allowed: true})
	within := op(0, 2, 3, lincheck.Input{Op: 'a', User: "u", Lo: 1_767_225_600_996, Hi: 1_767_225_600_999}, lincheck.Output{Allowed: true})
	assert.True(t, porcupine.CheckOperations(m, []porcupine.Operation{first, across}))
	assert.False(t, porcupine.CheckOperations(m, []porcupine.Operation{first, within}))
	assert.False(t, overflow.Load())
	assert.Empty(t, lincheck.TooWide([]porcupine.Operation{first, across}))
}

// A query that writes (query=write) saves the user's state: on an
// interval bucket of 1 per second forgotten a second after its last write
// (expire=idle), a query at 900ms keeps the bucket of 0ms alive through
// its refill at 1000ms, so its grid holds and the allow at 2100ms is
// after its next refill (2000ms). Without the query's write the bucket is
// forgotten at 1000ms, remade at 1500ms, and 2100ms is before its refill:
// denied. The check once stepped a query on a copy it threw away, and
// failed the reference implementation of this profile.
func TestAQueryThatWritesSavesTheState(t *testing.T) {
	var overflow atomic.Bool
	m := lincheck.Profile(model.MustVariant("token-bucket:refill=interval,expire=idle,query=write"), 1, 1000, same, false, &overflow)
	at := func(c int, ms int64, i lincheck.Input, o lincheck.Output) porcupine.Operation {
		i.User, i.At = "u", ms
		return op(c, ms, ms+1, i, o)
	}
	history := []porcupine.Operation{
		at(0, 0, lincheck.Input{Op: 'a'}, lincheck.Output{Allowed: true}),
		at(0, 900, lincheck.Input{Op: 'r'}, lincheck.Output{Remaining: 0}),
		at(0, 1500, lincheck.Input{Op: 'a'}, lincheck.Output{Allowed: true}),
		at(0, 2100, lincheck.Input{Op: 'a'}, lincheck.Output{Allowed: true}),
	}
	assert.True(t, porcupine.CheckOperations(m, history))
	history[3] = at(0, 2100, lincheck.Input{Op: 'a'}, lincheck.Output{Allowed: false})
	assert.False(t, porcupine.CheckOperations(m, history), "the query's write is not seen")
	assert.False(t, overflow.Load())
}

// Requests of a cost: on the sliding log of 3, a cost of 2 then one of 2
// at one instant is allowed then denied; both allowed is not
// linearizable, nor is a cost of 2 denied on a fresh user. Real time and
// the profiles' models step with the cost too.
func TestWeightedInputs(t *testing.T) {
	pair := lincheck.Input{Op: 'a', User: "u", At: 1000, Lo: 1000, Hi: 1000, Cost: 2}
	allowed, denied := lincheck.Output{Allowed: true}, lincheck.Output{}
	seq := func(outs ...lincheck.Output) []porcupine.Operation {
		var ops []porcupine.Operation
		for i, o := range outs {
			ops = append(ops, op(0, int64(2*i), int64(2*i+1), pair, o))
		}
		return ops
	}
	var overflow atomic.Bool
	for name, m := range map[string]porcupine.Model{
		"sliding log":           lincheck.SlidingLog(3, 1000, same),
		"sliding log real time": lincheck.SlidingLogRealTime(3, 1000, same),
		"fixed window":          lincheck.Profile(model.MustVariant("fixed-window"), 3, 1000, same, false, &overflow),
		"gcra real time":        lincheck.Profile(model.MustVariant("gcra"), 3, 1000, same, true, &overflow),
	} {
		assert.True(t, porcupine.CheckOperations(m, seq(allowed, denied)), name)
		assert.False(t, porcupine.CheckOperations(m, seq(allowed, allowed)), name)
		assert.False(t, porcupine.CheckOperations(m, seq(denied)), name)
		unit := seq(allowed)
		unit = append(unit, op(0, 2, 3, lincheck.Input{Op: 'a', User: "u", At: 1000, Lo: 1000, Hi: 1000}, allowed))
		assert.True(t, porcupine.CheckOperations(m, unit), "%s: a unit request beside the pair", name)
		over := []porcupine.Operation{op(0, 0, 1, lincheck.Input{Op: 'a', User: "u", At: 1000, Lo: 1000, Hi: 1000, Cost: 4}, allowed)}
		assert.False(t, porcupine.CheckOperations(m, over), "%s: a cost above the limit", name)
	}
	assert.False(t, overflow.Load())
}
