package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/alternatives"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/result"
)

// identifyProbes are the specs whose histories tell profiles apart.
var identifyProbes = []string{
	"core/allow-within-limit", "core/block-over-limit", "core/sliding-expiry", "core/remaining",
	"strict/boundary-burst-epoch", "strict/boundary-burst-first", "strict/rolling-expiry",
	"strict/same-millisecond-burst", "strict/denied-not-logged", "strict/raised-limit",
}

// burstProbe measures how many requests a fresh user gets at once.
func burstProbe() Spec {
	return Spec{ID: "identify/burst", Level: result.Core, Rule: "a fresh user's requests at one instant: how many are allowed",
		Run: func(h *Harness) {
			h.CheckBurst([]string{h.User("burst")}, 4*h.N()+4, 1, []contract.RateLimiterContract{h.Instance(0)})
		}}
}

// gridProbe tells windows on the epoch, on a grid anchored at the first
// request and opened by the first request apart: an anchor off every epoch
// edge, a full window half a window after the anchor's, then requests just
// after the next epoch edge, at the grid's edge and at the opened
// window's end. On the fake clock, with a window on which the epoch's grid
// and Go's (time.Time.Truncate's) differ, it tells those two apart too:
// N requests of another user just before an edge of one, one a little
// after (see gridsApart).
func gridProbe() Spec {
	return Spec{ID: "identify/grid", Level: result.Core, Rule: "where a fixed window's edges are: the epoch, Go's zero time, a grid anchored at the first request, or a window opened by a request",
		Run: func(h *Harness) {
			u := h.User("grid")
			w := h.W()
			a := probeStart(h, 12_345*time.Millisecond)
			h.At(a)
			h.Allow(u)
			h.At(a + w + w/2)
			for range h.N() + 1 {
				h.Allow(u)
			}
			if h.fake != nil {
				h.At(2*w + time.Millisecond) // just after an epoch edge
				h.Allow(u)
			}
			h.After(a + 2*w) // the grid's edge
			h.Allow(u)
			h.Before(a + 2*w + w/2) // the opened window's end
			h.Allow(u)
			h.After(a + 2*w + w/2)
			h.Allow(u)
			if x, then, ok := gridsApart(h.Now().Add(w), w, h.N()); ok && h.fake != nil {
				// N just before an edge of one fixed grid, one a window's
				// Nth after it: a new window on that grid (or a previous
				// one weighing N×(1−1/N) at most), the same window on the
				// other.
				g := h.User("grid-go")
				h.At(x.Sub(h.start) - time.Millisecond)
				for range h.N() {
					h.Allow(g)
				}
				h.At(then.Sub(h.start))
				h.Allow(g)
			}
		}}
}

// sameGrids reports whether windows of w lie alike on the epoch's grid and
// on Go's (counted from 0001-01-01 UTC, as time.Time.Truncate makes them):
// when w divides the 62,135,596,800,000 ms between them (every divisor of
// two days does).
func sameGrids(w time.Duration) bool {
	wms := w.Milliseconds()
	return wms > 0 && time.Time{}.UnixMilli()%wms == 0
}

// gridsApart, for a window of w on which the epoch's grid and Go's differ
// and a limit n of at least 2, is an edge x after t of one of them, and
// the instant then, ⌈W/n⌉ after it, with no edge of the other grid in
// (x−1ms, then]: N requests at x−1ms and one at then are allowed on x's
// grid (a new window; a previous one weighing N×(W−e)/W, so that even
// the estimate with this request is at most N) and denied on the other's
// (the same window). Of Go's next edge and the epoch's next one after it,
// x is the one whose other grid's next edge is farther (at least W/2).
func gridsApart(t time.Time, w time.Duration, n int) (x, then time.Time, ok bool) {
	wms := w.Milliseconds()
	if n < 2 || wms < 1 || sameGrids(w) {
		return time.Time{}, time.Time{}, false
	}
	x = t.Truncate(w).Add(w)
	gap := (wms - x.UnixMilli()%wms) % wms // from Go's edge x to the epoch's next one (x is after 1970)
	if 2*gap < wms {
		x, gap = x.Add(time.Duration(gap)*time.Millisecond), wms-gap
	}
	d := (wms + int64(n) - 1) / int64(n)
	if gap <= d {
		return time.Time{}, time.Time{}, false
	}
	return x, x.Add(time.Duration(d) * time.Millisecond), true
}

// bucketProbe tells interval buckets apart by when they are forgotten and
// whether a query writes (token-bucket's expire and query, fixed-window's
// query). User q is asked what remains at 0 and spends its bucket at W/2:
// a query that writes made the bucket (or opened the window) at 0, which
// refills at W, where one made at W/2 still denies. User e writes at 0
// and 0.9W and spends at 1.5W: a bucket kept while written refills at 2W
// on its first grid and has N at 2.1W, where one forgotten when full at W
// and made again at 1.5W has N-1. A target without GetRemainingRequests
// (an endpoint) gets user e's half only.
func bucketProbe() Spec {
	return Spec{ID: "identify/bucket", Level: result.Core, Rule: "where an interval bucket's refills are after it was full, and whether a query of what remains makes one",
		Run: func(h *Harness) {
			q, e := h.User("query-writes"), h.User("kept")
			w, n := h.W(), h.N()
			a := probeStart(h, 23_456*time.Millisecond)
			queries := h.target.Capabilities.Remaining
			h.At(a)
			if queries {
				h.Remaining(q)
			}
			for range n - 1 {
				h.Allow(e)
			}
			if queries {
				h.At(a + w/2)
				for range n + 1 {
					h.Allow(q)
				}
			}
			h.At(a + w*9/10)
			h.Allow(e)
			if queries {
				h.After(a + w) // a bucket made at 0 has refilled
				h.Allow(q)
			}
			h.At(a + w*3/2)
			h.Allow(e)
			h.At(a + w*21/10)
			for range n + 1 {
				h.Allow(e)
			}
		}}
}

