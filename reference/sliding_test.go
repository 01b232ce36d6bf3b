package reference

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/redisenv"
)

// store is the package's one Redis (a cluster aside): every test on it
// uses keys of its own.
var store *redisenv.Redis

// cluster is the package's one Redis Cluster, started by the first test
// that asks for it (SharedCluster).
var cluster struct {
	once sync.Once
	c    *redisenv.Cluster
	err  error
}

func TestMain(m *testing.M) {
	// The parallel tests grade in real time: they mostly wait.
	testtier.Parallelism(3)
	r, err := redisenv.Obtain(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "reference tests:", err)
		os.Exit(1)
	}
	store = r
	code := m.Run()
	r.Close()
	if cluster.c != nil {
		cluster.c.Close()
	}
	os.Exit(code)
}

// SharedRedis is the package's one Redis, for the tests outside the
// package (reference_test); it lives as long as the test binary.
func SharedRedis() *redisenv.Redis { return store }

// SharedCluster is the package's one three-master Redis Cluster, started
// by the first test that asks for it and stopped when the tests end;
// every test on it uses keys of its own.
func SharedCluster(t testing.TB) *redisenv.Cluster {
	t.Helper()
	cluster.once.Do(func() {
		bin, err := exec.LookPath("redis-server")
		if err != nil {
			cluster.err = fmt.Errorf("redis-server must be on PATH: %w", err)
			return
		}
		cluster.c, cluster.err = redisenv.StartCluster(context.Background(), bin, 3)
	})
	require.NoError(t, cluster.err)
	return cluster.c
}

// prefix is a key prefix unique to the test, cleaned up after it.
func prefix(t testing.TB) string {
	p := fmt.Sprintf("rlc-ref:%s:%d:", t.Name(), time.Now().UnixNano())
	t.Cleanup(func() {
		ctx := context.Background()
		iter := store.Client.Scan(ctx, 0, p+"*", 1000).Iterator()
		for iter.Next(ctx) {
			store.Client.Del(ctx, iter.Val())
		}
	})
	return p
}

func newFake(t testing.TB, n int, w time.Duration) (*Limiter, *fakeclock.Fake) {
	clk := fakeclock.New(time.UnixMilli(1_767_225_600_000))
	l, err := New(store.Client, Options{MaxRequests: n, Window: w, Prefix: prefix(t), Clock: clk})
	require.NoError(t, err)
	return l, clk
}

func TestSameMillisecondRequestsAreUniqueMembers(t *testing.T) {
	ctx := context.Background()
	l, _ := newFake(t, 100, time.Minute)
	for range 50 {
		ok, err := l.AllowRequest(ctx, "u")
		require.NoError(t, err)
		require.True(t, ok)
	}
	n, err := store.Client.ZCard(ctx, l.Key("u")).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 50, n, "every request in one millisecond is its own entry")
	members, _ := store.Client.ZRange(ctx, l.Key("u"), 0, 2).Result()
	assert.Equal(t, []string{"1767225600000", "1767225600000-1", "1767225600000-10"}, members)
}

func TestMemoryPerEntry(t *testing.T) {
	ctx := context.Background()
	l, clk := newFake(t, 1000, time.Hour)
	usage := func() int64 {
		n, err := store.Client.MemoryUsage(ctx, l.Key("u"), 0).Result()
		require.NoError(t, err)
		return n
	}
	measure := func(k int) int64 {
		for range k {
			_, err := l.AllowRequest(ctx, "u")
			require.NoError(t, err)
			clk.Advance(time.Millisecond)
		}
		return usage()
	}
	small := measure(1)
	at100 := measure(99)
	at1000 := measure(900)
	t.Logf("MEMORY USAGE of one user's key: 1 entry %d B, 100 entries %d B (%.1f B/entry), 1000 entries %d B (%.1f B/entry)",
		small, at100, float64(at100-small)/99, at1000, float64(at1000-at100)/900)
	assert.Less(t, float64(at100-small)/99, 64.0, "a compact listpack entry should cost well under 64 bytes")
}

