package ginkgo_test

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRegisterAtPackageLevelReadsTheFlags runs a separate module that calls
// Register at package level, before go test parses the flags, as the
// README shows: -rlconform.id and -rlconform.seed still select and seed the
// run (they were silently ignored), and every spec not selected says so.
func TestRegisterAtPackageLevelReadsTheFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a separate module")
	}
	cmd := exec.Command("go", "test", "-count=1", "-v", ".", "-args",
		"-rlconform.id=core/reset", "-rlconform.seed=42", "-ginkgo.no-color", "-ginkgo.v")
	cmd.Dir = "testdata/ginkgouser"
	raw, err := cmd.CombinedOutput()
	out := string(raw)
	require.NoError(t, err, out)
	assert.Contains(t, out, "reproduce with: go test -args -rlconform.seed=42 -rlconform.level=all -rlconform.id=core/reset")
	assert.Regexp(t, regexp.MustCompile(`\b1 Passed \| 0 Failed`), out)
	skipped := strings.Count(out, "not selected: the run grades level all, only ids core/reset")
	assert.Positive(t, skipped, out)
	assert.Regexp(t, regexp.MustCompile(`\b`+strconv.Itoa(skipped)+` Skipped`), out)
}
