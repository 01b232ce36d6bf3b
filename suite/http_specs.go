package suite

import (
	"fmt"
	"strings"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/model"
)

// httpSpecs grade what an HTTP service tells its clients about the limit:
// Retry-After and the RateLimit fields (endpoints only).
func httpSpecs() []spec {
	return []spec{
		{id: "http/retry-after", level: Strict, needs: []need{needEndpoint},
			rule:            "a refusal's Retry-After is truthful: a request sent after it is admitted, and it is no longer than the earliest admission rounded up to whole seconds",
			run:             retryAfterSpec,
			hint:            "set Retry-After to the time until the next request is allowed (for a log: until the oldest entry that counts leaves), rounded up to whole seconds, never down",
			hintAllProfiles: true},
		{id: "http/ratelimit-fields", level: Strict, needs: []need{needEndpoint},
			rule:            "the RateLimit fields tell the truth: the policy is the one enforced, r is the quota left after the request, t no later than the whole quota's return rounded up (the next unit's or the whole quota's, or between), and with none left a request sent t later is allowed",
			run:             rateLimitFieldsSpec,
			hint:            "send RateLimit-Policy: \"name\";q=N;w=W and RateLimit: \"name\";r=<left after this request>;t=<seconds until more quota, or until the whole quota is back, rounded up> from the limiter's own decision",
			hintAllProfiles: true},
	}
}

// request sends one request as user to instance 0 and judges its
// decision as AllowRequest is judged; it returns the answer's fields.
func (h *harness) request(user string) HTTPAnswer {
	var ans HTTPAnswer
	h.checked(0, "AllowRequest", user, nil, func(contract.RateLimiterContract) (string, error) {
		a, err := h.target.Request(h.ctx, 0, user)
		ans, h.sentAt = a, a.Sent
		return allowedWord(a.Allowed), err
	})
	return ans
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
	u := h.User("u")
	h.Origin()
	var refusal *HTTPAnswer
	for range 4*h.N() + 4 {
		a := h.request(u)
		h.malformed(a)
		if !a.Allowed {
			refusal = &a
			break
		}
	}
	if h.pending != nil {
		return // a wrong decision: reported as such
	}
	if refusal == nil {
		h.Skipf("no request was refused in %d: no Retry-After to grade", 4*h.N()+4)
	}
	if refusal.RetryAfter == nil {
		h.Skipf("the service sends no Retry-After with its refusals: not graded (a client then has to guess when to come back)")
	}
	d := *refusal.RetryAfter
	_, most := h.oracle.RetryBounds(u, refusal.Sent, refusal.Returned)
	h.Note(fmt.Sprintf("Retry-After of the refusal at %s", fmtOffset(refusal.Sent.Sub(h.start))), d.String())
	if d > ceilSeconds(most) {
		h.Failf("Retry-After: %v, but %s admits a request within %v at most (%v rounded up to whole seconds): clients wait longer than they must",
			d.Seconds(), h.profileName(), ceilSeconds(most), most.Round(time.Millisecond))
	}
	// Retry-After counts from when the answer was made, no later than it
	// was received.
	h.waitUntil(refusal.Returned.Add(d))
	a := h.request(u)
	if !a.Allowed {
		h.pending = nil // the broken promise is the finding, whatever the model says
		h.Failf("Retry-After said %v, but a request sent %v after the refusal was received was refused: a client that obeys it is refused again",
			d, a.Sent.Sub(refusal.Returned).Round(time.Millisecond))
	}
}

func rateLimitFieldsSpec(h *harness) {
	u := h.User("u")
	h.Origin()
	seen := false
	var last HTTPAnswer
	for i := range h.N() + 2 {
		a := h.request(u)
		last = a
		h.malformed(a)
		if a.PolicyLimit != nil || a.Remaining != nil || a.Reset != nil {
			seen = true
		}
		if a.PolicyLimit != nil && *a.PolicyLimit != h.N() {
			h.Failf("request %d: the policy field says a limit of %d, but the limit enforced is %d", i+1, *a.PolicyLimit, h.N())
		}
		if a.PolicyWindow != nil && *a.PolicyWindow != ceilSeconds(h.W()) {
			h.Failf("request %d: RateLimit-Policy says w=%v, but the window enforced is %v (w=%v in whole seconds)", i+1, a.PolicyWindow.Seconds(), h.W(), ceilSeconds(h.W()).Seconds())
		}
		if a.Remaining != nil {
			// r is what is left after this request: a remaining query at
			// an instant no earlier than the request's.
			j, why, _ := h.oracle.Judge(model.TimedOp{Kind: model.OpRemaining, User: u, Lo: a.Sent, Hi: a.Returned, Remaining: *a.Remaining})
			h.tl.add(event{at: a.Sent.Sub(h.start), until: a.Returned.Sub(h.start), op: fmt.Sprintf("  its %s remaining field", a.Form), got: fmt.Sprint(*a.Remaining)})
			switch j {
			case model.Impossible:
				h.Failf("request %d: the %s fields say %d left, which no instant of the request gives: %s", i+1, a.Form, *a.Remaining, why)
			case model.Undecided:
				h.undecided++
			default:
				h.decided++
			}
		}
		if a.Reset != nil {
			// "Until the quota resets" is honestly the next unit's return
			// or the whole quota's, or anything between: no later than
			// the whole quota's, rounded up. Whether it is truthful, with
			// none left, is tried below.
			if whole, ok := h.quotaBack(u, a.Sent, a.Returned); ok && *a.Reset > ceilSeconds(whole) {
				h.Failf("request %d: the %s fields say more quota in %v, but %s gives the whole quota back within %v", i+1, a.Form, *a.Reset, h.profileName(), ceilSeconds(whole))
			}
		}
	}
	if !seen {
		h.Skipf("the service sends no RateLimit fields (RateLimit/RateLimit-Policy, RateLimit-Limit/-Remaining/-Reset or X-RateLimit-*): not graded")
	}
	// t is truthful: when it says no quota is left, a request sent t
	// later is allowed.
	if last.Reset != nil && last.Remaining != nil && *last.Remaining == 0 && h.pending == nil {
		h.waitUntil(last.Returned.Add(*last.Reset))
		a := h.request(u)
		if !a.Allowed {
			h.pending = nil // the broken promise is the finding, whatever the model says
			h.Failf("the %s fields said no quota left and more in %v, but a request sent %v after that answer was refused: a client that waits t is refused again",
				last.Form, *last.Reset, a.Sent.Sub(last.Returned).Round(time.Millisecond))
		}
	}
}