func TestEveryWriteSetsATTL(t *testing.T) {
	ctx := context.Background()
	l, _ := newFake(t, 2, time.Minute)
	l.AllowRequest(ctx, "u")
	ttl, err := store.Client.PTTL(ctx, l.Key("u")).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, 59*time.Second)
	assert.LessOrEqual(t, ttl, time.Minute)
	require.NoError(t, store.Client.PExpire(ctx, l.Key("u"), time.Second).Err())
	l.AllowRequest(ctx, "u")
	ttl, _ = store.Client.PTTL(ctx, l.Key("u")).Result()
	assert.Greater(t, ttl, 59*time.Second, "each allowed request renews the TTL for its own life")
}

func TestKeysAreHashTagged(t *testing.T) {
	l, err := New(store.Client, Options{MaxRequests: 1, Window: time.Second, Prefix: "p:"})
	require.NoError(t, err)
	assert.Equal(t, "p:{user 1}", l.Key("user 1"))
	d, err := New(store.Client, Options{MaxRequests: 1, Window: time.Second})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(d.Key("u"), DefaultPrefix))
}

func TestServerTimeIsTheClockWhenNoneIsGiven(t *testing.T) {
	ctx := context.Background()
	l, err := New(store.Client, Options{MaxRequests: 2, Window: time.Hour, Prefix: prefix(t)})
	require.NoError(t, err)
	before := time.Now()
	for _, want := range []bool{true, true, false} {
		ok, err := l.AllowRequest(ctx, "u")
		require.NoError(t, err)
		assert.Equal(t, want, ok)
	}
	after := time.Now()
	entries, err := store.Client.ZRangeWithScores(ctx, l.Key("u"), 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, entries, 2)
	for _, e := range entries {
		at := time.UnixMilli(int64(e.Score))
		assert.WithinRange(t, at, before.Add(-2*time.Second), after.Add(2*time.Second), "scores come from the server's TIME")
	}
}

func TestDecisionMatchesTheModel(t *testing.T) {
	ctx := context.Background()
	l, clk := newFake(t, 3, 10*time.Second)
	m, _ := model.Variant{}.New(3, 10*time.Second)
	check := func(step string) {
		now := clk.Now()
		wantOK, _ := m.Allow(now, "u")
		d, err := l.Decide(ctx, "u")
		require.NoError(t, err)
		wantRemaining, _ := m.Remaining(now, "u")
		assert.Equal(t, wantOK, d.Allowed, step)
		assert.Equal(t, wantRemaining, d.Remaining, step)
		assert.Equal(t, m.RetryAfter(now, "u"), d.RetryAfter, step)
		assert.Equal(t, m.Limit(), d.Limit, step)
		assert.Equal(t, m.Window(), d.Window, step)
		wantReset := time.Duration(0)
		// The sliding log's model lists its entries (a method of its own).
		if log := m.(interface {
			Log(time.Time, string) []time.Time
		}).Log(now, "u"); len(log) > 0 {
			wantReset = log[0].Add(m.Window()).Sub(now)
		}
		assert.Equal(t, wantReset, d.Reset, step+": until the oldest entry that counts leaves")
	}
	for i := range 5 {
		check(fmt.Sprintf("request %d", i))
		clk.Advance(time.Second)
	}
	require.NoError(t, l.Configure(ctx, 1, 10*time.Second))
	m.Configure(clk.Now(), 1, 10*time.Second)
	check("after lowering the limit")
	clk.Advance(8 * time.Second)
	check("after 8s more")
}

