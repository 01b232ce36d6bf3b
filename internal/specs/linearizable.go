package specs

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/engine"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/model/lincheck"
	"github.com/rlconform/rlconform/result"
)

// linCheckTimeout bounds porcupine; a check that runs out is inconclusive.
const linCheckTimeout = 20 * time.Second

// recorder collects a concurrent history with real-time call and return
// stamps.
type recorder struct {
	origin time.Time
	mu     sync.Mutex
	ops    []porcupine.Operation
	errs   []error
}

func (r *recorder) do(client int, in lincheck.Input, call func() (lincheck.Output, error)) {
	r.doSent(client, in, func() (lincheck.Output, time.Time, error) {
		out, err := call()
		return out, time.Time{}, err
	})
}

// doSent is do for a call that says when its request really left (zero:
// when it was called).
func (r *recorder) doSent(client int, in lincheck.Input, call func() (lincheck.Output, time.Time, error)) {
	begin := time.Since(r.origin).Nanoseconds()
	out, sent, err := call()
	end := time.Since(r.origin).Nanoseconds()
	if !sent.IsZero() {
		begin = max(begin, sent.Sub(r.origin).Nanoseconds())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		out = lincheck.Output{Unknown: true}
		end = -1 // fixed below: an unknown outcome may take effect any time later
		r.errs = append(r.errs, err)
	}
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: begin, Output: out, Return: end})
}

// history returns the operations, an unknown outcome given a return after
// every call and every return of the history: it may take effect at any
// later time, even after a call that began after it failed.
func (r *recorder) history() []porcupine.Operation {
	var last int64
	for _, o := range r.ops {
		last = max(last, o.Call, o.Return)
	}
	for i := range r.ops {
		if r.ops[i].Return < 0 {
			r.ops[i].Return = last + 1
		}
	}
	return r.ops
}

// linWorkload is what a linearizability check sends: goroutines each
// making ops operations per phase on users, and weighted requests of cost
// 1 to maxCost among the allows when maxCost > 0.
type linWorkload struct {
	goroutines, phases, ops int
	users                   []string
	maxCost                 int
	// opener, when above 0, is the cost of each goroutine's first request
	// of a phase, all to one fresh user of the phase's own: they race to
	// fill its log at once.
	opener int
}

// linearizable sends concurrent requests, remaining queries and resets
// over several users, goroutines and two instances, in phases with the fake
// clock standing still (so each operation's instant is known), and checks
// the history with porcupine against the model.
func linearizable(h *engine.Harness) {
	checkLinearizable(h, linWorkload{goroutines: 8, phases: 5, ops: 12, users: []string{h.User("a"), h.User("b"), h.User("c")}})
}

// costConcurrent is linearizable for weighted requests: 4 goroutines over
// two instances (one without a shared store) send requests of random
// costs to four users. A race shows where a user's log fills up: each
// phase opens with the four goroutines' requests of half the limit to a
// fresh user at once, a fill that only a serial order of the four may
// pass, then random ones follow (with random requests alone, a
// check-then-add race went unseen in about one run of 300, and once in
// CI under the race detector).
func costConcurrent(h *engine.Harness) {
	h.Configure(costLimit, h.W())
	phases := 4
	if !h.RealTime() {
		phases = 8
	}
	users := []string{h.User("a"), h.User("b"), h.User("c"), h.User("d")}
	half := max(1, h.MaxFit()/2)
	checkLinearizable(h, linWorkload{goroutines: 4, phases: phases, ops: 10, users: users, maxCost: half, opener: half})
}

