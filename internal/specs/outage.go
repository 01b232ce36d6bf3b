package specs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/grade"
	"github.com/rlconform/rlconform/internal/engine"
)

// robust/store-outage faults the target's store twice, stopped (connections
// refused) and frozen (SIGSTOP: connections hang), and grades each call
// made meanwhile against the policy the target declares
// (contract.StoreFailure), then what it counts once the store is back.

// Bounds of the outage spec, in real time.
const (
	// faultBound bounds one action of a store fault (a command such as
	// docker stop may take seconds): past it the action is a fault of the
	// grader's.
	faultBound = 30 * time.Second
	// recoveryBound is how long after the store answers again the
	// limiter may take to count again: its client reconnects on a
	// schedule of its own.
	recoveryBound = 10 * time.Second
	// minGrace is the least grace a call gets past the store timeout and
	// the round trip before it counts as hanging.
	minGrace = 500 * time.Millisecond
)

// outage is one grading of robust/store-outage: the limiter, the policy
// it declares, and how long each of its calls may take.
type outage struct {
	h   *engine.Harness
	lim contract.RateLimiterContract
	// policy is the declared one; legacy, that it came from the
	// deprecated Capabilities.FailOpen, which lets an allowed answer
	// carry an error wrapping ErrStore.
	policy contract.StoreFailure
	legacy bool
	// timeout is the store timeout; rtt the slowest round trip measured
	// before the first fault.
	timeout, rtt time.Duration
	// inProcess: the limiter gets the grader's contexts (their deadline
	// is the store timeout); over HTTP the grader stops waiting at bound.
	inProcess bool
	// took says how long each phase's calls and recovery took, for the
	// result's note.
	took []string
}

// outageAnswer is the answer to one call made while the store is out.
type outageAnswer struct {
	op   string // AllowRequest(u), GetRemainingRequests(u)
	ok   bool   // AllowRequest's decision
	n    int    // GetRemainingRequests's count
	err  error
	took time.Duration
	// hung: no answer within bound; expired: the call's context ended
	// before it answered (in-process: the store timeout passed; over
	// HTTP: the grader stopped waiting).
	hung, expired bool
}

func storeOutage(h *engine.Harness) {
	caps := h.Target().Capabilities
	//lint:ignore SA1019 a target that still declares FailOpen is graded as it always was
	legacy := caps.StoreFailure == "" && caps.FailOpen
	o := &outage{h: h, lim: h.Instance(0), policy: caps.OnStoreFailure(), legacy: legacy,
		timeout: h.Config().StoreTimeout, inProcess: len(h.Target().Addresses) == 0}
	o.measure()
	faulted := false
	defer func() { // whatever happens, the store is left answering
		if faulted {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(h.Context()), faultBound)
			defer cancel()
			h.StoreFault(ctx, grade.StoreResume) //nolint:errcheck // the spec has already ended; the run checks its store after a failure
		}
	}()
	for _, fault := range []grade.StoreFault{grade.StoreStop, grade.StoreFreeze} {
		o.phase(fault, &faulted)
	}
	h.PassWith(fmt.Sprintf("policy %s; %s", o.policy, strings.Join(o.took, "; ")))
}

// measure times three calls before any fault: the slowest is the round
// trip a call may add to the store timeout.
func (o *outage) measure() {
	u := o.h.User("before")
	for range 3 {
		began := time.Now()
		o.h.Allow(u)
		o.rtt = max(o.rtt, time.Since(began))
	}
}

// bound is how long a call may take while the store is out before it
// counts as hanging: the store timeout, twice the slowest round trip, and
// a grace of half the store timeout (at least minGrace).
func (o *outage) bound() time.Duration {
	return o.timeout + 2*o.rtt + o.grace()
}

func (o *outage) grace() time.Duration { return max(o.timeout/2, minGrace) }