func TestInvalidInput(t *testing.T) {
	ctx := context.Background()
	_, err := New(nil, Options{MaxRequests: 1, Window: time.Second})
	assert.Error(t, err)
	_, err = New(store.Client, Options{MaxRequests: 0, Window: time.Second})
	assert.ErrorIs(t, err, contract.ErrInvalidConfig)
	_, err = New(store.Client, Options{MaxRequests: 1, Window: time.Microsecond})
	assert.ErrorIs(t, err, contract.ErrInvalidConfig)
	_, err = New(store.Client, Options{MaxRequests: contract.MaxLimit + 1, Window: time.Second})
	assert.ErrorIs(t, err, contract.ErrInvalidConfig)
	for _, prefix := range []string{"a:{t}:", "a}", "{"} {
		_, err = New(store.Client, Options{MaxRequests: 1, Window: time.Second, Prefix: prefix})
		assert.ErrorContains(t, err, "brace", "prefixes that nest could share keys: %q", prefix)
	}

	l, _ := newFake(t, 1, time.Minute)
	_, err = l.AllowRequest(ctx, "")
	assert.ErrorIs(t, err, contract.ErrInvalidUserID)
	_, err = l.GetRemainingRequests(ctx, "")
	assert.ErrorIs(t, err, contract.ErrInvalidUserID)
	assert.ErrorIs(t, l.Reset(ctx, ""), contract.ErrInvalidUserID)
	assert.ErrorIs(t, l.Configure(ctx, 0, time.Minute), contract.ErrInvalidConfig)
	assert.ErrorIs(t, l.Configure(ctx, 5, 0), contract.ErrInvalidConfig)
	ok, _ := l.AllowRequest(ctx, "u")
	assert.True(t, ok)
	ok, _ = l.AllowRequest(ctx, "u")
	assert.False(t, ok, "the invalid Configure calls left the limit at 1")
}

func TestScriptIsReloadedAfterScriptFlush(t *testing.T) {
	ctx := context.Background()
	l, _ := newFake(t, 1, time.Minute)
	require.NoError(t, store.Client.ScriptFlush(ctx).Err())
	ok, err := l.AllowRequest(ctx, "u")
	require.NoError(t, err, "EVALSHA falls back to EVAL on NOSCRIPT")
	assert.True(t, ok)
}

func TestStoreFailuresWrapErrStore(t *testing.T) {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: store.Addr, MaxRetries: -1})
	l, err := New(client, Options{MaxRequests: 1, Window: time.Minute, Prefix: prefix(t)})
	require.NoError(t, err)
	client.Close()
	ok, err := l.AllowRequest(ctx, "u")
	assert.False(t, ok, "fail closed")
	assert.True(t, errors.Is(err, contract.ErrStore), "got %v", err)
	_, err = l.GetRemainingRequests(ctx, "u")
	assert.ErrorIs(t, err, contract.ErrStore)
	assert.ErrorIs(t, l.Reset(ctx, "u"), contract.ErrStore)
}

// TestCallsEndWithTheirContextOnAFrozenServer: a go-redis client without
// ContextTimeoutEnabled waits for its own read timeout when the server does
// not answer; the limiter must return when the caller's context ends.
func TestCallsEndWithTheirContextOnAFrozenServer(t *testing.T) {
	srv, err := redisenv.StartServer(context.Background(), serverBinary(t))
	require.NoError(t, err)
	defer srv.Close()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	defer client.Close()
	l, err := New(client, Options{MaxRequests: 1, Window: time.Minute, Timeout: -1})
	require.NoError(t, err)
	_, err = l.AllowRequest(context.Background(), "warm-up")
	require.NoError(t, err)

	require.NoError(t, srv.Pause())
	defer srv.Resume()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := l.AllowRequest(ctx, "u"); done <- err }()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, contract.ErrStore)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(10 * time.Second):
		t.Fatal("AllowRequest outlived its 200ms context by 10s on a frozen server")
	}
}

func serverBinary(t *testing.T) string {
	bin, err := exec.LookPath("redis-server")
	require.NoError(t, err, "redis-server must be on PATH")
	return bin
}
