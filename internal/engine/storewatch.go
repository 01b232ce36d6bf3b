package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/result"
)

// storeWatch follows a store the run reaches while specs run (the Redis of
// the reference or of --exec's processes, or a target's given with
// --store-url) and keeps when it was seen failing: not answering, started
// afresh (its run_id changed), or promoted or demoted (its role changed: a
// failover). A limiter's answers then are its store-failure policy's (or
// its store lost what it held), not its algorithm's: a spec that ran then
// is no verdict either way (see runner.storeEvidence).
type storeWatch struct {
	client redis.UniversalClient
	addr   string
	every  time.Duration
	cancel context.CancelFunc
	done   chan struct{}
	// release frees the watch's client when it stops.
	release func()

	mu    sync.Mutex
	spans []storeSpan
	owned []storeSpan // when a spec of the run put a fault on it itself
	// down, when not nil, is a spell without answers still going on.
	down *storeSpan
}

// storeSpan is an interval of time and what happened in it.
type storeSpan struct {
	from, to time.Time
	why      string
}

// maxStoreSpans bounds the spans kept: past it, the two earliest are
// merged.
const maxStoreSpans = 256

// storeGrace is how long after a store was seen failing a limiter's
// answers are still taken for its policy's: its client reconnects (with a
// backoff), a failover client finds the new primary.
const storeGrace = 2 * time.Second

// storeSampleTimeout is how long a sample may take before the store is
// taken for one that does not answer: far longer than a limiter waits on
// its store, so that a loaded machine's slow answer is not a failure.
const storeSampleTimeout = 3 * time.Second

// watchStore starts following client's store (at addr, for messages)
// every every, until stop, which calls release.
func watchStore(client redis.UniversalClient, addr string, every time.Duration, release func()) *storeWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &storeWatch{client: client, addr: addr, every: every, cancel: cancel, done: make(chan struct{}), release: release}
	go w.loop(ctx)
	return w
}

// stop ends the watch, waits for it and releases its client.
func (w *storeWatch) stop() {
	w.cancel()
	<-w.done
	w.release()
}

// loop samples the store until ctx ends.
func (w *storeWatch) loop(ctx context.Context) {
	defer close(w.done)
	_, cluster := w.client.(*redis.ClusterClient)
	tick := time.NewTicker(w.every)
	defer tick.Stop()
	var (
		lastOK      time.Time
		down        error
		runID, role string
	)
	for {
		at := time.Now()
		id, r, err := sample(ctx, w.client, cluster, storeSampleTimeout)
		if ctx.Err() != nil {
			return
		}
		now := time.Now()
		switch {
		case err != nil:
			if down == nil {
				down = err
			}
			w.setDown(lastOK, now, fmt.Sprintf("does not answer (%v)", down))
		case down != nil:
			w.mark(lastOK, now, fmt.Sprintf("stopped answering (%v)", down))
			down = nil
		}
		if err == nil {
			if runID != "" && id != "" && id != runID {
				w.mark(lastOK, now, "was replaced or started afresh (its run_id changed: a restart, or a failover to another server): what it held before may be lost")
			}
			if role != "" && r != "" && r != role {
				w.mark(lastOK, now, fmt.Sprintf("went from %s to %s (a failover)", role, r))
			}
			if id != "" {
				runID, role = id, r
			}
			lastOK = at
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			if down != nil {
				w.mark(lastOK, time.Now(), fmt.Sprintf("stopped answering (%v)", down))
			}
			return
		}
	}
}

// sample reads the store's run_id and role within timeout (a cluster's:
// a PING only, as each command may reach another node).
func sample(ctx context.Context, c redis.UniversalClient, cluster bool, timeout time.Duration) (runID, role string, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if cluster {
		return "", "", c.Ping(ctx).Err()
	}
	info, err := c.Info(ctx, "server", "replication").Result()
	if rerr, ok := errors.AsType[redis.Error](err); ok && !strings.HasPrefix(rerr.Error(), "LOADING") {
		// It answered, refusing INFO (a managed Redis may): whether it
		// answers is all a PING tells.
		return "", "", c.Ping(ctx).Err()
	}
	if err != nil {
		return "", "", err
	}
	for _, line := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		switch k {
		case "run_id":
			runID = v
		case "role":
			role = v
		}
	}
	return runID, role, nil
}

// setDown says the store has not answered from from to to, so far.
func (w *storeWatch) setDown(from, to time.Time, why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if from.IsZero() {
		from = to
	}
	w.down = &storeSpan{from, to, why}
}