// costProbe tells a weighted request decided whole from one allowed into
// debt (the parameter cost of GCRA and token buckets, model.CostParam).
// User debt spends more than any burst the burst probe can see, at one
// instant; an emission interval W/N later (rounded up to the ms: a bucket
// refilled continuously then holds one token, not two) it asks for a
// cost of 2, which cost=whole refuses (2 do not fit, or never do) and
// cost=debt allows (one would be); one more request follows. Identify
// runs it only on a target that declares weighted requests.
func costProbe() Spec {
	return Spec{ID: "identify/cost", Level: result.Core, Needs: []Need{NeedCost},
		Rule: "whether a request of cost 2 is refused where one token is left, or allowed into debt",
		Run: func(h *Harness) {
			u := h.User("debt")
			a := probeStart(h, 34_567*time.Millisecond)
			h.At(a)
			for range 4*h.N() + 5 {
				h.Allow(u)
			}
			t := time.Duration(ceilDiv(h.W().Milliseconds(), int64(h.N()))) * time.Millisecond
			h.After(h.Now().Sub(h.start) + t)
			h.AllowN(u, 2)
			h.Allow(u)
		}}
}

// renewProbe tells a grid anchored at a user's first request and kept by
// any call that finds the user's counts (sliding-counter renew=any, python
// limits' sliding window counter) from one kept only by counted requests
// (renew=counted, HAProxy's). User r is allowed once at 0, anchoring the
// grid, asked what remains at 1.5W, an otherwise idle window, and spends
// N at 2.5W: the query kept the grid at 0 (window [2W, 3W)), or the grid
// was forgotten at 2W and anchored again at 2.5W. At 3.3W a request is
// allowed on the kept grid, in a new window (the previous one's N weigh
// 0.7N), and refused on the other, whose window [2.5W, 3.5W) is full.
// Identify runs it only on a target that answers GetRemainingRequests.
func renewProbe() Spec {
	return Spec{ID: "identify/renew", Level: result.Core, Needs: []Need{NeedRemaining},
		Rule: "whether a query in an otherwise idle window keeps a grid anchored at the user's first request",
		Run: func(h *Harness) {
			r := h.User("renew")
			w := h.W()
			a := probeStart(h, 45_678*time.Millisecond)
			h.At(a)
			h.Allow(r)
			h.At(a + w*3/2)
			h.Remaining(r)
			h.At(a + w*5/2)
			for range h.N() {
				h.Allow(r)
			}
			h.At(a + w*33/10)
			h.Allow(r)
		}}
}

// probeStart is where a probe's users start: at onClock on the fake clock
// (an instant off every edge of the grids it tells apart), or at 0 from an
// origin taken now in real time.
func probeStart(h *Harness, onClock time.Duration) time.Duration {
	if h.fake == nil {
		h.Origin()
		return 0
	}
	return onClock
}

// storedProbe tells permits stored while idle (Guava's SmoothBursty)
// from a bucket of one (a GCRA of burst 1): user s makes a request, then
// one 3T later (T = W/N), and one just before a further T. A GCRA of
// burst 1 owes a whole T after the second request and denies the third;
// a limiter that stored permits in the pause paid part of the second
// from them, and allows it. With T under 2ms it sends nothing.
func storedProbe() Spec {
	return Spec{ID: "identify/stored", Level: result.Core, Rule: "whether permits stored while idle pay part of a request made after a pause",
		Run: func(h *Harness) {
			t := (h.W() / time.Duration(h.N())).Truncate(time.Millisecond)
			if t < 2*time.Millisecond {
				return
			}
			s := h.User("stored")
			a := probeStart(h, 34_567*time.Millisecond)
			h.At(a)
			h.Allow(s)
			h.At(a + 3*t)
			h.Allow(s)
			h.Before(a + 4*t)
			h.Allow(s)
		}}
}

// secondProbe tells a bucket refilled at each whole second of the epoch
// (a store that keeps time in whole seconds: go-zero's TokenLimiter) from
// one refilled continuously or by whole windows: user e spends its bucket
// half a second off the epoch's seconds, then, a millisecond after the
// whole second where refill=second's first token falls (⌈W/N/1s⌉ seconds
// on), sends 4N + 4 requests, as identify/burst does. A bucket refilled by
// seconds holds min(C, k×N×1s/W) tokens there, one refilled continuously
// what k − ½ seconds brought. On the fake clock only: in real time the
// epoch's seconds fall where they fall.
func secondProbe() Spec {
	return Spec{ID: "identify/second", Level: result.Core, Rule: "whether a bucket is refilled at the epoch's whole seconds",
		Run: func(h *Harness) {
			if h.fake == nil {
				return
			}
			e := h.User("second")
			a := 23_500 * time.Millisecond
			h.At(a)
			burst := 4*h.N() + 4
			for range burst {
				h.Allow(e)
			}
			k := max(1, ceilDiv(int64(h.W()), int64(h.N())*int64(time.Second)))
			h.At(a.Truncate(time.Second) + time.Duration(k)*time.Second + time.Millisecond)
			for range burst {
				h.Allow(e)
			}
		}}
}

