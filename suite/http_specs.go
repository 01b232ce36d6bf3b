package suite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rlconform/rlconform/model"
)

// httpSpecs grade what an HTTP service tells its clients about the limit:
// Retry-After and the RateLimit fields (endpoints only).
func httpSpecs() []spec {
	return []spec{
		{id: "http/retry-after", level: Strict, needs: []need{needEndpoint},
			rule: "a refusal's Retry-After is truthful: a request sent after it is admitted, and it is no longer than the earliest admission rounded up to whole seconds",
			run:  retryAfterSpec,
			hint: "set Retry-After to the time until the next request is allowed (for a log: until the oldest entry that counts leaves), rounded up to whole seconds, never down"},
		{id: "http/ratelimit-fields", level: Strict, needs: []need{needEndpoint},
			rule: "the RateLimit fields tell the truth: the policy is the one enforced, r is the quota left after the request, t no later than the whole quota's return rounded up (the next unit's or the whole quota's, or between), and with none left a request sent t later is allowed",
			run:  rateLimitFieldsSpec,
			hint: "send RateLimit-Policy: \"name\";q=N;w=W and RateLimit: \"name\";r=<left after this request>;t=<seconds until more quota, or until the whole quota is back, rounded up> from the limiter's own decision"},
	}
}

// request sends one request as user to instance 0, without judging it:
// the concurrent phases of the http/ specs call it, and the spec's
// goroutine judges each call afterwards (judged).
func (h *harness) request(user string) call {
	c := call{sent: time.Now()}
	c.a, c.err = h.target.Request(h.ctx, 0, user)
	c.returned = time.Now()
	if c.a.Sent.After(c.sent) { // it left after the grader's pacing
		c.sent = c.a.Sent
	}
	return c
}

// judged judges a call as AllowRequest is judged and returns its answer.
func (h *harness) judged(user string, c call) HTTPAnswer {
	h.judgeRealTime(0, "AllowRequest", user, c.sent, c.returned, allowedWord(c.a.Allowed), c.err)
	return c.a
}

// call is one request of a phase, with when it left and was answered.
type call struct {
	a              HTTPAnswer
	sent, returned time.Time
	err            error
}

// phase is one probe of an http/ spec: a user of its own, a burst started
// at a chosen instant, and the request sent when its answers said to come
// back (nil when they did not).
type phase struct {
	name  string // how the failure names it
	user  string
	at    time.Time
	burst []call
	after *call
}

// sendAt sends the phase's request after the burst at t.
func (p *phase) sendAt(h *harness, t time.Time) {
	if sleepUntil(h.ctx, t) {
		c := h.request(p.user)
		p.after = &c
	}
}

// spreadPhases is how many of the http/ specs' phases are spread over the
// window; one more starts just after a window edge counted from the Unix
// epoch, where a limiter with now/W buckets (fixed windows, weighted
// counters) starts one. What a service answers may depend on the phase:
// a wait announced as whole seconds, or as the end of a bucket, is true at
// some phases and a lie at others.
const spreadPhases = 4

// phases lays out the phases of an http/ spec whose bursts send burst
// requests each, and says how many it probes: the one just after an
// epoch-aligned edge, then as many spread over the window (and, for a
// window over a second, over the second too, since the fields count whole
// seconds) as the target's --max-rps fits in any one second with every
// phase's later request; only the first with one limit shared by every
// request.
func (h *harness) phases(burst int) (ps []*phase, note string) {
	h.Origin()
	start, w := h.start, h.W()
	edge := time.Unix(0, (start.UnixNano()/int64(w)+1)*int64(w))
	at := []time.Time{edge.Add(time.Millisecond)}
	note = "1 phase, just after a window edge counted from the Unix epoch: every request of this service shares one limit, so no two phases can run side by side"
	if !h.target.SharedLimit {
		for k := spreadPhases; k >= 0; k-- {
			at = at[:1]
			for i := range k {
				off := w * time.Duration(i) / time.Duration(k)
				if w > time.Second {
					off += time.Second * time.Duration(i) / time.Duration(k)
				}
				at = append(at, start.Add(off))
			}
			if k == 0 || fitsRPS(at, burst, h.target.MaxRPS) {
				break
			}
		}
		note = fmt.Sprintf("%d phases, each its own user: %d spread over the window and 1 just after a window edge counted from the Unix epoch", len(at), len(at)-1)
		if len(at)-1 < spreadPhases {
			note += fmt.Sprintf(" (--max-rps %d fits no more than %d)", h.target.MaxRPS, len(at)-1)
		}
	}
	for i, t := range at {
		p := &phase{user: h.User(fmt.Sprintf("phase%d", i)), at: t, name: "the burst at " + fmtOffset(t.Sub(start))}
		if i == 0 {
			p.name += ", just after a window edge counted from the Unix epoch"
		}
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b *phase) int { return a.at.Compare(b.at) })
	h.record(0, start, "http/ phases", note)
	return ps, note
}

