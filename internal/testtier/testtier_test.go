package testtier

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var letters = []string{"a", "b", "c", "d", "e", "f", "g", "h"}

func id(s string) string { return s }

func TestSampleIsTheSeedsAndTheTestsChoice(t *testing.T) {
	t.Setenv(FullEnv, "")
	got := Sample(t, letters, 3, id)
	require.Len(t, got, 3)
	again := Sample(t, letters, 3, id)
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
			for _, s := range Sample(t, letters, 2, id) {
				all[s] = true
			}
		})
	}
	assert.Len(t, all, len(letters), "the sample rotates")
}

func TestFullTierTakesAll(t *testing.T) {
	t.Setenv(FullEnv, "1")
	assert.Equal(t, letters, Sample(t, letters, 2, id))
	assert.Equal(t, 20, Runs(20, 3))
	t.Setenv(FullEnv, "")
	assert.Equal(t, 3, Runs(20, 3))
	assert.Equal(t, letters, Sample(t, letters, len(letters), id), "k covering all is all")
}

func indexOf(s string) int {
	for i, l := range letters {
		if l == s {
			return i
		}
	}
	return -1
}

// TestTheFullTierListsEveryPackageThatHasOne: make test-full runs the
// packages the Makefile lists in FULL_TIER; each package whose tests
// sample, repeat less or skip outside the full tier is among them, and
// each listed package has such a test.
func TestTheFullTierListsEveryPackageThatHasOne(t *testing.T) {
	root := filepath.Join("..", "..")
	uses := regexp.MustCompile(`testtier\.(Sample|Runs|Seeds|SkipUnlessFull|Full)\(`)
	want := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == "." {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		if dir != filepath.Join("internal", "testtier") && uses.Match(src) {
			want["./"+filepath.ToSlash(dir)] = true
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, want)
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^FULL_TIER := (.*)$`).FindSubmatch(makefile)
	require.NotNil(t, m, "the Makefile sets FULL_TIER")
	listed := map[string]bool{}
	for _, p := range strings.Fields(string(m[1])) {
		listed[p] = true
	}
	assert.Equal(t, want, listed, "FULL_TIER in the Makefile: the packages whose tests have a full tier")
}
