package reference

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/redisenv"
)

// batchIDs holds repeated users, an invalid id, and ids whose keys fall in
// different cluster slots.
var batchIDs = []string{"a", "b", "a", "a", "", "c", "b", "user 4", "b", "a", "c", "user 5"}

// checkBatchIsSequential checks that AllowRequests(ids) answers what the
// model answers for AllowRequest on each id in order, twice (the second
// batch sees the first's entries), and that the key of every user holds
// what AllowRequest one by one leaves under another prefix.
func checkBatchIsSequential(t *testing.T, client redis.UniversalClient, prefixOf func(string) string) {
	checkBatchOf(t, New, client, prefixOf)
}

// checkBatchOf is checkBatchIsSequential for the limiters newLimiter makes
// (New or NewCompact).
func checkBatchOf(t *testing.T, newLimiter func(redis.UniversalClient, Options) (*Limiter, error), client redis.UniversalClient, prefixOf func(string) string) {
	ctx := context.Background()
	clk := fakeclock.New(time.UnixMilli(1_767_225_600_000))
	batch, err := newLimiter(client, Options{MaxRequests: 2, Window: time.Minute, Prefix: prefixOf("batch"), Clock: clk})
	require.NoError(t, err)
	single, err := newLimiter(client, Options{MaxRequests: 2, Window: time.Minute, Prefix: prefixOf("single"), Clock: clk})
	require.NoError(t, err)
	m, _ := model.Variant{}.New(2, time.Minute)
	for round := range 2 {
		allowed, err := batch.AllowRequests(ctx, batchIDs)
		require.Len(t, allowed, len(batchIDs))
		assert.ErrorIs(t, err, contract.ErrInvalidUserID)
		assert.NotErrorIs(t, err, contract.ErrStore)
		assert.ErrorContains(t, err, "userIDs[4]")
		for i, id := range batchIDs {
			want, wantErr := m.Allow(clk.Now(), id)
			if id == "" {
				require.Error(t, wantErr)
				assert.False(t, allowed[i], "an invalid id is denied")
				continue
			}
			assert.Equal(t, want, allowed[i], "round %d: AllowRequests(...)[%d] (%q)", round, i, id)
			ok, err := single.AllowRequest(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, ok, allowed[i], "round %d: AllowRequest(%q), one by one", round, id)
		}
		clk.Advance(30 * time.Second)
	}
	for _, id := range []string{"a", "b", "c", "user 4", "user 5"} {
		assert.Equal(t, dumpLog(t, client, single.Key(id)), dumpLog(t, client, batch.Key(id)), "the log of %q", id)
	}
}

// dumpLog is the log under key, a ZSET's members and scores or a LIST's
// entries, as text.
func dumpLog(t *testing.T, client redis.UniversalClient, key string) string {
	ctx := context.Background()
	typ, err := client.Type(ctx, key).Result()
	require.NoError(t, err)
	if typ == "list" {
		entries, err := client.LRange(ctx, key, 0, -1).Result()
		require.NoError(t, err)
		return fmt.Sprint("list ", entries)
	}
	members, err := client.ZRangeWithScores(ctx, key, 0, -1).Result()
	require.NoError(t, err)
	return fmt.Sprint(typ, " ", members)
}

func TestAllowRequestsIsAllowRequestInOrder(t *testing.T) {
	p := prefix(t)
	checkBatchIsSequential(t, store.Client, func(s string) string { return p + s + ":" })
	checkBatchOf(t, NewCompact, store.Client, func(s string) string { return p + "compact-" + s + ":" })
}