// phase puts fault on the store, grades the calls made meanwhile, ends
// it, waits for the limiter to count again and grades what it counts.
// faulted says whether a fault is in force, for the spec's deferred end.
func (o *outage) phase(fault grade.StoreFault, faulted *bool) {
	h := o.h
	state := map[grade.StoreFault]string{grade.StoreStop: "store stopped", grade.StoreFreeze: "store frozen"}[fault]
	during := h.User(string(fault) + "-during")
	kept := ""
	if fault == grade.StoreFreeze && !h.RealTime() {
		// A user whose entries the frozen store keeps: counted from them
		// once it is back.
		kept = h.User("kept")
		for range h.N() - 1 {
			h.Allow(kept)
		}
	}
	ctx, cancel := context.WithTimeout(h.Context(), faultBound)
	defer cancel()
	*faulted = true // a fault that failed half-way is ended too
	if err := h.StoreFault(ctx, fault); err != nil {
		if fault == grade.StoreFreeze && errors.Is(err, errors.ErrUnsupported) {
			*faulted = false
			o.took = append(o.took, state+": not graded ("+err.Error()+")")
			return
		}
		h.Fault("%s: %v", state, err)
	}
	h.Note("store", state[len("store "):]+" by the grader")
	slowest := o.calls(during, state)
	if err := h.StoreFault(ctx, grade.StoreResume); err != nil {
		h.Fault("ending the fault (%s): %v", state, err)
	}
	*faulted = false
	back := time.Now()
	o.awaitRecovery(state, fault)
	h.Note("store", fmt.Sprintf("answering again; the limiter counted again %v later", shortly(time.Since(back))))
	o.took = append(o.took, fmt.Sprintf("%s: answers in ≤%v, counting again %v after it was back", state, shortly(slowest), shortly(time.Since(back))))
	o.afterwards(fault, during, kept)
}

// calls makes each call once, at once, for user while the store is out,
// and judges the answers; it returns how long the slowest took.
func (o *outage) calls(user, state string) time.Duration {
	h := o.h
	type call struct {
		op string
		do func(ctx context.Context) outageAnswer
	}
	calls := []call{{"AllowRequest", func(ctx context.Context) outageAnswer {
		ok, err := o.lim.AllowRequest(ctx, user)
		return outageAnswer{ok: ok, err: err}
	}}}
	if h.Target().Capabilities.Remaining {
		calls = append(calls, call{"GetRemainingRequests", func(ctx context.Context) outageAnswer {
			n, err := o.lim.GetRemainingRequests(ctx, user)
			return outageAnswer{n: n, err: err}
		}})
	}
	answers := make(chan outageAnswer, len(calls))
	for _, c := range calls {
		go func() {
			ctx, cancel := o.callContext()
			defer cancel()
			began := time.Now()
			a := c.do(ctx)
			a.op, a.took, a.expired = c.op+"("+h.Short(user)+")", time.Since(began), ctx.Err() != nil
			answers <- a
		}()
	}
	got := o.collect(answers, len(calls))
	if h.Context().Err() != nil {
		h.Fault("%s: the spec was stopped while its calls were out: %v", state, context.Cause(h.Context()))
	}
	var slowest time.Duration
	for _, c := range calls {
		a, ok := got[c.op+"("+h.Short(user)+")"]
		if !ok {
			a = outageAnswer{op: c.op + "(" + h.Short(user) + ")", hung: true, took: o.bound()}
		}
		slowest = max(slowest, a.took)
		o.judge(a, state)
	}
	return slowest
}

// callContext is a call's context: in-process, the store timeout is its
// deadline; over HTTP, the bound (the grader stops waiting then).
func (o *outage) callContext() (context.Context, context.CancelFunc) {
	if o.inProcess {
		return context.WithTimeout(o.h.Context(), o.timeout)
	}
	return context.WithTimeout(o.h.Context(), o.bound())
}

// collect receives up to n answers until the bound has passed (and, over
// HTTP, a second more: a call cut at the bound by its context returns
// just after it), by operation.
func (o *outage) collect(answers <-chan outageAnswer, n int) map[string]outageAnswer {
	wait := o.bound()
	if !o.inProcess {
		wait += time.Second
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	got := map[string]outageAnswer{}
	for len(got) < n {
		select {
		case a := <-answers:
			got[a.op] = a
		case <-timer.C:
			return got
		case <-o.h.Context().Done():
			return got
		}
	}
	return got
}

// shortly is d as a report shows it: to the millisecond, or to 100µs
// below 10ms.
func shortly(d time.Duration) time.Duration {
	if d < 10*time.Millisecond {
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}
