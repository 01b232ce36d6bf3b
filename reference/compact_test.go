package reference

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/model"
)

func newCompactFake(t testing.TB, n int, w time.Duration) (*Limiter, *fakeclock.Fake) {
	clk := fakeclock.New(time.UnixMilli(1_767_225_600_000))
	l, err := NewCompact(store.Client, Options{MaxRequests: n, Window: w, Prefix: prefix(t), Clock: clk})
	require.NoError(t, err)
	return l, clk
}

// logOf is the compact log of user: its entries in unix ms, head first.
func logOf(t *testing.T, l *Limiter, user string) []int64 {
	t.Helper()
	raw, err := store.Client.LRange(context.Background(), l.Key(user), 0, -1).Result()
	require.NoError(t, err)
	out := make([]int64, len(raw))
	for i, s := range raw {
		out[i], err = strconv.ParseInt(s, 10, 64)
		require.NoError(t, err, "entries are integers: %q", s)
	}
	return out
}

func TestCompactKeepsSameMillisecondRequestsApart(t *testing.T) {
	ctx := context.Background()
	l, clk := newCompactFake(t, 100, time.Minute)
	for range 50 {
		ok, err := l.AllowRequest(ctx, "u")
		require.NoError(t, err)
		require.True(t, ok)
	}
	typ, err := store.Client.Type(ctx, l.Key("u")).Result()
	require.NoError(t, err)
	assert.Equal(t, "list", typ)
	entries := logOf(t, l, "u")
	require.Len(t, entries, 50, "every request in one millisecond is its own entry")
	for _, e := range entries {
		assert.Equal(t, clk.Now().UnixMilli(), e)
	}
}

// TestCompactMatchesTheModelAndTheZSET decides a random schedule (requests,
// remaining queries, time moving forward, limits lowered and raised, the
// window lowered) on the compact log, the ZSET reference and the model:
// every Decision is the same on all three.
func TestCompactMatchesTheModelAndTheZSET(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(29, 1))
	const n, w = 7, 10 * time.Second
	c, clk := newCompactFake(t, n, w)
	z, err := New(store.Client, Options{MaxRequests: n, Window: w, Prefix: prefix(t) + "zset:", Clock: clk})
	require.NoError(t, err)
	m, err := model.Variant{}.New(n, w)
	require.NoError(t, err)
	users := []string{"a", "b", "c"}
	for step := range 3000 {
		u := users[rng.IntN(len(users))]
		now := clk.Now()
		switch r := rng.IntN(100); {
		case r < 60:
			wantOK, _ := m.Allow(now, u)
			dc, err := c.Decide(ctx, u)
			require.NoError(t, err)
			dz, err := z.Decide(ctx, u)
			require.NoError(t, err)
			require.Equal(t, dz, dc, "step %d: the compact log decides as the ZSET", step)
			require.Equal(t, wantOK, dc.Allowed, "step %d", step)
			wantRemaining, _ := m.Remaining(now, u)
			require.Equal(t, wantRemaining, dc.Remaining, "step %d", step)
			require.Equal(t, m.RetryAfter(now, u), dc.RetryAfter, "step %d", step)
		case r < 70:
			got, err := c.GetRemainingRequests(ctx, u)
			require.NoError(t, err)
			want, _ := m.Remaining(now, u)
			require.Equal(t, want, got, "step %d", step)
		case r < 73:
			// Lower or raise the limit, or lower the window: both keep
			// every entry the model keeps.
			limit, window := 1+rng.IntN(2*n), m.Window()
			if rng.IntN(3) == 0 && window > time.Second {
				window -= time.Duration(1+rng.IntN(int(window/time.Millisecond)-1)) * time.Millisecond
			}
			require.NoError(t, c.Configure(ctx, limit, window))
			require.NoError(t, z.Configure(ctx, limit, window))
			require.NoError(t, m.Configure(now, limit, window))
		case r < 74:
			require.NoError(t, c.Reset(ctx, u))
			require.NoError(t, z.Reset(ctx, u))
			m.Reset(u)
		default:
			clk.Advance(time.Duration(rng.IntN(int(m.Window()/time.Millisecond)/3+1)) * time.Millisecond)
		}
	}
}

// TestCompactAfterAClockStepBack: a request made earlier than the newest
// entry is put in its place, so that the log stays in order; entries later
// than now count at once (the conservative reading), and the earlier ones
// leave first.
func TestCompactAfterAClockStepBack(t *testing.T) {
	ctx := context.Background()
	l, clk := newCompactFake(t, 4, 10*time.Second)
	start := clk.Now()
	at := func(d time.Duration) { clk.Set(start.Add(d)) }
	ms := func(d time.Duration) int64 { return start.Add(d).UnixMilli() }
	at(10 * time.Second)
	ok, err := l.AllowRequest(ctx, "u")
	require.NoError(t, err)
	require.True(t, ok)
	at(5 * time.Second)
	var allowed []bool
	for range 4 {
		ok, err := l.AllowRequest(ctx, "u")
		require.NoError(t, err)
		allowed = append(allowed, ok)
	}
	assert.Equal(t, []bool{true, true, true, false}, allowed, "the entry at +10s counts at +5s: N-1 allowed")
	assert.Equal(t, []int64{ms(5 * time.Second), ms(5 * time.Second), ms(5 * time.Second), ms(10 * time.Second)}, logOf(t, l, "u"), "in order")
	ttl, err := store.Client.PTTL(ctx, l.Key("u")).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, 14*time.Second, "the key lives as long as its newest entry, 15s from now")
	assert.LessOrEqual(t, ttl, 15*time.Second)
	d, err := l.Decide(ctx, "u")
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Equal(t, 10*time.Second, d.RetryAfter, "the oldest entry, at +5s, leaves at +15s")
	at(15 * time.Second)
	for range 3 {
		ok, err := l.AllowRequest(ctx, "u")
		require.NoError(t, err)
		assert.True(t, ok, "the entries at +5s left; the one at +10s still counts")
	}
	ok, err = l.AllowRequest(ctx, "u")
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, []int64{ms(10 * time.Second), ms(15 * time.Second), ms(15 * time.Second), ms(15 * time.Second)}, logOf(t, l, "u"))
}

