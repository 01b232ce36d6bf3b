package specs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlconform/rlconform/internal/engine"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/result"
)

// httpSpecs grade what an HTTP service tells its clients about the limit:
// Retry-After and the RateLimit fields (endpoints only).
func httpSpecs() []engine.Spec {
	return []engine.Spec{
		{ID: "http/retry-after", Level: result.Strict, Needs: []engine.Need{engine.NeedEndpoint},
			Rule:            "a refusal's Retry-After is truthful at every phase of the window (bursts spread over it, just after an epoch-aligned edge, and late in a window the user's first request opened): a request sent after it is admitted, and it is no longer than the earliest admission rounded up to whole seconds",
			Run:             retryAfterSpec,
			Hint:            "set Retry-After to the time until the next request is allowed, from the limiter's state at this refusal (for a log: until the oldest entry that counts leaves), rounded up to whole seconds, never down; a constant such as the window is too short after a burst at some phases",
			HintAllProfiles: true},
		{ID: "http/ratelimit-fields", Level: result.Strict, Needs: []engine.Need{engine.NeedEndpoint},
			Rule:            "the RateLimit fields tell the truth at every phase of the window (bursts spread over it, just after an epoch-aligned edge, and late in a window the user's first request opened): the policy is the one enforced, r is the quota left after the request, t no later than the whole quota's return rounded up (the next unit's or the whole quota's, or between; an epoch instant to the second), and with none left a request sent t later (at that instant) is allowed",
			Run:             rateLimitFieldsSpec,
			Hint:            "send RateLimit-Policy: \"name\";q=N;w=W and RateLimit: \"name\";r=<left after this request>;t=<seconds until more quota, or until the whole quota is back, rounded up> from the limiter's own decision; an epoch X-RateLimit-Reset is that instant rounded up to the second, not the end of a bucket the estimate still counts, nor floored",
			HintAllProfiles: true},
	}
}

// request sends one request as user to instance 0, without judging it:
// the concurrent phases of the http/ specs call it, and the spec's
// goroutine judges each call afterwards (judged).
func request(h *engine.Harness, user string) call {
	c := call{sent: time.Now()}
	c.a, c.err = h.Target().Request(h.Context(), 0, user)
	c.returned = time.Now()
	if c.a.Sent.After(c.sent) { // it left after the grader's pacing
		c.sent = c.a.Sent
	}
	return c
}

// judged judges a call as AllowRequest is judged and returns its answer.
func judged(h *engine.Harness, user string, c call) engine.HTTPAnswer {
	h.JudgeRealTime(0, "AllowRequest", user, c.sent, c.returned, engine.AllowedWord(c.a.Allowed), c.err)
	return c.a
}

// call is one request of a phase, with when it left and was answered.
type call struct {
	a              engine.HTTPAnswer
	sent, returned time.Time
	err            error
}

// phase is one probe of an http/ spec: a user of its own, a burst started
// at a chosen instant, and the request sent when its answers said to come
// back (nil when they did not).
type phase struct {
	name string // how the failure names it
	user string
	at   time.Time
	edge bool // the phase just after an epoch-aligned window edge
	// open, when set, is when the phase's first request is sent, before
	// the burst at at: a window opened by the user's first request is
	// then probed late in its life, not only as it opens.
	open  time.Time
	burst []call
	due   time.Time // when the burst's answers told the client to come back
	after *call
}

// edgeTries is how many times the phase just after an epoch-aligned edge
// is probed before the spec gives up as inconclusive: on a loaded machine
// or a slow service its burst can end, or its later request leave, too
// far into the window to see what that phase shows.
const edgeTries = 3

