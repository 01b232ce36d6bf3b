package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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

// TestFailFastStopsTheSlidingLogRunOnly grades a card with -fail-fast:
// its run against the sliding log (the card's profile is another) stops
// at its first failure and keeps its expected outcome; the run of its own
// profile is whole.
func TestFailFastStopsTheSlidingLogRunOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("grades a card with rlconform")
	}
	keep := t.TempDir()
	code, err := run(context.Background(), options{root: "../..", only: "x-time-rate", write: true, failFast: true, keep: keep})
	if err != nil || code != 0 {
		t.Fatalf("grading x-time-rate with -fail-fast: exit %d, %v (the differences are above)", code, err)
	}
	stopped := func(name string) bool {
		b, err := os.ReadFile(filepath.Join(keep, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(b), `"stopped_at"`)
	}
	if stopped("x-time-rate-2-run.json") {
		t.Error("the run of the card's own profile stopped early")
	}
	if !stopped("x-time-rate-3-run.json") {
		t.Error("the run against the sliding log did not stop at its first failure")
	}
}
