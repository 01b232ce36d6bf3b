package redisenv

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/internal/testtier"
)

// Both forms of a Sentinel address read as go-redis' FailoverOptions;
// a plain redis:// URL is not one, and a malformed one says why.
func TestParseSentinelURL(t *testing.T) {
	o, err := ParseSentinelURL("redis+sentinel://alice:s3cret@h1,h2:26380/mymaster/2")
	require.NoError(t, err)
	assert.Equal(t, []string{"h1:26379", "h2:26380"}, o.SentinelAddrs)
	assert.Equal(t, "mymaster", o.MasterName)
	assert.Equal(t, 2, o.DB)
	assert.Equal(t, "alice", o.Username)
	assert.Equal(t, "s3cret", o.Password)
	assert.Equal(t, "s3cret", o.SentinelPassword)

	o, err = ParseSentinelURL("redis://h1:26379?master_name=mm&addr=h2:26379")
	require.NoError(t, err)
	assert.Equal(t, []string{"h1:26379", "h2:26379"}, o.SentinelAddrs)
	assert.Equal(t, "mm", o.MasterName)

	for _, u := range []string{"redis://localhost:6379", "redis://localhost:6379/0", "localhost:6379", "h1:6379,h2:6379"} {
		assert.False(t, IsSentinelURL(u), u)
	}
	for _, u := range []string{"redis+sentinel://h/mm", "redis-sentinel://h/mm", "redis://h:26379?master_name=mm"} {
		assert.True(t, IsSentinelURL(u), u)
	}
	for _, bad := range []string{"redis+sentinel://h", "redis+sentinel://h/mm/x", "redis+sentinel://h/mm/0/1", "redis+sentinel://h,/mm", "redis+sentinel://h/mm?db=1", "redis://h:26379?master_name="} {
		_, err := ParseSentinelURL(bad)
		assert.Error(t, err, bad)
	}
}

// FromURL reaches the master through a Sentinel, and its client follows
// a failover: once the Sentinel has promoted the replica, writes go to it.
func TestFromSentinelURLFollowsAFailover(t *testing.T) {
	testtier.SkipShort(t, "starts a primary, a replica and a Sentinel, and fails over")
	ctx := context.Background()
	g, err := StartSentinelGroup(ctx, redisServer(t), "rlc-test")
	require.NoError(t, err)
	defer g.Close()
	r, err := FromURL(ctx, g.URL())
	require.NoError(t, err)
	defer r.Close()
	assert.Contains(t, r.Addr, `master "rlc-test" of the Sentinels at `+g.SentinelAddr())
	require.NoError(t, r.Client.Set(ctx, "k", "before", 0).Err())

	require.NoError(t, g.Failover(ctx))
	master, err := g.MasterAddr(ctx)
	require.NoError(t, err)
	assert.Equal(t, g.Replica.Addr(), master, "the replica was promoted")
	// The client finds the new master when its connection to the old one
	// fails (the demoted primary refuses writes: READONLY).
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if r.Client.Set(ctx, "k", "after", 0).Err() != nil {
			return false
		}
		info, err := r.Client.Info(ctx, "server").Result()
		_, port, _ := net.SplitHostPort(g.Replica.Addr())
		return err == nil && containsLine(info, "tcp_port:"+port)
	}, 30*time.Second, 50*time.Millisecond, "writes reach the promoted replica")
}

// containsLine reports whether text (an INFO answer) has line.
func containsLine(text, line string) bool {
	for l := range strings.Lines(text) {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}