// checkLinearizable sends wl and checks the history.
func checkLinearizable(h *engine.Harness, wl linWorkload) {
	instances := []contract.RateLimiterContract{h.Instance(0)}
	if h.Target().Capabilities.SharedStore {
		instances = h.Instances(2)
	}
	rec := &recorder{origin: time.Now()}
	sendPhases(h, rec, wl, instances)
	history := rec.history()
	if len(rec.errs) > 0 {
		h.Note(fmt.Sprintf("%d operations failed", len(rec.errs)), fmt.Sprintf("first: %v (counted as unknown outcomes)", rec.errs[0]))
	}
	for _, err := range rec.errs {
		if p, ok := errors.AsType[*engine.TargetPanic](err); ok {
			h.FailWith(result.Failure{Kind: result.KindPanic}, "a concurrent call panicked: "+p.Error())
		}
	}
	// A failed call is an unknown outcome, which any history absorbs: a
	// history of mostly unknowns proves nothing, and is no pass.
	known := len(history) - len(rec.errs)
	h.CountDecided(known)
	if known == 0 || len(rec.errs) > known {
		first := "none"
		if len(rec.errs) > 0 {
			first = rec.errs[0].Error()
		}
		panic(engine.Inconclusive{Msg: h.Report(fmt.Sprintf("%d of the %d operations failed (first: %s): a history of unknown outcomes is linearizable whatever the limiter does, so the check proves nothing",
			len(rec.errs), len(history), first))})
	}
	m := lincheck.SlidingLog(h.N(), h.W().Milliseconds(), h.Short)
	if h.RealTime() {
		// Each operation took effect at an instant of its call's interval
		// by the real-time rule (model.AdmissibleMillis); an unknown
		// outcome any time after its call.
		for k := range history {
			in := history[k].Input.(lincheck.Input)
			in.Lo, in.Hi = model.AdmissibleMillis(rec.origin.Add(time.Duration(history[k].Call)), rec.origin.Add(time.Duration(history[k].Return)))
			if history[k].Output.(lincheck.Output).Unknown {
				in.Hi = math.MaxInt64 / 2
			}
			history[k].Input = in
		}
		m = lincheck.SlidingLogRealTime(h.N(), h.W().Milliseconds(), h.Short)
		if !h.Profile().IsSlidingLog() {
			if why := lincheck.TooWide(history); why != "" {
				panic(engine.Inconclusive{Msg: h.Report("the linearizability check did not run: " + why)})
			}
		}
	}
	var overflow atomic.Bool
	if !h.Profile().IsSlidingLog() {
		m = lincheck.Profile(h.Profile(), h.N(), h.W().Milliseconds(), h.Short, h.RealTime(), &overflow)
	}
	// The check ends well within the spec's time, so that a slow check is
	// the grader's inconclusive, never a slow target.
	timeout := linCheckTimeout
	if deadline, ok := h.Context().Deadline(); ok {
		timeout = max(time.Second, min(timeout, time.Until(deadline)/2))
	}
	res, info := porcupine.CheckOperationsVerbose(m, history, timeout)
	switch {
	case res == porcupine.Ok && overflow.Load():
		panic(engine.Inconclusive{Msg: h.Report(fmt.Sprintf("the linearizability check of %d operations followed more than %d possible states of one user: nothing is proven either way", len(history), lincheck.MaxStates))})
	case res == porcupine.Ok:
		return
	case res == porcupine.Unknown:
		panic(engine.Inconclusive{Msg: h.Report(fmt.Sprintf("the linearizability check of %d operations did not finish within %v: nothing is proven either way", len(history), timeout))})
	}
	path := visualize(h, m, info)
	h.SetHistory(unordered(h, m, history, info))
	h.Failf("the history of %d concurrent operations is not linearizable: no serial order of them gives these answers "+
		"(more allowed than N, or a request denied that a serial order would allow).\n  %s\n  porcupine's visualisation: %s",
		len(history), busiest(h, history), path)
}

// sendPhases sends wl's phases over instances, recording every operation
// in rec: in each, the goroutines start together, and the clock moves a
// third of a window after it.
func sendPhases(h *engine.Harness, rec *recorder, wl linWorkload, instances []contract.RateLimiterContract) {
	goroutines, phases, opsPerPhase, users := wl.goroutines, wl.phases, wl.ops, wl.users
	for phase := range phases {
		at := h.Now().UnixMilli()
		var opener string
		if wl.opener > 0 {
			opener = h.User(fmt.Sprintf("fill%d", phase))
		}
		var wg sync.WaitGroup
		// The goroutines start together: one started late would send its
		// first operations after the others' last, and race with none.
		start := make(chan struct{})
		for g := range goroutines {
			wg.Add(1)
			seed := h.Rand().Uint64()
			go func() {
				defer wg.Done()
				<-start
				if opener != "" {
					linAllowN(h, rec, g, instances[g%len(instances)], lincheck.Input{Op: 'a', User: opener, At: at, Cost: wl.opener})
				}
				linClient(h, rec, g, seed, at, users, instances, opsPerPhase, wl.maxCost)
			}()
		}
		close(start)
		wg.Wait()
		what := fmt.Sprintf("phase %d: %d goroutines × %d operations on %d users over %d instance(s)", phase+1, goroutines, opsPerPhase, len(users), len(instances))
		if opener != "" {
			what = fmt.Sprintf("phase %d: %d goroutines × AllowRequestN(%s, %d) at once, then × %d operations on %d users over %d instance(s)", phase+1, goroutines, h.Short(opener), wl.opener, opsPerPhase, len(users), len(instances))
		}
		h.Note(what, "recorded")
		if !h.RealTime() {
			h.Advance(h.W() / 3)
		} else {
			h.WaitUntil(time.Now().Add(h.W() / 3))
		}
	}
}

