package main

import (
	"context"
	"testing"
)

// fastCards take an injected clock and keep their state in memory:
// seconds each, no real-time waits. The Java ones run on the classes
// make cards-deps compiles (scripts/ensure-cards-java).
const fastCards = "x-time-rate,throttled-memstore,guava,resilience4j,bucket4j-memory,governor"

// TestFastCards grades fastCards and compares their verdicts with
// cards/expected.txt, as make cards does for all of them. make test runs
// it; make cards runs the rest.
func TestFastCards(t *testing.T) {
	if testing.Short() {
		t.Skip("grades six cards with rlconform")
	}
	code, err := run(context.Background(), options{root: "../..", only: fastCards, write: false})
	if err != nil || code != 0 {
		t.Fatalf("grading %s: exit %d, %v (the differences are above)", fastCards, code, err)
	}
}