// mark keeps a span in which the store failed, ending a spell without
// answers. from is zero when the store never answered since the watch
// began.
func (w *storeWatch) mark(from, to time.Time, why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.down = nil
	if from.IsZero() {
		from = to
	}
	w.spans = append(w.spans, storeSpan{from, to, why})
	if len(w.spans) > maxStoreSpans {
		a, b := w.spans[0], w.spans[1]
		w.spans[1] = storeSpan{a.from, b.to, a.why}
		w.spans = w.spans[1:]
	}
}

// own says that a spec of the run is putting faults on the store from
// from to to (robust/store-outage): what the watch sees then is that
// spec's doing, graded by it.
func (w *storeWatch) own(from, to time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.owned = append(w.owned, storeSpan{from: from, to: to})
	if len(w.owned) > maxStoreSpans {
		w.owned = w.owned[1:]
	}
}

// during returns what the store did between from and to (each span
// widened by storeGrace), "" when it was seen healthy throughout; spans
// within a fault a spec of the run put on it are not counted.
func (w *storeWatch) during(from, to time.Time) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	spans := w.spans
	if w.down != nil { // still going on
		spans = append(slices.Clip(spans), *w.down)
	}
	for _, s := range spans {
		if s.to.Add(storeGrace).Before(from) || s.from.After(to) || w.ownedLocked(s) {
			continue
		}
		return fmt.Sprintf("the store at %s %s, from %s to %s", w.addr, s.why, s.from.Format("15:04:05.000"), s.to.Format("15:04:05.000"))
	}
	return ""
}

// ownedLocked reports whether s lies within a fault a spec put on the
// store (with storeGrace after it: the store comes back loading).
func (w *storeWatch) ownedLocked(s storeSpan) bool {
	for _, o := range w.owned {
		// From the sample before the spec began: a fault it put on the
		// store at once is seen from there.
		if !s.from.Before(o.from.Add(-2*w.every)) && !s.to.After(o.to.Add(storeGrace)) {
			return true
		}
	}
	return false
}

// policyPattern recognises, in a failed spec's timeline, the answers of a
// store that failed under a limiter whose declared store-failure policy is
// allow or deny, where the run neither watches the store nor hears the
// target say so: from one instant to the spec's end every AllowRequest got
// the policy's answer (allowed, or denied), for at least two users and
// four answers, the failing step among them, after answers that were not
// all the policy's, or (deny) with a user's very first request refused,
// which no limiter that can decide does. It returns the pattern, named,
// or "". A store that fails and comes back within a spec leaves no such
// pattern: the run must watch the store, or hear the target say so.
func policyPattern(res *result.Result, policy contract.StoreFailure) string {
	want := map[contract.StoreFailure]string{contract.StoreFailureAllow: "allowed", contract.StoreFailureDeny: "denied"}[policy]
	if want == "" || res.Status != result.Failed || res.Failure == nil || res.Failure.Timeline == nil {
		return ""
	}
	ops := res.Failure.Timeline.Ops
	from := len(ops) // the first allow of the run of the policy's answers that ends the spec
	for i := len(ops) - 1; i >= 0; i-- {
		if ops[i].Kind != result.OpAllow {
			continue
		}
		if ops[i].Got != want {
			break
		}
		from = i
	}
	users, seen := map[string]bool{}, map[string]bool{}
	answers, before, freshRefused := 0, false, false
	whole := len(ops) > 0 && ops[0].Step == 1 // every user's first request is in ops
	for i, op := range ops {
		if op.Kind != result.OpAllow {
			seen[op.User] = seen[op.User] || op.User != "" // a burst, a query: no longer fresh
			continue
		}
		// A first request of one unit: a weighted one may be refused
		// by any limiter (a cost above the limit).
		first := whole && !seen[op.User] && strings.HasPrefix(op.Op, "AllowRequest(")
		seen[op.User] = true
		if i < from {
			before = true
			continue
		}
		users[op.User] = true
		answers++
		freshRefused = freshRefused || first && policy == contract.StoreFailureDeny
	}
	if !(before || freshRefused) || len(users) < 2 || answers < 4 || from == len(ops) || (res.Failure.Step > 0 && res.Failure.Step < ops[from].Step) {
		return ""
	}
	return fmt.Sprintf("every AllowRequest from %s to the spec's end was %s (%d answers, %d users), as the declared store-failure policy %s answers while the store fails: the failure may be that policy's, not the algorithm's; not a verdict (give --store-url, or have the target mark its policy's answers: %s)",
		FmtOffset(ops[from].At), want, answers, len(users), policy, contract.HeaderStoreFailure)
}
