package main

import (
	"context"
	"testing"
)

// TestFastCards grades the two cards that take an injected clock
// (x/time/rate and throttled's memory store: seconds each, no real-time
// waits) and compares their verdicts with cards/expected.txt, as make
// cards does for all of them. make test runs it; make cards runs the rest.
func TestFastCards(t *testing.T) {
	if testing.Short() {
		t.Skip("grades two cards with rlconform")
	}
	code, err := run(context.Background(), options{root: "../..", only: "x-time-rate,throttled-memstore"})
	if err != nil || code != 0 {
		t.Fatalf("grading x-time-rate and throttled-memstore: exit %d, %v (the differences are above)", code, err)
	}
}
