package testtier

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var letters = []string{"a", "b", "c", "d", "e", "f", "g", "h"}

func id(s string) string { return s }

func TestSampleIsTheSeedsAndTheTestsChoice(t *testing.T) {
	t.Setenv(FullEnv, "")
	got := Sample(t, "letters", letters, 3, id)
	require.Len(t, got, 3)
	again := Sample(t, "letters", letters, 3, id)
	assert.Equal(t, got, again, "one seed, one test: one sample")
	seen := map[string]bool{}
	last := -1
	for _, s := range got {
		assert.False(t, seen[s], "picked twice: %s", s)
		seen[s] = true
		i := indexOf(s)
		assert.Greater(t, i, last, "in the order of all")
		last = i
	}
	// Over many tests the sample rotates: every element is picked by some.
	all := map[string]bool{}
	for i := range 40 {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			for _, s := range Sample(t, "letters", letters, 2, id) {
				all[s] = true
			}
		})
	}
	assert.Len(t, all, len(letters), "the sample rotates")
}

func TestFullTierTakesAll(t *testing.T) {
	t.Setenv(FullEnv, "1")
	assert.Equal(t, letters, Sample(t, "letters", letters, 2, id))
	assert.Equal(t, 20, Runs(20, 3))
	t.Setenv(FullEnv, "")
	assert.Equal(t, 3, Runs(20, 3))
	assert.Equal(t, letters, Sample(t, "letters", letters, len(letters), id), "k covering all is all")
}

func indexOf(s string) int {
	for i, l := range letters {
		if l == s {
			return i
		}
	}
	return -1
}

func TestTheRestTakesWhatTheDefaultTierLeftOut(t *testing.T) {
	t.Setenv(SeedEnv, "4242")
	t.Setenv(FullEnv, "")
	picked := Sample(t, "letters", letters, 3, id)
	assert.Equal(t, 3, Runs(20, 3))
	t.Setenv(FullEnv, RestTier)
	rest := Sample(t, "letters", letters, 3, id)
	assert.Len(t, rest, len(letters)-3)
	assert.ElementsMatch(t, letters, append(append([]string{}, picked...), rest...), "the two tiers together run the whole matrix, each element once")
	assert.Equal(t, 17, Runs(20, 3), "the runs beyond the default tier's")
	assert.Empty(t, Sample(t, "letters", letters, len(letters), id), "the default tier ran all: nothing is left")
	assert.ElementsMatch(t, []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, append(Seeds(t, 10, 4), seedsOf(t, 10, 4)...), "seeds too")
}

func TestTheRestWithoutASeedTakesAll(t *testing.T) {
	t.Setenv(SeedEnv, "")
	t.Setenv(FullEnv, RestTier)
	assert.Equal(t, letters, Sample(t, "letters", letters, 2, id), "no seed says what the default tier picked: all")
}

// seedsOf is the default tier's seeds (of n, k) in the same test.
func seedsOf(t *testing.T, n, k uint64) []uint64 {
	t.Setenv(FullEnv, "")
	return Seeds(t, n, k)
}
