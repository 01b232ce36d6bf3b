package version

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/suite"
)

// TestStampedBuild builds rlconform as make build does, the version and
// commit stamped with -ldflags -X (here a made-up git describe), and reads
// what rlconform version prints: the stamped version, a commit, the Go,
// and this tree's catalogue.
func TestStampedBuild(t *testing.T) {
	testtier.SkipShort(t, "builds rlconform")
	bin := filepath.Join(t.TempDir(), "rlconform")
	const pkg = "github.com/rlconform/rlconform/internal/version"
	ld := "-X " + pkg + ".stamped=v9.8.7-1-gdeadbee -X " + pkg + ".stampedCommit=deadbeefcafe0123"
	out, err := exec.CommandContext(t.Context(), "go", "build", "-ldflags", ld, "-o", bin, "../../cmd/rlconform").CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.CommandContext(t.Context(), bin, "version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	specs := suite.Specs()
	assert.Regexp(t, `^rlconform v9\.8\.7-1-gdeadbee\ncommit    [0-9a-f]{12}(, modified)?\ngo        go1\.\S+\ncatalogue `+
		regexp.QuoteMeta(Catalogue(specs))+` \(\d+ specs\)\n$`, string(out))
}
