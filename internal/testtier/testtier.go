// Package testtier says how much of its slow work a test of rlconform
// does, so that the edit loop, make test and CI each run what they can
// afford while every check still runs somewhere:
//
//   - go test -short (the edit loop): tests that wait on real time, build
//     another module, start a gateway, Node.js or Docker skip, saying so
//     ([SkipShort]), and some matrices take a smaller sample ([Quick]).
//   - go test, as make test runs it (the default tier): a matrix of runs on
//     equivalent targets is sampled ([Sample]) with a seed the test logs,
//     so that a failure reproduces, and a different part of it runs each
//     time; a loop that repeats a run to catch a rare failure runs fewer
//     times ([Runs]), a property test fewer seeds ([Seeds]).
//   - RLCONFORM_FULL=1: every sample is the whole matrix and every loop
//     runs its full count.
//   - RLCONFORM_FULL=rest (make test-full, which CI runs after make test):
//     what the default tier left out, and nothing it ran: the rest of each
//     matrix the default tier sampled with the same RLCONFORM_SEED (the
//     whole matrix when no seed is given, as nothing says what was
//     sampled), and the runs of a loop beyond the default tier's. make
//     test-full runs only the tests that have such a part (rest.txt, which
//     TestRestListsEveryTieredTest keeps whole), and every test that does
//     not wait on real time again under the race detector (go test -race
//     -short).
//
// RLCONFORM_SEED=N picks the sample that a logged seed N picked.
package testtier

import (
	"crypto/rand"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/fnv"
	mrand "math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// FullEnv, set to 1, runs the full tier.
const FullEnv = "RLCONFORM_FULL"

// SeedEnv, set to a number, is the seed of every sample of the run.
const SeedEnv = "RLCONFORM_SEED"

// Full reports whether the full tier runs (RLCONFORM_FULL=1), or its rest
// (RLCONFORM_FULL=rest).
func Full() bool { v := os.Getenv(FullEnv); return v == "1" || v == RestTier }

// RestTier, as the value of FullEnv, runs what the default tier left out.
const RestTier = "rest"

// Rest reports whether the run is the rest of a default tier run with a
// known seed (RLCONFORM_FULL=rest and RLCONFORM_SEED): a sample is then
// the matrix less what that run picked, and a test runs only its part
// beyond the default tier's.
func Rest() bool { return os.Getenv(FullEnv) == RestTier && os.Getenv(SeedEnv) != "" }

// SkipShort skips t under go test -short, saying what it leaves out; make
// test and the full tier run it.
func SkipShort(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: %s (make test runs it)", what)
	}
}

// SkipUnlessFull skips t outside the full tier, saying what it leaves out
// and that make test-full (CI) runs it.
func SkipUnlessFull(t testing.TB, what string) {
	t.Helper()
	if !Full() {
		t.Skipf("%s: runs in the full tier (%s=1, make test-full, CI)", what, FullEnv)
	}
}

// Runs is how many times a repeated run goes: full in the full tier,
// quick otherwise, and full less quick in the rest of the full tier (the
// default tier ran quick of them).
func Runs(full, quick int) int {
	switch {
	case os.Getenv(FullEnv) == RestTier:
		return max(0, full-quick)
	case Full():
		return full
	}
	return quick
}

// randomSeed is the seed of a run that names none: chosen once per test
// binary.
var randomSeed = sync.OnceValues(func() (uint64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, fmt.Errorf("testtier: a seed: %w", err)
	}
	// Short enough to type back.
	return binary.LittleEndian.Uint64(b[:]) % 1_000_000, nil
})

// Seed is the seed of the run's samples: RLCONFORM_SEED, or one chosen
// once per test binary.
func Seed(t testing.TB) uint64 {
	t.Helper()
	if s := os.Getenv(SeedEnv); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: not a number: %v", SeedEnv, s, err)
		}
		return n
	}
	s, err := randomSeed()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Sample returns k of all, chosen by the run's seed and the test's name,
// in their order in all, and logs which, with the seed that chose them;
// in the full tier, or when k covers all, it returns all; in the rest of
// the full tier with a seed, the others (those the default tier with that
// seed left out). what says what the elements are, in the plural
// ("mutants", "seeds"), and name names one, in the log.
func Sample[T any](t testing.TB, what string, all []T, k int, name func(T) string) []T {
	t.Helper()
	if k >= len(all) {
		if Rest() {
			t.Logf("the default tier ran all %d %s: none left for the rest", len(all), what)
			return nil
		}
		return all
	}
	if Full() && !Rest() {
		return all
	}
	s := Seed(t)
	h := fnv.New64a()
	h.Write([]byte(t.Name()))
	r := mrand.New(mrand.NewPCG(s, h.Sum64()))
	picked := make([]bool, len(all))
	for _, i := range r.Perm(len(all))[:k] {
		picked[i] = true
	}
	take := !Rest() // the rest takes those the default tier did not
	var out []T
	var names []string
	for i, e := range all {
		if picked[i] == take {
			out = append(out, e)
			names = append(names, name(e))
		}
	}
	if Rest() {
		t.Logf("the rest: %d of %d %s, those the default tier with %s=%d left out: %s", len(out), len(all), what, SeedEnv, s, strings.Join(names, ", "))
		return out
	}
	t.Logf("sampled %d of %d %s: %s (%s=%d picks them again; %s=1 runs all)",
		k, len(all), what, strings.Join(names, ", "), SeedEnv, s, FullEnv)
	return out
}

// Parallelism sets how many parallel tests run at once (-test.parallel)
// to n, unless the command line gave -parallel: for a package whose
// parallel tests mostly wait on real time, not on the CPU. Call it from
// TestMain, before m.Run; not in a package that runs Ginkgo specs (Ginkgo
// refuses a -parallel other than its default).
func Parallelism(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		// The flag is the testing package's own: it exists once tests run.
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}

// Seeds returns the seeds 0 to n-1 of a property test: all of them in the
// full tier, a sample of k otherwise, which rotates with the run's seed
// (and is logged, so that a failure's seed is known).
func Seeds(t testing.TB, n, k uint64) []uint64 {
	t.Helper()
	all := make([]uint64, n)
	for i := range all {
		all[i] = uint64(i)
	}
	return Sample(t, "seeds", all, int(k), func(s uint64) string { return strconv.FormatUint(s, 10) })
}

// Quick is n, or short under go test -short: how many of a matrix the edit
// loop takes (a sample's k, a loop's count).
func Quick(n, short int) int {
	if testing.Short() {
		return short
	}
	return n
}
