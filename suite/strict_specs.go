package suite

import (
	"time"
)

// strictSpecs catch limiters that are not an exact sliding window.
func strictSpecs() []spec {
	return []spec{
		{id: "strict/boundary-burst-epoch", level: Strict, needs: []need{needClock},
			rule: "N requests just before an epoch-aligned window edge and N just after never get 2N through",
			run:  boundaryBurstEpoch},
		{id: "strict/boundary-burst-first", level: Strict, needs: []need{needClock},
			rule: "N requests just before the end of a window opened by the first request and N just after never get 2N through",
			run:  boundaryBurstFirst},
		{id: "strict/rolling-expiry", level: Strict, needs: []need{needClock},
			rule: "entries free their slots one by one, each at exactly s+W (s+W-1 still counts)",
			run:  rollingExpiry},
		{id: "strict/same-millisecond-burst", level: Strict, needs: []need{needClock},
			rule: "of N+k requests in one millisecond, exactly N are allowed",
			run:  sameMillisecondBurst},
		{id: "strict/denied-not-logged", level: Strict, needs: []need{needClock},
			rule: "denied requests are not logged: a user hammering while denied regains quota when its allowed entries expire",
			run:  deniedNotLogged},
		{id: "strict/shared-store", level: Strict, needs: []need{needShared},
			rule: "two instances on one store enforce one limit",
			run:  sharedStore},
		{id: "strict/shared-store-concurrent", level: Strict, needs: []need{needShared, needConfigure},
			rule: "16 goroutines over 2 instances sending 2N requests to each of many users get exactly N allowed per user",
			run:  sharedStoreConcurrent},
		{id: "strict/lowered-limit", level: Strict, needs: []need{needConfigure, needRemaining},
			rule: "a limit lowered below a user's active entries denies at once and remaining clamps at 0, never negative",
			run:  loweredLimit},
		{id: "strict/raised-limit", level: Strict, needs: []need{needConfigure},
			rule: "a raised limit admits a user that has history at once",
			run:  raisedLimit},
		{id: "strict/differential", level: Strict, needs: []need{needClock, needConfigure, needRemaining, needReset},
			rule: "random schedules (users, requests, remaining, resets, reconfigures, clock steps onto edges) answer as the model does",
			run:  differential},
	}
}

func boundaryBurstEpoch(h *H) {
	// The spec starts on a multiple of every window, so W is an epoch edge.
	u := h.User("u")
	h.At(h.W() - time.Millisecond)
	for range h.N() {
		h.Allow(u)
	}
	// All N entries at W-1 count until 2W-1: everything in between is denied.
	for _, at := range []time.Duration{h.W(), h.W() + time.Millisecond, h.W() + h.W()/4, h.W() + h.W()/2, 2*h.W() - 2*time.Millisecond} {
		h.At(at)
		h.Allow(u)
	}
	h.At(2*h.W() - time.Millisecond)
	for range h.N() + 1 {
		h.Allow(u)
	}
}

func boundaryBurstFirst(h *H) {
	// The first request opens any window a fixed-window limiter keeps; it
	// lands off every epoch edge.
	u := h.User("u")
	first := 12_345 * time.Millisecond
	h.At(first)
	h.Allow(u)
	h.At(first + h.W() - time.Millisecond)
	for range h.N() - 1 {
		h.Allow(u)
	}
	// At first+W only the first entry has left: one slot, not N.
	h.At(first + h.W())
	for range h.N() {
		h.Allow(u)
	}
	h.At(first + h.W() + h.W()/2)
	h.Allow(u)
}

func rollingExpiry(h *H) {
	u := h.User("u")
	step := h.W() / time.Duration(2*h.N())
	var entries []time.Duration
	for i := range h.N() {
		at := time.Duration(i) * step
		h.At(at)
		h.Allow(u)
		entries = append(entries, at)
	}
	h.Allow(u)
	for _, s := range entries {
		h.At(s + h.W() - time.Millisecond)
		h.Allow(u) // s still counts
		h.Remaining(u)
		h.At(s + h.W())
		h.Allow(u) // s has left: its slot is free, and taken
		h.Allow(u)
	}
}

func sameMillisecondBurst(h *H) {
	u := h.User("u")
	h.At(7 * time.Millisecond)
	for range h.N() + 3 {
		h.Allow(u)
	}
	h.At(h.W() + 6*time.Millisecond)
	h.Allow(u)
	h.At(h.W() + 7*time.Millisecond) // all N leave together
	for range h.N() + 1 {
		h.Allow(u)
	}
}

func deniedNotLogged(h *H) {
	u := h.User("u")
	for range h.N() {
		h.Allow(u)
	}
	for i := 1; i < 20; i++ {
		h.At(h.W() * time.Duration(i) / 20)
		h.Allow(u)
		h.Allow(u)
	}
	h.At(h.W())
	for range h.N() + 1 {
		h.Allow(u)
	}
}

func sharedStore(h *H) {
	h.Instances(2)
	for _, name := range []string{"a", "b", "c"} {
		u := h.User(name)
		for i := range h.N() + 2 {
			h.AllowOn(i%2, u)
		}
		h.AllowOn(0, u)
		h.AllowOn(1, u)
	}
	if h.target.Capabilities.Remaining {
		h.RemainingOn(1, h.User("a"))
	}
}

func sharedStoreConcurrent(h *H) {
	h.Configure(20, h.W())
	var users []string
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		users = append(users, h.User(name))
	}
	h.CheckBurst(users, 2*h.N(), 16, h.Instances(2))
}

func loweredLimit(h *H) {
	u := h.User("u")
	h.Configure(6, h.W())
	for range 5 {
		h.Allow(u)
		h.tick(time.Millisecond)
	}
	h.Configure(2, h.W())
	h.Remaining(u) // 2 - 5 active: 0, not -3
	h.Allow(u)
	h.Remaining(u)
	h.Configure(1, h.W())
	h.Remaining(u)
	if h.fake != nil {
		for i := range 5 { // entries leave one by one; remaining stays 0 until fewer than 1 are active
			h.At(h.W() + time.Duration(i)*time.Millisecond)
			h.Remaining(u)
		}
		h.Allow(u)
	}
}

func raisedLimit(h *H) {
	u := h.User("u")
	h.Configure(2, h.W())
	for range 3 {
		h.Allow(u)
	}
	h.Configure(5, h.W())
	for range 4 {
		h.Allow(u)
	}
	if h.target.Capabilities.Remaining {
		h.Remaining(u)
	}
}