// fitsRPS tells whether bursts of burst requests starting at starts, and
// one more request each, keep within rps requests in any one second
// (0: no bound).
func fitsRPS(starts []time.Time, burst, rps int) bool {
	for _, s := range starts {
		n := 0
		for _, o := range starts {
			if !o.Before(s) && o.Sub(s) < time.Second {
				n++
			}
		}
		if rps > 0 && n*burst+len(starts) > rps {
			return false
		}
	}
	return true
}

// runPhases runs each phase's body from its instant on, all at once, and waits
// for them.
func (h *harness) runPhases(ps []*phase, body func(*phase)) {
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() {
			if sleepUntil(h.ctx, p.at) {
				body(p)
			}
		})
	}
	wg.Wait()
	if h.ctx.Err() != nil {
		h.fault("the spec ran out of time in its phases")
	}
}

// sleepUntil waits until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// malformed fails the spec on fields the service sent but no client can
// read.
func (h *harness) malformed(a HTTPAnswer) {
	if len(a.Malformed) > 0 {
		h.Failf("the answer's rate-limit fields are malformed: %s", strings.Join(a.Malformed, "; "))
	}
}

// ceilSeconds is d rounded up to whole seconds.
func ceilSeconds(d time.Duration) time.Duration {
	return (d + time.Second - 1) / time.Second * time.Second
}

// quotaBack bounds how long from an instant of [lo, hi] until user's
// whole quota is back, as the real-time oracle knows it; false when it
// does not.
func (h *harness) quotaBack(user string, lo, hi time.Time) (time.Duration, bool) {
	o, ok := h.oracle.(interface {
		QuotaBack(user string, lo, hi time.Time) (time.Duration, bool)
	})
	if !ok {
		return 0, false
	}
	return o.QuotaBack(user, lo, hi)
}

func retryAfterSpec(h *harness) {
	most := 4*h.N() + 4
	ps, note := h.phases(h.N() + 1)
	h.runPhases(ps, func(p *phase) {
		for range most {
			c := h.request(p.user)
			p.burst = append(p.burst, c)
			if c.err != nil || !c.a.Allowed {
				break
			}
		}
		if last := p.burst[len(p.burst)-1].a; !last.Allowed && last.RetryAfter != nil {
			// Retry-After counts from when the answer was made, no later
			// than it was received.
			p.sendAt(h, last.Returned.Add(*last.RetryAfter))
		}
	})
	refused, graded := 0, 0
	for _, p := range ps {
		var refusal *HTTPAnswer
		for _, c := range p.burst {
			if a := h.judged(p.user, c); !a.Allowed {
				refusal = &a
			}
			h.malformed(c.a)
		}
		if h.pending != nil {
			return // a wrong decision: reported as such
		}
		if refusal == nil {
			continue
		}
		refused++
		if refusal.RetryAfter == nil || p.after == nil {
			continue
		}
		graded++
		d := *refusal.RetryAfter
		_, most := h.oracle.RetryBounds(p.user, refusal.Sent, refusal.Returned)
		h.Note(fmt.Sprintf("Retry-After of the refusal at %s", fmtOffset(refusal.Sent.Sub(h.start))), d.String())
		if d > ceilSeconds(most) {
			h.Failf("%s: Retry-After: %v, but %s admits a request within %v at most (%v rounded up to whole seconds): clients wait longer than they must",
				p.name, d.Seconds(), h.profileName(), ceilSeconds(most), most.Round(time.Millisecond))
		}
		if a := h.judged(p.user, *p.after); !a.Allowed {
			h.pending = nil // the broken promise is the finding, whatever the model says
			h.Failf("%s: Retry-After said %v, but a request sent %v after the refusal was received was refused: a client that obeys it is refused again",
				p.name, d, a.Sent.Sub(refusal.Returned).Round(time.Millisecond))
		}
	}
	switch {
	case refused == 0:
		h.Skipf("no request was refused in %d per phase: no Retry-After to grade", most)
	case graded == 0:
		h.Skipf("the service sends no Retry-After with its refusals: not graded (a client then has to guess when to come back)")
	}
	h.passNote = fmt.Sprintf("%s; %d refusals' Retry-After obeyed", note, graded)
}

// noneLeft tells whether a says no quota is left and when more comes:
// the instant a client that waits it out sends its next request.
func noneLeft(a HTTPAnswer) (time.Time, bool) {
	switch {
	case a.Remaining == nil || *a.Remaining != 0 || a.Reset == nil:
		return time.Time{}, false
	case a.ResetAt != nil:
		return *a.ResetAt, true
	}
	return a.Returned.Add(*a.Reset), true
}