// probeSpecs are the probes identify runs on t, in order: the burst
// first (a paced endpoint has its whole budget then), the catalogue's
// selected, the grid, bucket, stored and second probes, with queries the
// renew probe, and with weighted requests the cost probe.
func probeSpecs(selected []Spec, t Target) []Spec {
	specs := append([]Spec{burstProbe()}, append(selected, gridProbe(), bucketProbe(), storedProbe(), secondProbe())...)
	if t.Capabilities.Remaining {
		specs = append(specs, renewProbe())
	}
	if t.Capabilities.Cost {
		specs = append(specs, costProbe())
	}
	return specs
}

// ceilDiv is a/b rounded up, for a >= 0 and b > 0.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// weighed reports whether a probe sent a weighted request of a cost above
// 1: without one, no answer tells model.CostParam's values apart.
func weighed(probes []probe) bool {
	return slices.ContainsFunc(probes, func(p probe) bool {
		return slices.ContainsFunc(p.trace, func(o TraceOp) bool { return o.Kind == model.OpAllow && o.Cost > 1 })
	})
}

// probe is one probe's history.
type probe struct {
	id       string
	n        int
	w        time.Duration
	realTime bool
	start    time.Time
	tag      string
	trace    []TraceOp
}

// Identify probes target (with its clock when it has one, in real time
// otherwise), then replays every answer on every profile and its
// parameters: the result says which explain all of them and which are
// ruled out, by what. cfg.Profile is not used; the probes run with
// cfg.Limit and cfg.Window (cfg.RealTimeWindow in real time). An error
// means the probes could not run (a fault, a target that stopped
// answering, a probe too slow to finish), never that nothing fits.
//
// A target that refuses a window the probes configure (with
// [contract.ErrInvalidConfig]: one that takes only whole seconds, say) is
// probed again with windows of whole seconds, and the identification
// notes it; when it refuses those too, the error names the configuration
// refused and the target's answer.
func (cat Catalogue) Identify(ctx context.Context, cfg Config, target Target) (*result.Identification, error) {
	id, refused, err := identifyOnce(ctx, cat, cfg, target, 0)
	if err == nil || refused == nil || ctx.Err() != nil {
		return id, err
	}
	whole := cfg
	whole.Window, whole.RealTimeWindow = roundUp(cfg.Window, time.Second), roundUp(cfg.RealTimeWindow, time.Second)
	if refused.w%time.Second == 0 {
		return nil, refused.error("")
	}
	id, again, err := identifyOnce(ctx, cat, whole, target, time.Second)
	switch {
	case err != nil && again != nil:
		return nil, again.error(fmt.Sprintf(" (after Configure(%d, %v) was refused too, and windows of whole seconds were tried)", refused.n, refused.w))
	case err != nil:
		return nil, err
	}
	id.Notes = append([]string{fmt.Sprintf("the target refused Configure(%d, %v) (%v): the probes ran with windows of whole seconds", refused.n, refused.w, refused.err)}, id.Notes...)
	return id, nil
}

// error says that the target refused a configuration the probes need.
func (r *refusal) error(more string) error {
	return fmt.Errorf("identify: the target refused Configure(%d, %v)%s, a configuration the probes need (the contract takes any limit from 1 and any window from 1ms): %w", r.n, r.w, more, r.err)
}