// lateness is how far into the window p probed, for the phase just after
// an edge: how long after the edge its burst ended, plus how late its
// later request left. A limiter with now/W buckets says what is true only
// at some phases; a lie after an edge (a weighted counter's Retry-After of
// ⌊W⌋, say) shows only in the first part of the window.
func (p *phase) lateness() time.Duration {
	if len(p.burst) == 0 {
		return 0
	}
	end := p.burst[len(p.burst)-1].returned
	d := end.Sub(p.at)
	// A come-back instant already past when the answer came (a reset
	// floored to the second) is met as soon as it can be: not late.
	if due := later(p.due, end); p.after != nil && p.after.sent.After(due) {
		d += p.after.sent.Sub(due)
	}
	return d
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// edgePhase is the phase of user that starts just after the first window
// edge after t of the profile's fixed grid (model.Variant.Grid: Go's
// zero time's for align=go-zero, the same as the epoch's for every window
// that divides a day), or of the epoch's for a profile with none.
func edgePhase(h *engine.Harness, user string, t time.Time) *phase {
	w := h.W()
	g, ok := h.Profile().Grid()
	if !ok {
		g = model.EpochGrid()
	}
	edge, grid := g.Floor(t, w).Add(w), "a window edge of "+g.Name
	at := edge.Add(time.Millisecond)
	return &phase{user: h.User(user), at: at, edge: true,
		name: "the burst at " + engine.FmtOffset(at.Sub(h.Started())) + ", just after " + grid}
}

// spreadPhases is the fewest phases of the http/ specs spread over the
// window that are wanted; one more starts just after an epoch-aligned
// window edge (a multiple of W since the Unix epoch), where a limiter
// with now/W buckets (fixed windows, weighted counters) starts one. What a
// service answers may depend on the phase: a wait announced as whole
// seconds, or as the end of a bucket, is true at some phases and a lie at
// others.
const spreadPhases = 4

// spreadMost bounds the phases spread over the window: each is a burst of
// its own, and a lie confined to less than W/spreadMost is beyond them.
const spreadMost = 41

// spreadSpan is how long, at most, the spread phases may take to start
// when --max-rps does not fit them in one window: a short window is probed
// over several, each phase in a window of its own, from the first phase
// to the last at most this long (or one window).
const spreadSpan = 4 * time.Second

// spread is how the phases spread over the window are laid out.
type spread struct {
	at      []time.Time   // the instants of their bursts
	want    int           // how many were wanted
	every   time.Duration // how far apart their phases of the window are
	windows int           // how many windows they start in
	late    *phase        // the late phase, when it fits beside them
}

// spreadWanted is how many phases spread over the window (and a second
// more, when W is over a second: span) an http/ spec wants: enough that
// any interval of W/(2N) of the window's phases holds one, so that a lie
// confined to it (go-chi/httprate's Retry-After ⌊W⌋, with sub-windows of
// a phase of its own and its estimate rounded) is met whatever the
// service's phase; at least spreadPhases, at most spreadMost.
func spreadWanted(n int, w, span time.Duration) int {
	k := int((time.Duration(2*n+1)*span + w - 1) / w)
	return min(spreadMost, max(spreadPhases, k))
}

// spreadAt lays out k phases one every span/k from start+u, phase i in
// window i mod m: their phases of the window are as even as in one, and
// any one second holds a share of them.
func spreadAt(start time.Time, w, span, u time.Duration, k, m int) []time.Time {
	at := make([]time.Time, k)
	for i := range k {
		at[i] = start.Add(u + span*time.Duration(i)/time.Duration(k) + w*time.Duration(i%m))
	}
	return at
}

// layOut lays out the phases spread over the window beside the one just
// after an edge (at edge): as many as wanted, or as many as the target's
// --max-rps fits in any one second with every phase's later request
// (fitsRPS), starting in as few windows as fit them, up to spreadSpan,
// from a random offset. The late phase is kept when it fits beside them
// at the cost of one spread phase at most.
func layOut(h *engine.Harness, edge time.Time, burst int) spread {
	start, w, rps := h.Started(), h.W(), h.Target().MaxRPS
	span := w
	if w > time.Second { // over the second too: the fields count whole seconds
		span += time.Second
	}
	want := spreadWanted(h.N(), w, span)
	most := max(1, int(spreadSpan/w))
	withLate, without := spread{want: want}, spread{want: want}
	for k := want; k >= 1 && withLate.late == nil; k-- {
		every := span / time.Duration(k)
		u := time.Duration(h.Rand().Int64N(int64(max(1, every))))
		for m := 1; m <= min(most, k); m++ {
			at := spreadAt(start, w, span, u, k, m)
			all := append([]time.Time{edge}, at...)
			s := spread{at: at, want: want, every: every, windows: m}
			if late, ok := latePhase(h, all, burst); ok {
				s.late = late
				withLate = s
				break
			}
			if without.at == nil && fitsRPS(all, burst, rps) {
				without = s
			}
		}
	}
	if withLate.late != nil && len(withLate.at)+1 >= len(without.at) {
		return withLate
	}
	return without
}

// phases lays out the phases of an http/ spec whose bursts send burst
// requests each, and says how many it probes: the one just after an
// epoch-aligned edge, those spread over the window (layOut) and the late
// one (latePhase); only the first with one limit shared by every request.
func phases(h *engine.Harness, burst int) (ps []*phase, note string) {
	h.Origin()
	start := h.Started()
	ps = []*phase{edgePhase(h, "phase0", start)}
	note = "1 phase, just after an epoch-aligned window edge: every request shares one limit, so no two phases can run side by side"
	if !h.Target().SharedLimit {
		s := layOut(h, ps[0].at, burst)
		for i, t := range s.at {
			ps = append(ps, &phase{user: h.User(fmt.Sprintf("phase%d", i+1)), at: t, name: "the burst at " + engine.FmtOffset(t.Sub(start))})
		}
		if s.late != nil {
			ps = append(ps, s.late)
		}
		note = phasesNote(s, h.W(), h.Target().MaxRPS)
	}
	slices.SortFunc(ps, func(a, b *phase) int { return a.at.Compare(b.at) })
	h.Record(0, start, "http/ phases", note)
	return ps, note
}

// phasesNote says which phases an http/ spec probes (see phases): how
// many in all, how many spread over the window and how far apart their
// phases of it are, the one just after an epoch-aligned edge, and the
// late one when it fits; and, when fewer fit than wanted, that a lie
// confined to less of the window can be missed.
func phasesNote(s spread, w time.Duration, rps int) string {
	all := s.want + 2
	if len(s.at) == 0 && s.late == nil {
		return "1 phase, just after an epoch-aligned window edge" + notAll(all, rps, w)
	}
	where := "over the window"
	if s.windows > 1 {
		where = fmt.Sprintf("over the window's phases in %d windows", s.windows)
	}
	parts := []string{fmt.Sprintf("%d spread %s, one every %v from a random offset", len(s.at), where, s.every.Round(time.Millisecond)),
		"1 just after an epoch-aligned window edge"}
	if s.late != nil {
		parts = append(parts, "1 late in a window its user's first request opened")
	}
	total := 1 + len(s.at)
	if s.late != nil {
		total++
	}
	note := fmt.Sprintf("%d phases: %s", total, strings.Join(parts, ", "))
	if len(s.at) < s.want || s.late == nil {
		note += notAll(all, rps, s.every)
	}
	return note
}

// notAll says why a spec probes fewer than all of its phases, and what
// can then go unseen: a lie confined to less than every of the window.
func notAll(all, rps int, every time.Duration) string {
	return fmt.Sprintf(" (not %d: --max-rps %d fits no more; a lie confined to less than %v of the window can be missed)", all, rps, every.Round(time.Millisecond))
}

// latePhase is the phase whose user opens a window with one request at
// the start, then bursts lateOffset into it, when the target's --max-rps
// fits its burst beside the others (at): the other phases' users are
// fresh, so a window opened by a user's first request refuses them as it
// opens, and what a client is told late in such a window goes unseen (a
// Retry-After of the window's life rounded down, say, which is 0 with a
// window of 1s: Flask-Limiter's).
func latePhase(h *engine.Harness, at []time.Time, burst int) (*phase, bool) {
	start := h.Started()
	t := start.Add(h.W() * lateOffset / 10)
	// Its first request is one more in the second after start.
	rps := h.Target().MaxRPS
	if len(at) < 2 || rps == 1 || !fitsRPS(append(slices.Clone(at), t), burst, max(0, rps-1)) {
		return nil, false
	}
	return &phase{user: h.User("late"), open: start, at: t,
		name: fmt.Sprintf("the burst at %s, in a window its user opened at %s", engine.FmtOffset(t.Sub(start)), engine.FmtOffset(0))}, true
}

// lateOffset is how far, in tenths of the window, the late phase's burst
// comes after its user's first request: past the window's middle, so a
// refusal leaves less than half of it.
const lateOffset = 6

// fitsRPS tells whether bursts of burst requests starting at starts, and
// one more request each, keep within rps requests in any one second
// (0: no bound).
func fitsRPS(starts []time.Time, burst, rps int) bool {
	if rps <= 0 {
		return true
	}
	for _, s := range starts {
		n := 0
		for _, o := range starts {
			if !o.Before(s) && o.Sub(s) < time.Second {
				n++
			}
		}
		if n*burst+len(starts) > rps {
			return false
		}
	}
	return true
}

// runPhases runs the phases at once, each burst from its phase's instant
// on. As each burst comes back, judge judges it on the spec's goroutine
// and says when, if at all, its answers told the client to come back; the
// phase's next request is sent then, and then, as it comes back, judge
// judges it too (p.after is set).
//
// Against a profile whose windows lie on the epoch (or on Go's zero
// time's grid), the phase just after
// an edge must probe the first tenth of the window (see lateness): when
// it probed later, it runs again, for a new user, at the next edge, and
// after edgeTries the spec is inconclusive, never passed on a phase it did
// not probe. (Against any other profile no phase is special: the decisions
// of a limiter that follows it do not depend on where the epoch's edges
// fall.) It returns what to add to the spec's note when it ran again.
func runPhases(h *engine.Harness, ps []*phase, burst func(*phase), judge func(*phase) (time.Time, bool)) (note string) {
	runAtOnce(h, ps, burst, judge)
	i := slices.IndexFunc(ps, func(p *phase) bool { return p.edge })
	if _, grid := h.Profile().Grid(); i < 0 || !grid {
		return ""
	}
	p, bound := ps[i], h.W()/10
	var late []string
	for try := 1; p.lateness() > bound; try++ {
		late = append(late, p.lateness().Round(time.Millisecond).String())
		h.Record(0, time.Now(), "http/ phases", fmt.Sprintf("%s probed %v into the window, past its first tenth (%v)", p.name, p.lateness().Round(time.Millisecond), bound))
		// Another try waits for the next edge and, at most, a window
		// more for the client to come back.
		deadline, bounded := h.Context().Deadline()
		if try == edgeTries || bounded && time.Until(deadline) < 3*h.W() {
			panic(engine.Inconclusive{Msg: h.Report(fmt.Sprintf(
				"the burst just after an epoch-aligned window edge probed %s into the window (%d tries), never within its first tenth (%v): the round trips (or this machine) were too slow to see what a client is told at that phase, where a limiter with buckets on the epoch may lie; nothing was found at the other phases",
				strings.Join(late, ", "), try, bound))})
		}
		p = edgePhase(h, fmt.Sprintf("phase0-%d", try), time.Now())
		runAtOnce(h, []*phase{p}, burst, judge)
	}
	if len(late) == 0 {
		return ""
	}
	return fmt.Sprintf(" (the phase just after an edge probed again: %s into the window before)", strings.Join(late, ", "))
}

// runAtOnce runs the phases ps at once (see runPhases).
func runAtOnce(h *engine.Harness, ps []*phase, burst func(*phase), judge func(*phase) (time.Time, bool)) {
	back := make(chan *phase, 2*len(ps))
	for _, p := range ps {
		go func() {
			if !p.open.IsZero() && sleepUntil(h.Context(), p.open) {
				p.burst = append(p.burst, request(h, p.user))
			}
			if sleepUntil(h.Context(), p.at) {
				burst(p)
			}
			back <- p
		}()
	}
	for n := len(ps); n > 0; n-- {
		p := <-back
		if h.Context().Err() != nil {
			h.Fault("the spec ran out of time in its phases")
		}
		if t, ok := judge(p); ok && p.after == nil {
			n++
			p.due = t
			go func() {
				if sleepUntil(h.Context(), t) {
					c := request(h, p.user)
					p.after = &c
				}
				back <- p
			}()
		}
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
// read; only those whose names start with one of fields, when given (each
// malformation starts with its field's name).
func malformed(h *engine.Harness, a engine.HTTPAnswer, fields ...string) {
	var bad []string
	for _, m := range a.Malformed {
		if len(fields) == 0 || slices.ContainsFunc(fields, func(f string) bool { return strings.HasPrefix(m, f) }) {
			bad = append(bad, m)
		}
	}
	if len(bad) > 0 {
		h.Failf("the answer's rate-limit fields are malformed: %s", strings.Join(bad, "; "))
	}
}

// ceilSeconds is d rounded up to whole seconds.
func ceilSeconds(d time.Duration) time.Duration {
	return (d + time.Second - 1) / time.Second * time.Second
}

// quotaBack bounds how long from an instant of [lo, hi] until user's
// whole quota is back, and the latest instant it may be, as the
// real-time oracle knows them; false when it does not.
func quotaBack(h *engine.Harness, user string, lo, hi time.Time) (within time.Duration, by time.Time, ok bool) {
	o, ok := h.Oracle().(interface {
		QuotaBack(user string, lo, hi time.Time) (time.Duration, time.Time, bool)
	})
	if !ok {
		return 0, time.Time{}, false
	}
	return o.QuotaBack(user, lo, hi)
}

func retryAfterSpec(h *engine.Harness) {
	upTo := 4*h.N() + 4 // requests in a burst, until one is refused
	ps, note := phases(h, h.N()+1)
	graded := 0
	again := runPhases(h, ps, func(p *phase) {
		for range upTo {
			c := request(h, p.user)
			p.burst = append(p.burst, c)
			if c.err != nil || !c.a.Allowed {
				return
			}
		}
	}, func(p *phase) (time.Time, bool) {
		refusal := p.burst[len(p.burst)-1].a
		if p.after != nil {
			if a := judged(h, p.user, *p.after); !a.Allowed {
				h.DropPending() // the broken promise is the finding, whatever the model says
				h.Failf("%s: Retry-After said %v, but a request sent %v after the refusal was received was refused: a client that obeys it is refused again",
					p.name, *refusal.RetryAfter, a.Sent.Sub(refusal.Returned).Round(time.Millisecond))
			}
			return time.Time{}, false
		}
		for _, c := range p.burst {
			// Retry-After alone: the other fields are
			// http/ratelimit-fields', which fails them; this spec then
			// grades the Retry-After it was sent.
			malformed(h, judged(h, p.user, c), "Retry-After")
		}
		h.FailIfPending() // a wrong decision: reported as such
		// A service that never refuses, or sends no Retry-After, is seen
		// at the first phase: the others are not waited for.
		if refusal.Allowed {
			h.Skipf("no request was refused in %d: no Retry-After to grade", upTo)
		}
		if refusal.RetryAfter == nil {
			h.Skipf("the service sends no Retry-After with its refusals: not graded (a client then has to guess when to come back)")
		}
		graded++
		d := *refusal.RetryAfter
		_, most := h.Oracle().RetryBounds(p.user, refusal.Sent, refusal.Returned)
		h.Record(0, refusal.Returned, fmt.Sprintf("  Retry-After of the refusal at %s", engine.FmtOffset(refusal.Sent.Sub(h.Started()))), d.String())
		if d > ceilSeconds(most) {
			h.Failf("%s: Retry-After: %v, but %s admits a request within %v at most (%v rounded up to whole seconds): clients wait longer than they must",
				p.name, d.Seconds(), h.ProfileName(), ceilSeconds(most), most.Round(time.Millisecond))
		}
		// Retry-After counts from when the answer was made, no later than
		// it was received.
		return refusal.Returned.Add(d), true
	})
	h.PassWith(fmt.Sprintf("%s%s; Retry-After obeyed after %d refusals", note, again, graded))
}

// noneLeft tells whether a says no quota is left and when more comes:
// the instant a client that waits it out sends its next request.
func noneLeft(a engine.HTTPAnswer) (time.Time, bool) {
	switch {
	case a.Remaining == nil || *a.Remaining != 0 || a.Reset == nil:
		return time.Time{}, false
	case a.ResetAt != nil:
		return *a.ResetAt, true
	}
	return a.Returned.Add(*a.Reset), true
}

// ceilUnixSecond is t rounded up to a whole second of the Unix epoch.
func ceilUnixSecond(t time.Time) time.Time {
	s := time.Unix(t.Unix(), 0)
	if s.Before(t) {
		s = s.Add(time.Second)
	}
	return s
}

func rateLimitFieldsSpec(h *engine.Harness) {
	ps, note := phases(h, h.N()+2)
	kept := 0
	again := runPhases(h, ps, func(p *phase) {
		for range h.N() + 2 {
			c := request(h, p.user)
			p.burst = append(p.burst, c)
			if c.err != nil {
				return
			}
		}
	}, func(p *phase) (time.Time, bool) {
		last := p.burst[len(p.burst)-1].a
		if p.after != nil {
			// t is truthful: when it says no quota is left, a request
			// sent t later is allowed.
			if a := judged(h, p.user, *p.after); !a.Allowed {
				h.DropPending() // the broken promise is the finding, whatever the model says
				when := fmt.Sprintf("more in %v", *last.Reset)
				if last.ResetAt != nil {
					when = fmt.Sprintf("more at unix second %d (%v after the answer was received)", last.ResetAt.Unix(), last.ResetAt.Sub(last.Returned).Round(time.Millisecond))
				}
				h.Failf("%s: the %s fields said no quota left and %s, but a request sent %v after that answer was refused: a client that waits t is refused again",
					p.name, last.Form, when, a.Sent.Sub(last.Returned).Round(time.Millisecond))
			}
			return time.Time{}, false
		}
		seen := false
		for i, c := range p.burst {
			a := judged(h, p.user, c)
			malformed(h, a)
			seen = seen || a.PolicyLimit != nil || a.Remaining != nil || a.Reset != nil
			checkFields(h, p, i+1, a)
		}
		if !seen && last.Form == "json" {
			h.Skipf("the answers' bodies hold none of the members --fields json: names: not graded")
		}
		if !seen && last.Form == "DescriptorStatus" {
			h.Skipf("the answers carry no DescriptorStatus (statuses is empty), or their first has no current_limit nor duration_until_reset: not graded")
		}
		if !seen { // seen at the first phase: the others are not waited for
			h.Skipf("the service sends no RateLimit fields (RateLimit/RateLimit-Policy, RateLimit-Limit/-Remaining/-Reset or X-RateLimit-*): not graded")
		}
		if h.HasPending() {
			return time.Time{}, false // a wrong decision: reported as such
		}
		t, ok := noneLeft(last)
		if ok {
			kept++
		}
		return t, ok
	})
	h.PassWith(fmt.Sprintf("%s%s; t obeyed after %d answers with no quota left", note, again, kept))
}

// checkFields checks the fields of answer i of a phase's burst: the
// policy, the quota left and how long until more.
func checkFields(h *engine.Harness, p *phase, i int, a engine.HTTPAnswer) {
	if a.PolicyLimit != nil && *a.PolicyLimit != h.N() {
		h.Failf("%s, request %d: the policy field says a limit of %d, but the limit enforced is %d", p.name, i, *a.PolicyLimit, h.N())
	}
	if a.PolicyWindow != nil && *a.PolicyWindow != ceilSeconds(h.W()) {
		said := fmt.Sprintf("RateLimit-Policy says w=%v", a.PolicyWindow.Seconds())
		switch a.Form {
		case "json":
			said = fmt.Sprintf("the json limit says a window of %v", *a.PolicyWindow)
		case "DescriptorStatus": // an RLS server's
			said = fmt.Sprintf("current_limit says a window of %v", *a.PolicyWindow)
		}
		h.Failf("%s, request %d: %s, but the window enforced is %v (w=%v in whole seconds)", p.name, i, said, h.W(), ceilSeconds(h.W()).Seconds())
	}
	if a.Remaining != nil {
		// r is what is left after this request: a remaining query at an
		// instant no earlier than the request's.
		j, why, _ := h.Oracle().Judge(model.TimedOp{Kind: model.OpRemaining, User: p.user, Lo: a.Sent, Hi: a.Returned, Remaining: *a.Remaining})
		h.AddEvent(engine.Event{At: a.Sent.Sub(h.Started()), Until: a.Returned.Sub(h.Started()), Op: fmt.Sprintf("  its %s remaining field", a.Form), Got: fmt.Sprint(*a.Remaining)})
		switch j {
		case model.Impossible:
			h.Failf("%s, request %d: the %s fields say %d left, which no instant of the request gives: %s", p.name, i, a.Form, *a.Remaining, why)
		case model.Undecided:
			h.CountUndecided(1)
		default:
			h.CountDecided(1)
		}
	}
	if a.Reset == nil {
		return
	}
	// "Until the quota resets" is honestly the next unit's return or the
	// whole quota's, or anything between: no later than the whole
	// quota's, rounded up (to a whole second of the epoch, for an
	// instant). Whether it is truthful, with none left, is tried after.
	whole, back, ok := quotaBack(h, p.user, a.Sent, a.Returned)
	switch {
	case !ok:
	case a.ResetAt != nil:
		if by := ceilUnixSecond(back); a.ResetAt.After(by) {
			h.Failf("%s, request %d: the %s fields say more quota at unix second %d, but %s gives the whole quota back by unix second %d", p.name, i, a.Form, a.ResetAt.Unix(), h.ProfileName(), by.Unix())
		}
	case *a.Reset > ceilSeconds(whole):
		h.Failf("%s, request %d: the %s fields say more quota in %v, but %s gives the whole quota back within %v", p.name, i, a.Form, *a.Reset, h.ProfileName(), ceilSeconds(whole))
	}
}
