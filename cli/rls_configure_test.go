package cli

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/adapters/rls"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/reference"
)

// serveRLSOverrides serves the reference as an RLS server that honours a
// descriptor's limit override, as serve --rls-mode does: with apart, each
// configuration on a key prefix of its own, so that an override changed
// forgets every user's history (a server that keeps a count per limit).
func serveRLSOverrides(t *testing.T, prefix string, apart bool) string {
	t.Helper()
	lim, err := reference.New(store.Client, reference.Options{MaxRequests: 5, Window: time.Second, Prefix: prefix})
	require.NoError(t, err)
	o := &overrides{made: map[overrideKey]rls.Decider{}, make: func(n int, w time.Duration) (*reference.Limiter, error) {
		p := prefix
		if apart {
			p = fmt.Sprintf("%s%d/%v:", prefix, n, w)
		}
		return reference.New(store.Client, reference.Options{MaxRequests: n, Window: w, Prefix: p})
	}}
	srv, err := rls.Listen("127.0.0.1:0", referenceDecider(lim), rls.ServerOptions{Key: "user", DecideOverride: o.decide})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return srv.Addr
}

// With --rls-configure limit, Configure is a descriptor's limit override:
// a server that honours it has its reconfiguration graded, and one whose
// count does not survive a changed override fails core/reconfigure.
func TestRLSConfigureIsTheLimitOverride(t *testing.T) {
	testtier.SkipShort(t, "grades an RLS server in real time")
	t.Parallel()
	ids := "core/reconfigure,strict/raised-limit,strict/config-range"
	addr := serveRLSOverrides(t, fmt.Sprintf("rlc-rls-cfg:%d:", time.Now().UnixNano()), false)
	code, out, errOut := rlsRun(t, []string{addr}, "--id", ids, "--rls-configure", "limit")
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	for _, id := range []string{"core/reconfigure", "strict/raised-limit"} {
		assert.Regexp(t, `pass\s+`+id, out)
	}
	assert.Regexp(t, `skip\s+strict/config-range.*takes only \[1s 1m0s 1h0m0s 24h0m0s\]`, out)

	apart := serveRLSOverrides(t, fmt.Sprintf("rlc-rls-cfg-apart:%d:", time.Now().UnixNano()), true)
	code, out, errOut = rlsRun(t, []string{apart}, "--id", "core/reconfigure", "--rls-configure", "limit")
	require.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)
	assert.Regexp(t, `fail\s+core/reconfigure`, out)
}

// A server that ignores the limit override is an error of the run, named
// (exit 2), never graded for a limit it was not given; so is a server
// whose limit has no unit an override carries, and a mode not known.
func TestRLSConfigureNeedsAnOverrideHonoured(t *testing.T) {
	testtier.SkipShort(t, "serves an RLS server")
	t.Parallel()
	addr := serveRLSReference(t, fmt.Sprintf("rlc-rls-cfg-ign:%d:", time.Now().UnixNano()), nil)
	code, out, errOut := rlsRun(t, []string{addr}, "--rls-configure", "limit")
	require.Equal(t, ExitCannotRun, code, "%s\n%s", out, errOut)
	assert.Contains(t, errOut, "carried the limit override 6 per 1s was answered current_limit 5 per 1s: the server does not honour the override")

	code, _, errOut = rlsRun(t, []string{addr}, "--rls-configure", "limit", "--policy", "5/2s")
	require.Equal(t, ExitCannotRun, code, errOut)
	assert.Contains(t, errOut, "a descriptor's limit override carries only windows of [1s 1m0s 1h0m0s 24h0m0s]")

	code, _, errOut = rlsRun(t, []string{addr}, "--rls-configure", "rules")
	require.Equal(t, ExitCannotRun, code, errOut)
	assert.Contains(t, errOut, `--rls-configure "rules": want none or limit`)
}
