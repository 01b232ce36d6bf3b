package reference_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/reference"
	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// compactOnServerTime is the compact log without clock control: it reads
// the Redis server's TIME, and the suite grades it in real time.
func compactOnServerTime() suite.Target {
	t := targets.ReferenceCompact()
	t.Name = "reference-compact on Redis TIME"
	t.Capabilities.Clock = false
	t.New = func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
		lim, err := reference.NewCompact(env.Redis, reference.Options{MaxRequests: env.MaxRequests, Window: env.Window, Prefix: env.KeyPrefix})
		return lim, nil, err
	}
	return t
}

// requireConformant fails the test unless rep fails nothing; in real time a
// spec may be inconclusive on a slow machine, never failed.
func requireConformant(t *testing.T, rep *result.Report, realTime bool) {
	t.Helper()
	if !realTime {
		require.NoError(t, rep.Err(), report.String(rep))
	}
	assert.Zero(t, rep.Count(result.Failed), report.String(rep))
	assert.NotEqual(t, result.NotConformant, rep.Verdict().Outcome, report.String(rep))
	if realTime {
		for _, r := range rep.Results {
			if r.Status == result.Inconclusive {
				t.Logf("%s is inconclusive in real time on this machine:\n%s", r.ID, r.Message)
			}
		}
	}
	t.Log("\n" + report.String(rep))
}

// TestCompactConformant grades the compact log with the whole catalogue
// on one Redis, on the suite's fake clock: it passes every spec the
// reference passes.
func TestCompactConformant(t *testing.T) {
	// Not parallel: robust/store-outage stops the shared Redis.
	rep, err := suite.Check(context.Background(), suite.Config{Redis: reference.SharedRedis(), Level: result.All, ReportDir: t.TempDir()}, targets.ReferenceCompact())
	require.NoError(t, err)
	requireConformant(t, rep, false)
}

// TestCompactConformantInRealTime grades the compact log on the Redis
// server's TIME, without clock control, with the whole catalogue.
func TestCompactConformantInRealTime(t *testing.T) {
	testtier.SkipShort(t, "grades the compact log in real time")
	t.Parallel() // real time mostly waits; its own Redis (the engine's)
	rep, err := suite.Check(context.Background(), suite.Config{Level: result.All, ReportDir: t.TempDir()}, compactOnServerTime())
	require.NoError(t, err)
	requireConformant(t, rep, true)
}

// TestCompactConformantOnACluster grades the compact log on a
// three-master Redis Cluster, with the fake clock and on the servers'
// TIME, as TestConformantOnACluster grades the reference.
func TestCompactConformantOnACluster(t *testing.T) {
	testtier.SkipShort(t, "grades the compact log in real time")
	t.Parallel() // real time mostly waits; keys of its own on the shared cluster
	ctx := context.Background()
	cluster := reference.SharedCluster(t)
	client := cluster.Client()
	defer client.Close()
	red := &redisenv.Redis{Client: client, Source: redisenv.SourceURL, Addr: strings.Join(cluster.Addrs(), ",")}
	for _, c := range []struct {
		name     string
		target   suite.Target
		realTime bool
	}{{"clock", targets.ReferenceCompact(), false}, {"real-time", compactOnServerTime(), true}} {
		t.Run(c.name, func(t *testing.T) {
			rep, err := suite.Check(ctx, suite.Config{Redis: red, Level: result.Robust, ReportDir: t.TempDir()}, c.target)
			require.NoError(t, err)
			requireConformant(t, rep, c.realTime)
		})
	}
}