// identifyOnce is Identify with the windows of cfg, in whole multiples of
// granularity when it is not 0 (else of what the run learns). When a
// probe could not run it also returns the configuration the target
// refused, if one was.
func identifyOnce(ctx context.Context, cat Catalogue, cfg Config, target Target, granularity time.Duration) (id *result.Identification, _ *refusal, _ error) {
	cfg.Profile = ""
	cfg.IDs = identifyProbes
	r, err := newRunner(ctx, cfg, cat, target)
	if err != nil {
		return nil, nil, err
	}
	r.granularity = granularity
	defer r.close()
	defer func() {
		if notes := r.finish(); id != nil {
			id.Notes = append(id.Notes, notes...)
		}
	}()
	var probes []probe
	r.probed = func(s *Spec, h *Harness) {
		probes = append(probes, probe{id: s.ID, n: h.env.MaxRequests, w: h.env.Window, realTime: h.fake == nil, start: h.start, tag: h.tag, trace: slices.Clone(h.trace)})
	}
	id = &result.Identification{Target: target.Name, Mode: result.FakeClock}
	if !target.Capabilities.Clock {
		id.Mode = result.RealTime
	}
	specs := probeSpecs(r.selected(), target)
	for i := range specs {
		s := &specs[i]
		rep := &result.Report{}
		res := r.runInto(ctx, target, s, rep)
		if n := len(probes); n > 0 && probes[n-1].id == s.ID && !strings.HasPrefix(s.ID, "identify/") {
			id.Graded = append(id.Graded, result.Graded{Result: res, Profile: r.profile.String(), Limit: probes[n-1].n, Window: probes[n-1].w})
		}
		switch {
		case rep.Aborted != "":
			return nil, nil, fmt.Errorf("identify: %s", rep.Aborted)
		case res.Status == result.Skipped:
			id.Notes = append(id.Notes, fmt.Sprintf("probe %s not run: %s", s.ID, res.Message))
		case res.Status == result.Errored || res.Status == result.Inconclusive || res.Status == result.Interrupted || res.Failure != nil && (res.Failure.Kind == result.KindTargetError || res.Failure.Kind == result.KindPanic || res.Failure.Kind == result.KindHang):
			return nil, r.refused.Load(), fmt.Errorf("identify: probe %s could not run: %s", s.ID, cause(res))
		}
	}
	if len(probes) == 0 {
		return nil, nil, fmt.Errorf("identify: no probe ran")
	}
	id.Limit, id.Window, id.At = probes[0].n, probes[0].w, time.Now()
	for _, p := range probes {
		id.Probes = append(id.Probes, p.id)
		for _, op := range p.trace {
			if p.id == "identify/burst" && op.Kind == model.OpBurst {
				id.Burst = op.allowed
			}
		}
	}
	cands, err := candidates(algorithmsOf(cfg), id.Limit, id.Burst)
	if err != nil {
		return nil, nil, err
	}
	if !weighed(probes) {
		// A cost other than whole decides unit requests as whole does:
		// with none but those, the whole variant is the one named.
		cands = slices.DeleteFunc(cands, func(c model.Variant) bool {
			v, ok := c.Params[model.CostParam]
			return ok && v != model.CostWhole
		})
	}
	b := model.NewBudget(identifySteps)
	judgeFits(id, cands, probes, false, b)
	if changesConfig(probes) && !slices.ContainsFunc(id.Fits, func(f result.Fit) bool { return !f.ChangeUnjudged }) {
		configureApart(id, cands, probes, b)
	}
	if len(id.Fits) == 0 {
		id.Mistakes = mistakes(id.Limit, id.Window, probes)
	}
	return id, nil, nil
}

// identifySteps bounds the profile steps of every search an
// identification's replays take, together; diagnosisSteps those of one
// spec's diagnosis (Harness.admits). Each operation's own search is
// bounded too (the search oracle's searchBudget), but not the number of
// operations, candidates and readings: on a loaded machine, with round
// trips of hundreds of ms, they took minutes.
const (
	identifySteps  = 50_000_000
	diagnosisSteps = 2_000_000
)