func linClient(h *engine.Harness, rec *recorder, client int, seed uint64, at int64, users []string, instances []contract.RateLimiterContract, ops, maxCost int) {
	rng := engine.NewRand(seed)
	caps := h.Target().Capabilities
	for range ops {
		u := users[rng.IntN(len(users))]
		lim := instances[rng.IntN(len(instances))]
		k := rng.IntN(20)
		switch {
		case k < 2 && caps.Reset:
			rec.do(client, lincheck.Input{Op: 'x', User: u, At: at}, func() (lincheck.Output, error) { return lincheck.Output{}, lim.Reset(h.Context(), u) })
		case k < 6 && caps.Remaining:
			rec.do(client, lincheck.Input{Op: 'r', User: u, At: at}, func() (lincheck.Output, error) {
				n, err := lim.GetRemainingRequests(h.Context(), u)
				return lincheck.Output{Remaining: n}, err
			})
		case maxCost > 0 && k < 16:
			linAllowN(h, rec, client, lim, lincheck.Input{Op: 'a', User: u, At: at, Cost: 1 + rng.IntN(maxCost)})
		default:
			rec.doSent(client, lincheck.Input{Op: 'a', User: u, At: at}, func() (lincheck.Output, time.Time, error) {
				ok, sent, err := engine.AllowSent(h.Context(), lim, u)
				return lincheck.Output{Allowed: ok}, sent, err
			})
		}
	}
}

// linAllowN records a weighted request, in.Cost units for in.User.
func linAllowN(h *engine.Harness, rec *recorder, client int, lim contract.RateLimiterContract, in lincheck.Input) {
	rec.do(client, in, func() (lincheck.Output, error) {
		ok, err := lim.(contract.CostLimiter).AllowRequestN(h.Context(), in.User, in.Cost)
		return lincheck.Output{Allowed: ok}, err
	})
}

// visualize writes porcupine's HTML for a failed check and returns its path.
func visualize(h *engine.Harness, m porcupine.Model, info porcupine.LinearizationInfo) string {
	dir := h.Config().ReportDir
	if dir == "" {
		dir = os.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Sprintf("(not written: %v)", err)
	}
	// A name of its own that nobody can guess and take first: in a shared
	// temporary directory, a link placed at a known name would have the
	// grader write through it.
	f, err := os.CreateTemp(dir, fmt.Sprintf("rlconform-%.60s-%s-%d-*.html", safeName(h.Target().Name), safeName(h.SpecID()), h.Seed()))
	if err != nil {
		return fmt.Sprintf("(not written: %v)", err)
	}
	if err := errors.Join(visualizeTo(m, info, f), f.Close()); err != nil {
		os.Remove(f.Name())
		return fmt.Sprintf("(not written: %v)", err)
	}
	return f.Name()
}

// visualizeTo is porcupine's visualisation, which must not take the
// grader down if it panics.
func visualizeTo(m porcupine.Model, info porcupine.LinearizationInfo, w io.Writer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("porcupine's visualisation panicked: %v", r)
		}
	}()
	return porcupine.Visualize(m, info, w)
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, s)
}

