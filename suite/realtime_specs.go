package suite

import (
	"fmt"
	"time"
)

// slidingExpiryRealTime grades expiry on a target without clock control.
// Entry instants are only known to lie between a call's start and return,
// so it judges only what timing makes certain: a request that returned
// before the first entry's call start + W must be denied, and one that
// began after the last entry's return + W must be allowed. A round whose
// timing decides nothing (a slow machine) is retried; three such rounds
// make the spec inconclusive, never a false verdict.
func slidingExpiryRealTime(h *harness) {
	w := h.run.cfg.RealTimeWindow
	h.Configure(h.N(), w)
	lim := h.Instance(0)
	for round := range 3 {
		u := h.User(fmt.Sprintf("rt%d", round))
		first := time.Now()
		for i := range h.N() {
			ok, err := lim.AllowRequest(h.ctx, u)
			h.Note("AllowRequest("+h.short(u)+")", errWord(err, allowedWord(ok)))
			if err != nil {
				h.Failf("AllowRequest(%s): %v", h.short(u), err)
			}
			if !ok {
				h.Failf("request %d of a fresh user was denied; want the first N = %d allowed", i+1, h.N())
			}
		}
		last := time.Now()

		// Still within the window of every entry: denied.
		ok, err := lim.AllowRequest(h.ctx, u)
		returned := time.Now()
		h.Note("AllowRequest("+h.short(u)+")", errWord(err, allowedWord(ok)))
		if err != nil {
			h.Failf("AllowRequest(%s): %v", h.short(u), err)
		}
		if returned.After(first.Add(w)) {
			continue // too slow to tell: try again
		}
		if ok {
			h.Failf("request N+1 was allowed %v after the first of N allowed requests, within the window W = %v: entries expire too early (window units?)",
				returned.Sub(first).Round(time.Millisecond), w)
		}

		// Wait until every entry has expired, polling what we may.
		deadline := last.Add(w)
		tick := time.NewTicker(w / 10)
		for time.Now().Before(deadline) {
			<-tick.C
			if !h.target.Capabilities.Remaining {
				continue
			}
			n, err := lim.GetRemainingRequests(h.ctx, u)
			if err == nil && n > 0 && time.Now().Before(first.Add(w)) {
				h.Note("GetRemainingRequests("+h.short(u)+")", fmt.Sprint(n))
				h.Failf("GetRemainingRequests = %d after %v, within the window W = %v of all N entries: want 0",
					n, time.Since(first).Round(time.Millisecond), w)
			}
		}
		tick.Stop()

		// Past W after the last entry: a full quota again.
		for i := range h.N() {
			began := time.Now()
			ok, err := lim.AllowRequest(h.ctx, u)
			h.Note("AllowRequest("+h.short(u)+")", errWord(err, allowedWord(ok)))
			if err != nil {
				h.Failf("AllowRequest(%s): %v", h.short(u), err)
			}
			if !ok {
				h.Failf("request %d was denied %v after the last of N entries, past the window W = %v: entries do not expire",
					i+1, began.Sub(last).Round(time.Millisecond), w)
			}
		}
		return
	}
	panic(inconclusive{h.report(fmt.Sprintf("three rounds of %d requests each took longer than the window W = %v: nothing can be judged in real time on this machine; raise the real-time window", h.N()+1, w))})
}