// ceilSecond is t rounded up to a whole second of the Unix epoch.
func ceilSecond(t time.Time) time.Time {
	s := time.Unix(t.Unix(), 0)
	if s.Before(t) {
		s = s.Add(time.Second)
	}
	return s
}

func rateLimitFieldsSpec(h *harness) {
	ps, note := h.phases(h.N() + 2)
	h.runPhases(ps, func(p *phase) {
		for range h.N() + 2 {
			c := h.request(p.user)
			p.burst = append(p.burst, c)
			if c.err != nil {
				return
			}
		}
		if t, ok := noneLeft(p.burst[len(p.burst)-1].a); ok {
			p.sendAt(h, t)
		}
	})
	seen, kept := false, 0
	for _, p := range ps {
		for _, c := range p.burst {
			a := c.a
			seen = seen || a.PolicyLimit != nil || a.Remaining != nil || a.Reset != nil
		}
	}
	if !seen {
		h.Skipf("the service sends no RateLimit fields (RateLimit/RateLimit-Policy, RateLimit-Limit/-Remaining/-Reset or X-RateLimit-*): not graded")
	}
	for _, p := range ps {
		for i, c := range p.burst {
			a := h.judged(p.user, c)
			h.malformed(a)
			h.checkFields(p, i+1, a)
		}
		// t is truthful: when it says no quota is left, a request sent t
		// later is allowed.
		if p.after == nil || h.pending != nil {
			continue
		}
		last := p.burst[len(p.burst)-1].a
		kept++
		if a := h.judged(p.user, *p.after); !a.Allowed {
			h.pending = nil // the broken promise is the finding, whatever the model says
			when := fmt.Sprintf("more in %v", *last.Reset)
			if last.ResetAt != nil {
				when = fmt.Sprintf("more at unix second %d (%v after the answer was received)", last.ResetAt.Unix(), last.ResetAt.Sub(last.Returned).Round(time.Millisecond))
			}
			h.Failf("%s: the %s fields said no quota left and %s, but a request sent %v after that answer was refused: a client that waits t is refused again",
				p.name, last.Form, when, a.Sent.Sub(last.Returned).Round(time.Millisecond))
		}
	}
	h.passNote = fmt.Sprintf("%s; %d resets with no quota left obeyed", note, kept)
}

// checkFields checks the fields of answer i of a phase's burst: the
// policy, the quota left and how long until more.
func (h *harness) checkFields(p *phase, i int, a HTTPAnswer) {
	if a.PolicyLimit != nil && *a.PolicyLimit != h.N() {
		h.Failf("%s, request %d: the policy field says a limit of %d, but the limit enforced is %d", p.name, i, *a.PolicyLimit, h.N())
	}
	if a.PolicyWindow != nil && *a.PolicyWindow != ceilSeconds(h.W()) {
		h.Failf("%s, request %d: RateLimit-Policy says w=%v, but the window enforced is %v (w=%v in whole seconds)", p.name, i, a.PolicyWindow.Seconds(), h.W(), ceilSeconds(h.W()).Seconds())
	}
	if a.Remaining != nil {
		// r is what is left after this request: a remaining query at an
		// instant no earlier than the request's.
		j, why, _ := h.oracle.Judge(model.TimedOp{Kind: model.OpRemaining, User: p.user, Lo: a.Sent, Hi: a.Returned, Remaining: *a.Remaining})
		h.tl.add(event{at: a.Sent.Sub(h.start), until: a.Returned.Sub(h.start), op: fmt.Sprintf("  its %s remaining field", a.Form), got: fmt.Sprint(*a.Remaining)})
		switch j {
		case model.Impossible:
			h.Failf("%s, request %d: the %s fields say %d left, which no instant of the request gives: %s", p.name, i, a.Form, *a.Remaining, why)
		case model.Undecided:
			h.undecided++
		default:
			h.decided++
		}
	}
	if a.Reset == nil {
		return
	}
	// "Until the quota resets" is honestly the next unit's return or the
	// whole quota's, or anything between: no later than the whole
	// quota's, rounded up (to a whole second of the epoch, for an
	// instant). Whether it is truthful, with none left, is tried after.
	whole, ok := h.quotaBack(p.user, a.Sent, a.Returned)
	switch {
	case !ok:
	case a.ResetAt != nil:
		if by := ceilSecond(a.Sent.Add(whole)); a.ResetAt.After(by) {
			h.Failf("%s, request %d: the %s fields say more quota at unix second %d, but %s gives the whole quota back by unix second %d", p.name, i, a.Form, a.ResetAt.Unix(), h.profileName(), by.Unix())
		}
	case *a.Reset > ceilSeconds(whole):
		h.Failf("%s, request %d: the %s fields say more quota in %v, but %s gives the whole quota back within %v", p.name, i, a.Form, *a.Reset, h.profileName(), ceilSeconds(whole))
	}
}
