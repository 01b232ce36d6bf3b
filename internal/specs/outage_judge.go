package specs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/grade"
	"github.com/rlconform/rlconform/internal/engine"
	"github.com/rlconform/rlconform/result"
)

// word is the answer as the timeline shows it.
func (a outageAnswer) word() string {
	if a.hung {
		return "no answer"
	}
	got := fmt.Sprint(a.n)
	if a.isAllow() {
		got = engine.AllowedWord(a.ok)
	}
	if a.err != nil {
		return got + ", error: " + a.err.Error()
	}
	return got
}

func (a outageAnswer) isAllow() bool { return len(a.op) > 12 && a.op[:12] == "AllowRequest" }

// want is what the policy answers to op while the store is out.
func (o *outage) want(a outageAnswer) string {
	if !a.isAllow() {
		if o.policy == contract.StoreFailureError {
			return "an error wrapping contract.ErrStore (over HTTP: 503)"
		}
		return "an error wrapping contract.ErrStore (over HTTP: 503), or a count from 0 to N"
	}
	switch o.policy {
	case contract.StoreFailureAllow:
		return `allowed, with no error (over HTTP: 2xx {"allowed":true}; an endpoint: 2xx)`
	case contract.StoreFailureDeny:
		return `denied, with no error (over HTTP: 2xx {"allowed":false}; an endpoint: its refusal status)`
	}
	return "denied, with an error wrapping contract.ErrStore (over HTTP: 503; an endpoint: 5xx)"
}

// judge fails the spec unless a is what the policy answers, in time.
func (o *outage) judge(a outageAnswer, state string) {
	h := o.h
	h.Note(a.op+" ["+state+"]", a.word()+" after "+shortly(a.took).String())
	if a.hung || (a.expired && !o.inProcess && errors.Is(a.err, contract.ErrNoAnswer)) {
		h.FailWith(result.Failure{Kind: result.KindHang, Operation: a.op, Got: "no answer", Want: o.want(a)},
			fmt.Sprintf("%s: %s had not answered after %v (the store timeout %v, twice the slowest round trip %v, and a grace of %v): it hangs, where its policy (%s) wants %s; give the store client dial and read timeouts below the store timeout, honour the context, and never retry past it",
				state, a.op, shortly(o.bound()), o.timeout, shortly(o.rtt), o.grace(), o.policy, o.want(a)))
	}
	if !o.inProcess && !a.expired && errors.Is(a.err, contract.ErrNoAnswer) && a.took >= o.timeout {
		// The call's own bound (--timeout) cut it, after the store
		// timeout and before the grace ran out: neither an answer nor a
		// hang.
		h.NoAnswer(fmt.Sprintf("%s: %s, cut after %v by the client's own timeout (--timeout) before the store timeout %v and its grace had passed (raise --timeout above %v),",
			state, a.op, shortly(a.took), o.timeout, shortly(o.bound())), a.err)
	}
	if p, ok := errors.AsType[*engine.TargetPanic](a.err); ok {
		h.FailWith(result.Failure{Kind: result.KindPanic, Operation: a.op}, fmt.Sprintf("%s: %s panicked: %v", state, a.op, p))
	}
	if !a.isAllow() {
		switch {
		case a.err == nil && o.policy == contract.StoreFailureError:
			o.wrong(a, state, "a count read while the store is out is a guess: under the policy error (the default), every call that needs the store returns an error wrapping contract.ErrStore")
		case a.err == nil && (a.n < 0 || a.n > max(h.N(), burst(h))):
			o.wrong(a, state, fmt.Sprintf("a count outside 0 to %d (N, or what a fresh user may send at once under %s, if more)", max(h.N(), burst(h)), h.ProfileName()))
		case a.err != nil:
			o.wantStoreError(a, state)
		}
		return
	}
	switch o.policy {
	case contract.StoreFailureAllow:
		if a.ok && (a.err == nil || o.legacy && errors.Is(a.err, contract.ErrStore)) || o.callerGaveUp(a) {
			return
		}
		o.wrong(a, state, "the policy declared is allow (fail open): while the store is out every request is allowed, with no error")
	case contract.StoreFailureDeny:
		if !a.ok && a.err == nil || o.callerGaveUp(a) {
			return
		}
		o.wrong(a, state, "the policy declared is deny (fail closed): while the store is out every request is denied, with no error")
	default:
		switch {
		case a.ok:
			o.wrong(a, state, "the policy declared is error (the default): an outage must not switch the limiter off; a limiter that fails open declares allow (contract.StoreFailureAllow; over HTTP, \"store_failure\": \"allow\")")
		case a.err == nil:
			o.wrong(a, state, "the policy declared is error (the default): the caller must learn that the store failed; a limiter that denies without an error declares deny (contract.StoreFailureDeny; over HTTP, \"store_failure\": \"deny\")")
		}
		o.wantStoreError(a, state)
	}
}