// TestCompactPrunesALongPrefixAtOnce: a lowered window drops thousands of
// entries in one decision (galloping to the first that still counts), and
// exactly those.
func TestCompactPrunesALongPrefixAtOnce(t *testing.T) {
	ctx := context.Background()
	const entries = 5000
	l, clk := newCompactFake(t, 2*entries, time.Hour)
	for range entries {
		ok, err := l.AllowRequest(ctx, "u")
		require.NoError(t, err)
		require.True(t, ok)
		clk.Advance(time.Millisecond)
	}
	for _, keep := range []int{4321, 1000, 1, 0} {
		// Entries are at 0 .. entries-1 ms; now is at entries ms: a window
		// of keep+1 ms keeps the newest keep... but the one at now-W.
		require.NoError(t, l.Configure(ctx, 2*entries, time.Duration(keep+1)*time.Millisecond))
		n, err := l.GetRemainingRequests(ctx, "u")
		require.NoError(t, err)
		assert.Equal(t, 2*entries-keep, n, "a window of %dms", keep+1)
		assert.Len(t, logOf(t, l, "u"), keep)
	}
}

func TestCompactEveryWriteSetsATTL(t *testing.T) {
	ctx := context.Background()
	l, _ := newCompactFake(t, 2, time.Minute)
	_, err := l.AllowRequest(ctx, "u")
	require.NoError(t, err)
	ttl, err := store.Client.PTTL(ctx, l.Key("u")).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, 59*time.Second)
	assert.LessOrEqual(t, ttl, time.Minute)
	require.NoError(t, store.Client.PExpire(ctx, l.Key("u"), time.Second).Err())
	_, err = l.AllowRequest(ctx, "u")
	require.NoError(t, err)
	ttl, _ = store.Client.PTTL(ctx, l.Key("u")).Result()
	assert.Greater(t, ttl, 59*time.Second, "each allowed request renews the TTL for its own life")
	ok, err := l.AllowRequest(ctx, "u")
	require.NoError(t, err)
	require.False(t, ok)
	ttl, _ = store.Client.PTTL(ctx, l.Key("u")).Result()
	assert.Greater(t, ttl, 59*time.Second, "a refusal leaves the TTL alone")
}

func TestCompactServerTimeIsTheClockWhenNoneIsGiven(t *testing.T) {
	ctx := context.Background()
	l, err := NewCompact(store.Client, Options{MaxRequests: 2, Window: time.Hour, Prefix: prefix(t)})
	require.NoError(t, err)
	before := time.Now()
	for _, want := range []bool{true, true, false} {
		ok, err := l.AllowRequest(ctx, "u")
		require.NoError(t, err)
		assert.Equal(t, want, ok)
	}
	after := time.Now()
	entries := logOf(t, l, "u")
	require.Len(t, entries, 2)
	for _, e := range entries {
		assert.WithinRange(t, time.UnixMilli(e), before.Add(-2*time.Second), after.Add(2*time.Second), "entries come from the server's TIME")
	}
}

func TestCompactScriptIsReloadedAfterScriptFlush(t *testing.T) {
	ctx := context.Background()
	l, _ := newCompactFake(t, 1, time.Minute)
	require.NoError(t, store.Client.ScriptFlush(ctx).Err())
	ok, err := l.AllowRequest(ctx, "u")
	require.NoError(t, err, "EVALSHA falls back to EVAL of the compact script on NOSCRIPT")
	assert.True(t, ok)
	assert.Equal(t, "list", store.Client.Type(ctx, l.Key("u")).Val())

	require.NoError(t, store.Client.ScriptFlush(ctx).Err())
	allowed, err := l.AllowRequests(ctx, []string{"v", "w", "v"})
	require.NoError(t, err, "NOSCRIPT: load the compact script once, send again")
	assert.Equal(t, []bool{true, true, false}, allowed)
	exists, err := store.Client.ScriptExists(ctx, compact.Hash()).Result()
	require.NoError(t, err)
	assert.Equal(t, []bool{true}, exists)
	assert.Equal(t, "list", store.Client.Type(ctx, l.Key("v")).Val())
}

// TestCompactAllowRequestsIsAllowRequestInOrder is
// TestAllowRequestsIsAllowRequestInOrder for the compact log.
func TestCompactAllowRequestsIsAllowRequestInOrder(t *testing.T) {
	ctx := context.Background()
	l, _ := newCompactFake(t, 2, time.Minute)
	allowed, err := l.AllowRequests(ctx, []string{"a", "b", "a", "a", "b", "", "c"})
	assert.Error(t, err, "the empty id")
	assert.Equal(t, []bool{true, true, true, false, true, false, true}, allowed)
	for user, want := range map[string]int{"a": 0, "b": 0, "c": 1} {
		n, err := l.GetRemainingRequests(ctx, user)
		require.NoError(t, err)
		assert.Equal(t, want, n, fmt.Sprintf("user %s", user))
	}
}