func TestAllowRequestsOnACluster(t *testing.T) {
	ctx := context.Background()
	client := SharedCluster(t).Client()
	defer client.Close()

	masters := map[string]bool{}
	for _, id := range batchIDs {
		node, err := client.MasterForKey(ctx, "batch:{"+id+"}")
		require.NoError(t, err)
		masters[node.Options().Addr] = true
	}
	require.Len(t, masters, 3, "the ids' keys fall on every master")

	checkBatchIsSequential(t, client, func(s string) string { return s + ":" })

	t.Run("NOSCRIPT", func(t *testing.T) {
		require.NoError(t, client.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			return m.ScriptFlush(ctx).Err()
		}))
		l, err := New(client, Options{MaxRequests: 1, Window: time.Minute, Prefix: "noscript:"})
		require.NoError(t, err)
		allowed, err := l.AllowRequests(ctx, []string{"a", "b", "c", "user 4", "a"})
		require.NoError(t, err, "the script is loaded on every master and the refused requests sent again")
		assert.Equal(t, []bool{true, true, true, true, false}, allowed)
	})

	t.Run("compact", func(t *testing.T) {
		checkBatchOf(t, NewCompact, client, func(s string) string { return "compact-" + s + ":" })
		require.NoError(t, client.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			return m.ScriptFlush(ctx).Err()
		}))
		l, err := NewCompact(client, Options{MaxRequests: 1, Window: time.Minute, Prefix: "compact-noscript:"})
		require.NoError(t, err)
		allowed, err := l.AllowRequests(ctx, []string{"a", "b", "c", "user 4", "a"})
		require.NoError(t, err, "the compact script is loaded on every master and the refused requests sent again")
		assert.Equal(t, []bool{true, true, true, true, false}, allowed)
		assert.Equal(t, "list", client.Type(ctx, l.Key("a")).Val())
	})
}

func TestAllowRequestsReloadsTheScript(t *testing.T) {
	ctx := context.Background()
	l, _ := newFake(t, 1, time.Minute)
	require.NoError(t, store.Client.ScriptFlush(ctx).Err())
	allowed, err := l.AllowRequests(ctx, []string{"u", "v", "u"})
	require.NoError(t, err, "NOSCRIPT: load once, send again")
	assert.Equal(t, []bool{true, true, false}, allowed)
	exists, err := store.Client.ScriptExists(ctx, sliding.Hash()).Result()
	require.NoError(t, err)
	assert.Equal(t, []bool{true}, exists)
}

func TestAllowRequestsOnARing(t *testing.T) {
	ctx := context.Background()
	other, err := redisenv.StartServer(ctx, serverBinary(t))
	require.NoError(t, err)
	defer other.Close()
	ring := redis.NewRing(&redis.RingOptions{
		Addrs:                 map[string]string{"one": store.Addr, "two": other.Addr()},
		ContextTimeoutEnabled: true,
	})
	defer ring.Close()
	require.NoError(t, ring.ForEachShard(ctx, func(ctx context.Context, s *redis.Client) error { return s.ScriptFlush(ctx).Err() }))
	l, err := New(ring, Options{MaxRequests: 1, Window: time.Minute, Prefix: prefix(t)})
	require.NoError(t, err)
	ids := make([]string, 20)
	for i := range ids {
		ids[i] = fmt.Sprint("u", i%10)
	}
	allowed, err := l.AllowRequests(ctx, ids)
	require.NoError(t, err, "the script is loaded on every shard")
	for i := range ids {
		assert.Equal(t, i < 10, allowed[i], "ids[%d]", i)
	}
}

func TestAllowRequestsEdges(t *testing.T) {
	ctx := context.Background()
	l, _ := newFake(t, 1, time.Minute)
	allowed, err := l.AllowRequests(ctx, nil)
	assert.NoError(t, err)
	assert.Empty(t, allowed)

	allowed, err = l.AllowRequests(ctx, []string{"", ""})
	assert.Equal(t, []bool{false, false}, allowed)
	assert.ErrorIs(t, err, contract.ErrInvalidUserID)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	allowed, err = l.AllowRequests(cancelled, []string{"u"})
	assert.Equal(t, []bool{false}, allowed)
	assert.ErrorIs(t, err, contract.ErrStore)
	assert.ErrorIs(t, err, context.Canceled)
	ok, err := l.AllowRequest(ctx, "u")
	require.NoError(t, err)
	assert.True(t, ok, "the cancelled batch logged nothing")

	client := redis.NewClient(&redis.Options{Addr: store.Addr, MaxRetries: -1})
	closed, err := New(client, Options{MaxRequests: 1, Window: time.Minute, Prefix: prefix(t)})
	require.NoError(t, err)
	client.Close()
	allowed, err = closed.AllowRequests(ctx, []string{"u", "v"})
	assert.Equal(t, []bool{false, false}, allowed, "fail closed")
	assert.ErrorIs(t, err, contract.ErrStore)
}