// callerGaveUp reports whether an in-process call answered with its
// context's error once the store timeout, its deadline, had passed: under
// any policy, a caller that gave up learns why.
func (o *outage) callerGaveUp(a outageAnswer) bool {
	return o.inProcess && a.expired && errors.Is(a.err, context.DeadlineExceeded)
}

// wantStoreError fails the spec unless a's error wraps contract.ErrStore
// (or, in-process, the context's error).
func (o *outage) wantStoreError(a outageAnswer, state string) {
	if errors.Is(a.err, contract.ErrStore) || o.inProcess && (errors.Is(a.err, context.DeadlineExceeded) || errors.Is(a.err, context.Canceled)) {
		return
	}
	why := "it wraps neither contract.ErrStore nor the context's error: callers cannot tell a store failure from invalid input"
	if errors.Is(a.err, contract.ErrNoAnswer) {
		why = "it wraps neither contract.ErrStore nor the context's error: the connection dropped instead of an answer (answer 503 while the store is out)"
	}
	o.wrong(a, state, why)
}

// wrong fails the spec at answer a, which the policy does not give.
func (o *outage) wrong(a outageAnswer, state, why string) {
	o.h.FailWith(result.Failure{Kind: result.KindWrongAnswer, Operation: a.op, Got: a.word(), Want: o.want(a), Explanation: why},
		fmt.Sprintf("%s: %s = %s after %v, want %s\n  %s", state, a.op, a.word(), shortly(a.took), o.want(a), why))
}

// awaitRecovery waits, once the store answers again, until the limiter
// answers as a healthy one does (see healthy), polling, for at most
// recoveryBound.
func (o *outage) awaitRecovery(state string, fault grade.StoreFault) {
	h := o.h
	deadline := time.Now().Add(recoveryBound)
	for round := 0; ; round++ {
		began := time.Now()
		ok, said := o.healthy(h.User(fmt.Sprintf("recovery-%s-%d", fault, round)))
		switch {
		case ok:
			return
		case h.Context().Err() != nil:
			h.Fault("%s, then back: the spec was stopped while the limiter recovered: %v", state, context.Cause(h.Context()))
		case !time.Now().Before(deadline):
			h.FailWith(result.Failure{Kind: result.KindViolation},
				fmt.Sprintf("%s, then back: %v after the store answered again the limiter still answers as in the outage (%s): it must find its store again by itself, without a restart",
					state, recoveryBound, said))
		}
		if wait := 10*time.Millisecond - time.Since(began); wait > 0 { // a poll, not a hot loop
			select {
			case <-h.Context().Done():
			case <-time.After(wait):
			}
		}
	}
}

// healthy asks the limiter, for a fresh user, what tells a limiter that
// found its store from one in an outage under its policy: an answer with
// no error (error); an allowed request (deny); a request beyond what a
// fresh user may send at once denied (allow). said is the last answer, for the failure.
func (o *outage) healthy(user string) (ok bool, said string) {
	h := o.h
	allow := func() (bool, error) {
		ctx, cancel := o.callContext()
		defer cancel()
		return o.lim.AllowRequest(ctx, user)
	}
	switch o.policy {
	case contract.StoreFailureAllow:
		// One more than the profile lets a fresh user send at once (N for
		// a window, B for a bucket or a GCRA): a limiter counting again
		// denies it.
		k := burst(h) + 1
		for range k {
			ok, err := allow()
			if err != nil {
				return false, "error: " + err.Error()
			}
			if !ok {
				return true, ""
			}
		}
		return false, fmt.Sprintf("a fresh user's %d requests were all allowed", k)
	case contract.StoreFailureDeny:
		ok, err := allow()
		return ok && err == nil, errWord(err, engine.AllowedWord(ok)) + " for a fresh user"
	}
	ok, err := allow()
	return err == nil, errWord(err, engine.AllowedWord(ok))
}

// afterwards grades what the limiter counts once it is back. A stopped
// store never saw the requests made meanwhile: the user who made them has
// its whole quota (a count kept from the outage, a fallback counter,
// shows here). A frozen store kept what it held: a user with N-1 entries
// before has one request left (what ran queued when it woke is unknown,
// so the user of the outage is not graded). Then a fresh user is counted
// as usual.
func (o *outage) afterwards(fault grade.StoreFault, during, kept string) {
	h := o.h
	if fault == grade.StoreStop {
		for range h.N() + 1 {
			h.Allow(during)
		}
		return
	}
	if kept != "" {
		h.Allow(kept)
		h.Allow(kept)
	}
	fresh := h.User(string(fault) + "-after")
	for range h.N() + 1 {
		h.Allow(fresh)
	}
}