// resetRace hammers one user from 8 goroutines while Reset is called in
// the middle; with the clock standing still, the requests that began after
// Reset returned share one window, so at most N of them may be allowed.
func resetRace(h *engine.Harness) {
	instances := []contract.RateLimiterContract{h.Instance(0)}
	if h.Target().Capabilities.SharedStore {
		instances = h.Instances(2)
	}
	for round := range 3 {
		u := h.User(fmt.Sprintf("u%d", round))
		roundStart := time.Now()
		t := raceReset(h, instances, u)
		h.Note(fmt.Sprintf("8 goroutines × AllowRequest(%s), Reset(%s) in the middle", h.Short(u), h.Short(u)),
			fmt.Sprintf("%d allowed in all; %d of the %d that began after Reset returned", t.allowed, t.after, t.sentLate))
		if errors.Is(t.resetErr, contract.ErrNoAnswer) {
			h.NoAnswer(fmt.Sprintf("Reset(%s) during requests", h.Short(u)), t.resetErr)
		}
		if t.resetErr != nil {
			h.Failf("Reset(%s) during requests: %v", h.Short(u), t.resetErr)
		}
		if first, n := engine.NoAnswers(t.errs); n > 0 {
			// Each may have been allowed or not: the round proves nothing.
			h.CountUndecided(1)
			h.Note(fmt.Sprintf("round %d: %d requests got no answer (first: %v)", round+1, n, first), "undecided")
			continue
		}
		if len(t.errs) > 0 {
			h.Failf("%d requests failed during the race, first: %v", len(t.errs), t.errs[0])
		}
		if h.RealTime() {
			// Without a clock the bounds hold only if no entry of the round
			// left during it.
			if took := time.Since(roundStart); took >= h.W()-h.Edge() {
				h.CountUndecided(1)
				h.Note(fmt.Sprintf("round %d took %v, not less than the window %v", round+1, took.Round(time.Millisecond), h.W()), "undecided")
				continue
			}
		}
		h.CountDecided(1)
		burst := burst(h)
		if t.allowed > 2*burst {
			h.Failf("%d requests were allowed in all, with the clock standing still and one Reset(%s): want at most %d (%d before the Reset, %d after it, in any serial order)",
				t.allowed, h.Short(u), 2*burst, burst, burst)
		}
		if t.after > burst {
			h.Failf("%d requests that began after Reset(%s) returned were allowed, with the clock standing still: want at most %d",
				t.after, h.Short(u), burst)
		}
		if !h.RealTime() {
			h.Advance(h.W())
		}
	}
}

// raceTally is what one round of resetRace saw: the requests allowed in
// all, those that began after Reset returned and how many of them were
// allowed, the requests' errors and Reset's.
type raceTally struct {
	allowed, after, sentLate int
	errs                     []error
	resetErr                 error
}

// raceReset sends u's requests from 8 goroutines, round robin over
// instances, and calls Reset(u) once N of them have been sent. Each
// goroutine goes on until 6N requests in all began after Reset returned
// (so a late effect of Reset has requests to show in), or it sent 40N.
func raceReset(h *engine.Harness, instances []contract.RateLimiterContract, u string) raceTally {
	var (
		mu       sync.Mutex
		t        raceTally
		resetEnd time.Time
		wg       sync.WaitGroup
	)
	started := make(chan struct{})
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 40*h.N(); i++ {
				if g == 0 && i == h.N() {
					close(started)
				}
				mu.Lock()
				enough := t.sentLate >= 6*h.N()
				mu.Unlock()
				if enough {
					return
				}
				began := time.Now()
				ok, err := instances[(g+i)%len(instances)].AllowRequest(h.Context(), u)
				mu.Lock()
				if err != nil {
					t.errs = append(t.errs, err)
				}
				if ok {
					t.allowed++
				}
				if !resetEnd.IsZero() && began.After(resetEnd) {
					t.sentLate++
					if ok {
						t.after++
					}
				}
				mu.Unlock()
			}
		}()
	}
	<-started
	err := instances[0].Reset(h.Context(), u)
	mu.Lock()
	resetEnd = time.Now()
	mu.Unlock()
	wg.Wait()
	t.resetErr = err
	return t
}

// burst is how many requests a fresh user gets at one instant: N for the
// sliding log, the burst or capacity of a bucket.
func burst(h *engine.Harness) int {
	n, _ := h.Model().Clone().Remaining(h.Now(), h.User("fresh-burst-probe"))
	return n
}

// busiest names the user and instant with the most allowed requests: with
// more than N there, the symptom needs no visualisation.
func busiest(h *engine.Harness, history []porcupine.Operation) string {
	type slot struct {
		user string
		at   int64
	}
	allowed := map[slot]int{}
	var top slot
	for _, o := range history {
		in, out := o.Input.(lincheck.Input), o.Output.(lincheck.Output)
		if in.Op == 'a' && out.Allowed && !out.Unknown {
			k := slot{in.User, in.At}
			allowed[k] += max(1, in.Cost)
			if allowed[k] > allowed[top] {
				top = k
			}
		}
	}
	if allowed[top] == 0 {
		return "no request was allowed at all"
	}
	return fmt.Sprintf("the most allowed for one user at one instant (a request of cost n counts n): %d for %s at %s (limit %d; resets in between allow more)",
		allowed[top], h.Short(top.user), engine.FmtOffset(time.UnixMilli(top.at).Sub(h.Started())), h.N())
}