// cause is why a probe could not run: the first line of its message after
// the spec's title, which is all the first line says.
func cause(res result.Result) string {
	lines := strings.Split(strings.TrimSpace(res.Message), "\n")
	for _, l := range lines[1:] {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return firstLine(res.Message)
}

// changesConfig reports whether a probe configured the limiter under a
// history.
func changesConfig(probes []probe) bool {
	return slices.ContainsFunc(probes, func(p probe) bool {
		return len(p.trace) > 1 && slices.ContainsFunc(p.trace[1:], func(o TraceOp) bool { return o.Kind == model.OpConfigure })
	})
}

// configureApart, when no profile explains every answer (none fits, or
// those that fit left the answers after a change of configuration
// unjudged: none of their readings gives them), replays the probes again
// with a Configure that forgets every user's history (as a limiter whose
// keys include the limit or the window does: a new configuration starts on
// keys of its own). When a profile fits then, every answer judged, it is
// the algorithm in steady state, and Configure is reported apart, with the
// answer the profile's own Configure would not give. (Python limits 2.8's
// moving window, whose keys hold the limit, was a fixed window on the
// limiter's second whose answers after a change went unjudged, where every
// one of its decisions is a sliding log's.)
//
// It spends what is left of b: the replays with the profiles' own
// Configure, on a loaded machine, can spend all of it (43.8 of 50
// million steps on Python limits' moving window, the machine loaded),
// and the profiles whose searches then give users up are not judged here
// either; the sliding log's replay takes no step, and is judged. What it
// could not judge, when nothing fits, is unjudged with Configure apart
// too.
func configureApart(id *result.Identification, cands []model.Variant, probes []probe, b *model.Budget) {
	fresh := &result.Identification{Limit: id.Limit, Window: id.Window}
	judgeFits(fresh, cands, probes, true, b)
	if len(fresh.Fits) == 0 {
		for _, u := range fresh.Unjudged {
			if !slices.Contains(id.Unjudged, u) {
				id.Unjudged = append(id.Unjudged, u)
			}
		}
		return
	}
	var evidence result.RuledOut
	for _, r := range id.RuledOut {
		if r.Profile == fresh.Fits[0].Profile {
			evidence = r
		}
	}
	id.Fits, id.RuledOut, id.Unjudged = fresh.Fits, fresh.RuledOut, fresh.Unjudged
	id.Configure = &result.ConfigureFinding{
		Does:     "Configure forgets every user's history: each user starts afresh under the new limit and window (as a limiter whose keys include them does), where the profile keeps it and reads it with the new values",
		Evidence: evidence,
	}
}

// mistakes names the classic mistakes of a sliding log that give every
// decision of the probes.
func mistakes(n int, w time.Duration, probes []probe) []string {
	var out []string
	for i, m := range alternatives.Mistakes(n, w) {
		explains := true
		for _, p := range probes {
			traces := [][]TraceOp{p.trace}
			if p.realTime {
				traces = [][]TraceOp{timed(p.trace, 0), timed(p.trace, 1), timed(p.trace, 2)}
			}
			explains = slices.ContainsFunc(traces, func(t []TraceOp) bool {
				return replayAll(alternatives.Mistakes(p.n, p.w)[i].Algorithm, true, t)
			})
			if !explains {
				break
			}
		}
		if explains {
			out = append(out, m.Describe())
		}
	}
	return out
}

// candidates are the variants worth trying: each algorithm's own
// ([model.Algorithm.Candidates]), the buckets with the burst seen too.
func candidates(set *model.Algorithms, n, burst int) ([]model.Variant, error) {
	bursts := []string{"limit"}
	if burst > 0 && burst != n {
		bursts = append(bursts, strconv.Itoa(burst))
	}
	var out []model.Variant
	for _, alg := range set.All() {
		if alg.Candidates == nil {
			continue
		}
		for _, params := range alg.Candidates(bursts) {
			s := alg.Name
			if params != "" {
				s += ":" + params
			}
			v, err := set.Parse(s)
			if err != nil {
				return nil, fmt.Errorf("identify: algorithm %s names a candidate it cannot parse: %w", alg.Name, err)
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// sameDecisions reports whether a and b decide alike, and answer
// GetRemainingRequests alike, on every history whose configuration does
// not change (the equivalences docs/profiles.md proves, which each
// algorithm's [model.Algorithm.Alike] keys), under limit n; with oneGrid
// (every window the probes used divides the offset between Go's zero
// time and the epoch), windows on either fixed grid too. Where a change
// of the limit tells them apart, and the probes made one both are graded
// on, the probes have already ruled one out; two fits in one group are
// profiles no answer of these probes tells apart, and no other history
// with one configuration would. Without queries (a target with no
// GetRemainingRequests: its histories have none), whether a query writes
// changes nothing either.
func sameDecisions(a, b model.Variant, n int, queries, oneGrid bool) bool {
	key := func(v model.Variant) string {
		// The readings of a change differ only across one.
		p := maps.Clone(v.Params)
		delete(p, model.ReconfigureParam)
		if alg := v.Algorithm(); alg != nil && alg.Alike != nil {
			return alg.Alike(p, n, queries, oneGrid)
		}
		return model.Variant{Name: v.Name, Params: p}.String()
	}
	return key(a) == key(b)
}

// readingsExplaining replays the probes on each reading of a change of
// configuration of c (c alone when it has one, or with fresh) and returns
// those that explain every answer, naming them in fit.Readings when c has
// several. When none does, c itself may: every reading at once, the
// answers after a change that none of them gives not judged (a reading
// rlconform does not model: see model.Readings); fit.ChangeUnjudged then
// says so. When nothing explains the answers, it returns the first
// reading's evidence.
func readingsExplaining(c model.Variant, probes []probe, fresh bool, fit *result.Fit, b *model.Budget) ([]model.Variant, *result.RuledOut) {
	readings := c.Readings()
	if fresh {
		readings = readings[:1] // every Configure starts afresh: no reading
	}
	explain := func(v model.Variant) (*result.RuledOut, int) {
		decided := 0
		var phases [][]int64 // each user's, of every probe: one limiter has one clock
		for _, p := range probes {
			bad, d, oracle := replayProbe(v, p, false, fresh, b)
			decided += d
			if bad != nil {
				return bad, decided
			}
			if users, ok := model.ClockPhases(oracle); ok {
				if phases = append(phases, users...); !onePhase(phases, clockLate) {
					return p.ruledOut(len(p.trace)-1, noOnePhase), decided
				}
			}
		}
		return nil, decided
	}
	var explains []model.Variant
	var first *result.RuledOut
	for i, r := range readings {
		out, decided := explain(r)
		if i == 0 {
			first = out
		}
		if out == nil {
			if len(explains) == 0 {
				fit.Decided = decided
			}
			explains = append(explains, r)
		}
	}
	switch {
	case len(readings) < 2:
	case len(explains) > 0:
		for _, r := range explains {
			fit.Readings = append(fit.Readings, r.Reading())
		}
	default:
		if out, decided := explain(c); out == nil {
			fit.Decided, fit.ChangeUnjudged = decided, true
			explains = append(explains, c)
		}
	}
	return explains, first
}

// clockLate is how late a limiter's own clock may tick, in ms, beyond
// the phase that explains the rest (a ticker delivered late on a loaded
// machine: Fiber's clock of whole seconds is one).
const clockLate = 25

// noOnePhase is why a profile with a clock of the limiter's own is ruled
// out when each user's answers fit a phase of its own, but no one phase
// (up to clockLate) fits every user's.
const noOnePhase = "every user's answers at one phase of its clock of whole seconds (each user's fit a phase of its own, but one limiter has one clock: no phase, up to 25ms late, fits every user of the probes)"

// onePhase reports whether some phase at of a clock of 1000 ms has, for
// each user's phases, one in [at, at+late] (mod 1000): the limiter's one
// clock, ticking up to late ms after at, explains every user.
func onePhase(users [][]int64, late int64) bool {
	var fits [1000]int
	for _, phases := range users {
		var hit [1000]bool
		for _, ph := range phases {
			for d := range late + 1 {
				hit[((ph-d)%1000+1000)%1000] = true
			}
		}
		for at := range hit {
			if hit[at] {
				fits[at]++
			}
		}
	}
	for _, n := range fits {
		if n == len(users) {
			return true
		}
	}
	return false
}

// judge replays every probe on every candidate.
// With fresh, every Configure forgets every user's history (see
// configureApart).
func judgeFits(id *result.Identification, cands []model.Variant, probes []probe, fresh bool, b *model.Budget) {
	var fits []result.Fit
	var fitSpecs []model.Variant
	var unjudged []string
	judge := func(cands []model.Variant) {
		for _, c := range cands {
			before := b.Spent()
			fit, spec, out := judgeCandidate(id, c, probes, fresh, b)
			switch {
			case out != nil:
				id.RuledOut = append(id.RuledOut, *out)
			case b.Exhausted() && b.Spent() != before:
				// Its searches asked for steps past the budget and gave
				// users up: no answer ruled it out, none was judged. A
				// profile that took none (the sliding log's replay does
				// not search) was judged whole, spent budget or not.
				unjudged = append(unjudged, c.String())
			default:
				fits, fitSpecs = append(fits, fit), append(fitSpecs, spec)
			}
		}
	}
	// Windows on the limiter's own clock of seconds are tried last, when
	// nothing else fits (see lastResort).
	judge(slices.DeleteFunc(slices.Clone(cands), lastResort))
	if len(fits) == 0 {
		judge(slices.DeleteFunc(slices.Clone(cands), func(c model.Variant) bool { return !lastResort(c) }))
	}
	id.Unjudged = append(id.Unjudged, unjudged...)
	// Fits a modelled reading of a change explains come first, so that
	// one names its group.
	order := make([]int, len(fits))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return boolInt(fits[a].ChangeUnjudged) - boolInt(fits[b].ChangeUnjudged) })
	sortedFits, sortedSpecs := make([]result.Fit, len(fits)), make([]model.Variant, len(fits))
	for i, k := range order {
		sortedFits[i], sortedSpecs[i] = fits[k], fitSpecs[k]
	}
	fits, fitSpecs = sortedFits, sortedSpecs
	// Group the fits that decide alike on every history: the first names
	// the group.
	queries := slices.ContainsFunc(probes, func(p probe) bool {
		return slices.ContainsFunc(p.trace, func(o TraceOp) bool { return o.Kind == model.OpRemaining })
	})
	oneGrid := !slices.ContainsFunc(probes, func(p probe) bool {
		return !sameGrids(p.w) || slices.ContainsFunc(p.trace, func(o TraceOp) bool { return o.Kind == model.OpConfigure && !sameGrids(o.W) })
	})
	used := make([]bool, len(fits))
	for i := range fits {
		if used[i] {
			continue
		}
		group := []model.Variant{fitSpecs[i]}
		for j := i + 1; j < len(fits); j++ {
			if !used[j] && sameDecisions(fitSpecs[i], fitSpecs[j], id.Limit, queries, oneGrid) {
				used[j] = true
				fits[i].SameDecisions = append(fits[i].SameDecisions, fits[j].Profile)
				group = append(group, fitSpecs[j])
			}
		}
		if fits[i].Undecided = undecidedParams(group, queries); len(fits[i].Undecided) > 0 {
			fits[i].Description = groupDescription(group, id.Limit, id.Window)
		}
		id.Fits = append(id.Fits, fits[i])
	}
	// Fits whose remaining answers fit too come first.
	slices.SortStableFunc(id.Fits, func(a, b result.Fit) int {
		return boolInt(a.RemainingDiffers != "") - boolInt(b.RemainingDiffers != "")
	})
}

// lastResort tells the candidates identify tries only when no other
// fits: fixed windows opened at the limiter's own whole second
// (align=first-second). In real time the oracle gives each user a phase
// of its own, so that profile explains whatever first-hit does for users
// whose windows open at one phase of the second, as the probes' users
// mostly do; and its search follows 1000 phases, ten times the steps of
// every other candidate together.
func lastResort(c model.Variant) bool {
	return c.Name == model.ProfileFixedWindow && c.Params["align"] == "first-second"
}

// judgeCandidate replays the probes on c: the fit, with the reading of a
// change that explains them, or why c is ruled out.
func judgeCandidate(id *result.Identification, c model.Variant, probes []probe, fresh bool, b *model.Budget) (result.Fit, model.Variant, *result.RuledOut) {
	desc := ""
	if p, err := c.New(id.Limit, id.Window); err == nil {
		desc = p.Describe()
	}
	fit := result.Fit{Profile: c.String(), Description: desc}
	explains, out := readingsExplaining(c, probes, fresh, &fit, b)
	if len(explains) > 0 {
		out, c = nil, explains[0]
	}
	if out != nil {
		out.Profile, out.Description = c.String(), desc
		return fit, c, out
	}
	for _, p := range probes {
		if bad, _, _ := replayProbe(c, p, true, fresh, b); bad != nil {
			fit.RemainingDiffers = fmt.Sprintf("%s step %d at %s: %s = %s, the profile says %s", bad.Probe, bad.Step, FmtOffset(bad.At), bad.Operation, bad.Got, bad.Want)
			break
		}
	}
	return fit, c, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// undecidedParams are the parameters of group[0], a fit, whose value no
// answer decided: those on which a profile of its group (the others,
// which decide alike) of the same algorithm differs, each with the values
// the group holds. The reading of a change of configuration is not one
// (Fit.Readings names those). Without queries among the probes' calls,
// alike holds of histories with none (sameDecisions), and Why says so.
func undecidedParams(group []model.Variant, queries bool) []result.UndecidedParam {
	histories := "every history with one configuration"
	if !queries {
		histories += " and no query of what remains (the probes made none)"
	}
	head := group[0]
	values := map[string][]string{}
	for _, v := range group[1:] {
		if v.Name != head.Name {
			continue
		}
		for k, val := range v.Params {
			if k == model.ReconfigureParam || val == head.Params[k] {
				continue
			}
			if len(values[k]) == 0 {
				values[k] = []string{head.Params[k]}
			}
			if !slices.Contains(values[k], val) {
				values[k] = append(values[k], val)
			}
		}
	}
	var out []result.UndecidedParam
	for _, k := range slices.Sorted(maps.Keys(values)) {
		vals := values[k]
		slices.Sort(vals)
		out = append(out, result.UndecidedParam{Param: k, Values: vals,
			Why: fmt.Sprintf("no answer tells %s from %s: %s with any of them decides alike on %s",
				k+"="+strings.Join(vals[:len(vals)-1], ", "+k+"="), k+"="+vals[len(vals)-1], head.Name, histories)})
	}
	return out
}

// groupDescription describes the profiles of group of group[0]'s
// algorithm under limit n and window w, claiming no more than they share:
// each clause of their descriptions (between ", " outside parentheses) on which they differ
// is given as its alternatives, "A or B".
func groupDescription(group []model.Variant, n int, w time.Duration) string {
	var descs []string
	var clauses [][]string
	aligned := true
	for _, v := range group {
		p, err := v.New(n, w)
		if v.Name != group[0].Name || err != nil || slices.Contains(descs, p.Describe()) {
			continue
		}
		descs = append(descs, p.Describe())
		c := splitClauses(p.Describe())
		if len(clauses) == 0 {
			clauses = make([][]string, len(c))
		}
		if aligned = aligned && len(c) == len(clauses); !aligned {
			continue
		}
		for i, cl := range c {
			if !slices.Contains(clauses[i], cl) {
				clauses[i] = append(clauses[i], cl)
			}
		}
	}
	if !aligned { // clauses that do not line up: each description whole
		return strings.Join(descs, "; or ")
	}
	out := make([]string, len(clauses))
	for i, alts := range clauses {
		out[i] = strings.Join(alts, " or ")
	}
	return strings.Join(out, ", ")
}

// splitClauses splits a description at each ", " outside parentheses.
func splitClauses(desc string) []string {
	var out []string
	depth, from := 0, 0
	for i := 0; i < len(desc); i++ {
		switch {
		case desc[i] == '(':
			depth++
		case desc[i] == ')':
			depth--
		case depth == 0 && strings.HasPrefix(desc[i:], ", "):
			out = append(out, desc[from:i])
			from = i + 2
		}
	}
	return append(out, desc[from:])
}

// replayProbe replays one probe's history on profile c: exactly on the
// fake clock, with the interval oracle in real time. It returns the first
// answer c would not give (nil when it gives every one) and how many
// answers it decided. Remaining answers are judged only with remaining.
// With fresh, every Configure starts c afresh under the new configuration,
// every user's history forgotten.
func replayProbe(c model.Variant, p probe, remaining, fresh bool, b *model.Budget) (*result.RuledOut, int, model.Oracle) {
	decided := 0
	if !fresh && !c.LimitChangeGraded() && slices.ContainsFunc(p.trace[1:], func(o TraceOp) bool { return o.Kind == model.OpConfigure }) {
		return nil, 0, nil // a limit changed under a history: not evidence for this profile
	}
	var exact *model.Readings
	var oracle model.Oracle
	if p.realTime {
		oracle, _ = model.NewOracle(c, p.n, p.w)
		model.Bound(oracle, b)
	} else {
		exact, _ = model.NewReadings(c, p.n, p.w)
	}
	for i, op := range p.trace {
		var want string
		bad := false
		switch op.Kind {
		case model.OpConfigure:
			switch {
			case fresh && exact != nil:
				exact, _ = model.NewReadings(c, op.N, op.W)
			case fresh:
				oracle, _ = model.NewOracle(c, op.N, op.W)
				model.Bound(oracle, b)
			case exact != nil:
				_ = exact.Configure(op.At, op.N, op.W) // the probes' configurations are valid
			default:
				oracle.Judge(model.TimedOp{Kind: model.OpConfigure, Limit: op.N, Window: op.W, Lo: op.At, Hi: op.At})
			}
			continue
		case model.OpReset:
			if exact != nil {
				exact.Reset(op.User)
			} else {
				oracle.Judge(model.TimedOp{Kind: model.OpReset, User: op.User, Lo: op.At, Hi: op.At})
			}
			continue
		case model.OpRemaining:
			switch {
			case remaining:
			case !c.QueryWrites():
				continue
			case exact != nil:
				// A query that writes is a decision too: applied, its
				// answer not judged.
				exact.Answers(op.User, op.At, func(m model.Replayable) string { n, _ := m.Remaining(op.At, op.User); return strconv.Itoa(n) })
				continue
			}
			// In real time the oracle follows a writing query by its
			// answer: judged.
		}
		if exact != nil {
			var j model.Verdict
			want, j = replayExact(exact, op)
			bad = j == model.Wrong
			if j == model.Explained {
				decided++
			}
		} else {
			var j model.Judgement
			var why string
			switch op.Kind {
			case model.OpAllow:
				j, why, _ = oracle.Judge(model.TimedOp{Kind: model.OpAllow, User: op.User, Lo: op.At, Hi: op.until, Allowed: op.Got == AllowedWord(true), Cost: op.Cost})
				want = map[bool]string{true: "denied", false: "allowed"}[op.Got == AllowedWord(true)]
			case model.OpRemaining:
				n, _ := strconv.Atoi(op.Got)
				j, why, _ = oracle.Judge(model.TimedOp{Kind: model.OpRemaining, User: op.User, Lo: op.At, Hi: op.until, Remaining: n})
				want = "another count"
			case model.OpBurst:
				j, why = oracle.JudgeBurst(op.User, op.At, op.until, op.N, op.allowed)
				want = why + " allowed"
			}
			if why != "" && op.Kind != model.OpBurst {
				want += " (" + why + ")"
			}
			bad = j == model.Impossible
			if j == model.Certain {
				decided++
			}
		}
		if bad {
			return p.ruledOut(i, want), decided, oracle
		}
	}
	return nil, decided, oracle
}

// replayExact judges op, an answer on the fake clock, with the readings
// of a profile: what they answer, and the verdict.
func replayExact(r *model.Readings, op TraceOp) (want string, _ model.Verdict) {
	var answers []string
	got := op.Got
	switch op.Kind {
	case model.OpAllow:
		answers = r.Answers(op.User, op.At, func(m model.Replayable) string {
			ok, _ := allowCost(m, op.At, op.User, op.Cost)
			return AllowedWord(ok)
		})
	case model.OpRemaining:
		answers = r.Answers(op.User, op.At, func(m model.Replayable) string { n, _ := m.Remaining(op.At, op.User); return strconv.Itoa(n) })
	case model.OpBurst:
		answers = r.Answers(op.User, op.At, func(m model.Replayable) string {
			allowed := 0
			for range op.N {
				if ok, _ := m.Allow(op.At, op.User); ok {
					allowed++
				}
			}
			return fmt.Sprintf("%d allowed", allowed)
		})
		got = fmt.Sprintf("%d allowed", op.allowed)
	}
	return answers[0], r.Keep(op.User, op.At, answers, got)
}

// ruledOut is the evidence of step i: the answer, and the user's
// operations up to it.
func (p probe) ruledOut(i int, want string) *result.RuledOut {
	op := p.trace[i]
	short := func(u string) string { return strconv.Quote(strings.TrimPrefix(u, p.tag)) }
	describe := func(o TraceOp) (string, string) {
		switch o.Kind {
		case model.OpAllow:
			if o.Cost > 0 {
				return fmt.Sprintf("%s(%s, %d)", opAllowN, short(o.User), o.Cost), o.Got
			}
			return "AllowRequest(" + short(o.User) + ")", o.Got
		case model.OpRemaining:
			return "GetRemainingRequests(" + short(o.User) + ")", o.Got
		case model.OpReset:
			return "Reset(" + short(o.User) + ")", "ok"
		case model.OpBurst:
			return fmt.Sprintf("AllowRequest(%s) ×%d at once", short(o.User), o.N), fmt.Sprintf("%d allowed", o.allowed)
		}
		return fmt.Sprintf("Configure(%d, %v)", o.N, o.W), "ok"
	}
	name, got := describe(op)
	out := &result.RuledOut{Probe: p.id, Step: i + 1, At: op.At.Sub(p.start), Operation: name, Got: got, Want: want}
	for _, o := range p.trace[:i+1] {
		if o.User != op.User && o.Kind != model.OpConfigure {
			continue
		}
		n, g := describe(o)
		at := FmtOffset(o.At.Sub(p.start))
		if !o.until.IsZero() {
			at += "…" + FmtOffset(o.until.Sub(p.start))
		}
		out.Timeline = append(out.Timeline, fmt.Sprintf("%s  %s = %s", at, n, g))
	}
	if len(out.Timeline) > 12 { // the last ones lead to it
		out.Timeline = append([]string{fmt.Sprintf("… %d earlier operations", len(out.Timeline)-11)}, out.Timeline[len(out.Timeline)-11:]...)
	}
	return out
}
