package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// run --limit and --window grade a limiter with Configure at another
// scale, which the report's first line names; an endpoint's scale is its
// own (--policy), and a negative one is refused.
func TestRunAtAnotherScale(t *testing.T) {
	code, out, errOut := rlconform(t, "run", "--limit", "100", "--window", "1s", "--id", "core/block-over-limit", "--report-dir", t.TempDir())
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "profile sliding-log, 100 per 1s, seed")

	code, _, errOut = rlconform(t, "run", "--limit", "100", "--endpoint", "http://127.0.0.1:1/", "--identity", "header:X-User")
	require.Equal(t, ExitCannotRun, code, errOut)
	assert.Contains(t, errOut, "--limit and --window configure a limiter with Configure; an --endpoint's or --rls server's limit is its own: give --policy N/W")

	code, _, errOut = rlconform(t, "run", "--window", "-1s")
	require.Equal(t, ExitCannotRun, code, errOut)
	assert.Contains(t, errOut, "--limit and --window must be positive")
}
