package main

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/rlconform/rlconform/fakeclock"
)

// step is one weighted request at a millisecond of the fake clock.
type step struct{ ms, n int }

// xTimeAfter is the card's x/time/rate shim, 5 per minute, after steps
// (each admitted), its clock at ms.
func xTimeAfter(t *testing.T, steps []step, ms int) *xTime {
	t.Helper()
	start := time.UnixMilli(1767225600000)
	clock := fakeclock.New(start)
	lim, err := newXTime(&env{clock: clock, limit: 5, window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		clock.Set(start.Add(time.Duration(s.ms) * time.Millisecond))
		if ok, err := lim.(*xTime).AllowRequestN(context.Background(), "u", s.n); !ok || err != nil {
			t.Fatalf("AllowN(+%dms, %d): %v, %v", s.ms, s.n, ok, err)
		}
	}
	clock.Set(start.Add(time.Duration(ms) * time.Millisecond))
	return lim.(*xTime)
}

// At 4.9999999999999991 tokens (the float drift of strict/differential's
// and strict/cost-differential's schedules, cards/repro
// TestXTimeRateFloatTokens and TestXTimeRateFloatTokensWeighted), the
// library's AllowN admits 5: remaining is 5, not ⌊TokensAt⌋ = 4.
func TestXTimeRemainingIsWhatAllowNAdmits(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		steps []step
		at    int
	}{
		{[]step{{0, 1}, {5351, 4}, {22400, 1}}, 72000},
		{[]step{{0, 5}, {35999, 2}}, 84000},
	} {
		x := xTimeAfter(t, tc.steps, tc.at)
		tokens := x.user("u").TokensAt(x.e.now())
		if tokens >= 5 {
			t.Fatalf("%v: TokensAt = %.17g, no longer a hair below 5: the test shows nothing", tc.steps, tokens)
		}
		got, err := x.GetRemainingRequests(ctx, "u")
		if err != nil {
			t.Fatal(err)
		}
		if got != 5 {
			t.Errorf("%v: remaining %d at TokensAt %.17g, want 5 (what AllowN admits)", tc.steps, got, tokens)
		}
		if ok, _ := x.AllowRequestN(ctx, "u", 5); !ok {
			t.Errorf("%v: AllowN(5) refused at TokensAt %.17g: the library admits fewer than remaining says", tc.steps, tokens)
		}
	}
}

// On random schedules, remaining r is what AllowN admits on the same
// state: r is admitted and r+1 (up to the burst) refused, each asked of a
// Limiter that lived the same history.
func TestXTimeRemainingAgreesWithAllowN(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		var steps []step
		ms := 0
		for range 1 + rng.IntN(6) {
			ms += rng.IntN(30000)
			steps = append(steps, step{ms, 1 + rng.IntN(5)})
		}
		// Keep only the steps the library admits, as it admitted them.
		probe := xTimeAfter(t, nil, 0)
		var kept []step
		start := probe.e.now()
		for _, s := range steps {
			if probe.user("u").AllowN(start.Add(time.Duration(s.ms)*time.Millisecond), s.n) {
				kept = append(kept, s)
			}
		}
		at := ms + rng.IntN(60000)
		r, err := xTimeAfter(t, kept, at).GetRemainingRequests(ctx, "u")
		if err != nil {
			t.Fatal(err)
		}
		if r > 0 {
			if ok, _ := xTimeAfter(t, kept, at).AllowRequestN(ctx, "u", r); !ok {
				t.Fatalf("%v at %dms: remaining %d, but AllowN(%d) refused", kept, at, r, r)
			}
		}
		if r < 5 {
			if ok, _ := xTimeAfter(t, kept, at).AllowRequestN(ctx, "u", r+1); ok {
				t.Fatalf("%v at %dms: remaining %d, but AllowN(%d) admitted", kept, at, r, r+1)
			}
		}
	}
}

// remainingAt follows the library at its edges: no tokens, a deficit a
// wait of at least 1 ns makes up, a limit of 0 (no refill), and the burst.
func TestXTimeRemainingAtEdges(t *testing.T) {
	for _, tc := range []struct {
		tokens float64
		limit  rate.Limit
		burst  int
		want   int
	}{
		{0, 5.0 / 60, 5, 0},
		{-1e-15, 5.0 / 60, 5, 0},
		{0.9999999, 5.0 / 60, 5, 0}, // 1e-7 token short: 1.2 ms to wait
		{0.9999999999999999, 5.0 / 60, 5, 1},
		{4.9999999999999991, 0, 5, 4}, // no refill: the wait is infinite
		{5, 5.0 / 60, 5, 5},
		{5, 5.0 / 60, 3, 3},
	} {
		if got := remainingAt(tc.tokens, tc.limit, tc.burst); got != tc.want {
			t.Errorf("remainingAt(%.17g, %v, %d) = %d, want %d", tc.tokens, tc.limit, tc.burst, got, tc.want)
		}
	}
}
