package reference_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/reference"
	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// TestConformantOnACluster grades the reference on a three-master Redis
// Cluster: every key is one user's, hash-tagged, so every script touches
// one slot.
func TestConformantOnACluster(t *testing.T) {
	t.Parallel() // keys of its own on the shared cluster
	ctx := context.Background()
	cluster := reference.SharedCluster(t)
	client := cluster.Client()
	defer client.Close()

	red := &redisenv.Redis{Client: client, Source: redisenv.SourceURL, Addr: strings.Join(cluster.Addrs(), ",")}
	rep, err := suite.Check(ctx, suite.Config{Redis: red, Level: result.Robust}, targets.Reference())
	require.NoError(t, err)
	require.NoError(t, rep.Err(), report.String(rep))
	t.Log("\n" + report.String(rep))
}
