package reference

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/model"
)

// The configuration of the weighted tables: N = 4 per W = 60s (T = W/N =
// 15s), the clock starting on a window boundary of the epoch.
const (
	costN = 4
	costW = 60_000 // ms
)

var costStart = time.UnixMilli(1_767_225_600_000)

// costVariant is one script the weighted tables run: the profile it
// implements, and what of it changes the expected answers.
type costVariant struct {
	spec    string // a model.Variant; "sliding-log" and "compact" for the logs
	family  string // log, fixed, counter, gcra, bucket
	denied  bool   // counts denied requests
	atMost  bool   // sliding-counter admit=at-most
	compact bool   // NewCompact
}

var costVariants = []costVariant{
	{spec: "sliding-log", family: "log"},
	{spec: "sliding-log", family: "log", compact: true},
	{spec: "fixed-window:align=epoch", family: "fixed"},
	{spec: "fixed-window:align=first-hit,count-denied=true,query=read", family: "fixed", denied: true},
	{spec: "fixed-window:align=first-grid,query=write", family: "fixed"},
	{spec: "sliding-counter", family: "counter"},
	{spec: "sliding-counter:admit=at-most", family: "counter", atMost: true},
	{spec: "sliding-counter:align=first-grid,count-denied=true", family: "counter", denied: true},
	{spec: "gcra", family: "gcra"},
	{spec: "token-bucket", family: "bucket"},
	{spec: "token-bucket:refill=interval", family: "bucket"},
	{spec: "token-bucket:refill=interval,expire=idle,query=write", family: "bucket"},
}

func (v costVariant) String() string {
	if v.compact {
		return "compact"
	}
	return v.spec
}

// newCostLimiter is v's Redis implementation on a fake clock at costStart,
// with its key prefix.
func newCostLimiter(t *testing.T, v costVariant, n int) (contract.CostLimiter, *fakeclock.Fake, string) {
	t.Helper()
	clk := fakeclock.New(costStart)
	opts := Options{MaxRequests: n, Window: costW * time.Millisecond, Prefix: prefix(t), Clock: clk}
	var lim contract.RateLimiterContract
	var err error
	if v.compact {
		lim, err = NewCompact(store.Client, opts)
	} else {
		lim, err = NewProfile(store.Client, model.MustVariant(v.spec), opts)
	}
	require.NoError(t, err)
	cl, ok := lim.(contract.CostLimiter)
	require.True(t, ok, "%s's limiter (%T) is a contract.CostLimiter", v, lim)
	return cl, clk, opts.Prefix
}

// costStep is one call of a weighted table at ms after costStart: a
// request of cost n (want 1: allowed, 0: refused), or with n < 0 a query
// of what remains (want).
type costStep struct {
	at   int64
	n    int
	want int
}

func req(at int64, n int, ok bool) costStep {
	if ok {
		return costStep{at, n, 1}
	}
	return costStep{at, n, 0}
}

func rem(at int64, want int) costStep { return costStep{at, -1, want} }

// costCases are the weighted tables, N = 4: each gives v's steps.
var costCases = []struct {
	name  string
	steps func(v costVariant) []costStep
}{
	{"all or nothing at the limit", func(v costVariant) []costStep {
		if v.denied { // the refused 2 counted: 3 + 2 > N
			return []costStep{req(0, 3, true), req(0, 2, false), rem(0, 0), req(0, 1, false)}
		}
		return []costStep{req(0, 3, true), req(0, 2, false), rem(0, 1), req(0, 1, true), rem(0, 0), req(0, 1, false)}
	}},
	{"n = N on a fresh user", func(costVariant) []costStep {
		return []costStep{req(0, costN, true), rem(0, 0), req(0, 1, false)}
	}},
	{"n = N+1 is refused and counts nothing", func(v costVariant) []costStep {
		if v.denied { // INCRBY n before the check
			return []costStep{req(0, costN+1, false), rem(0, 0), req(0, 1, false)}
		}
		return []costStep{req(0, costN+1, false), rem(0, costN), req(0, costN, true)}
	}},
	{"n = 0 consumes nothing", func(costVariant) []costStep {
		return []costStep{req(0, 0, true), rem(0, costN), req(0, costN, true), req(0, 0, true), rem(0, 0), req(1, 0, true), req(1, 1, false)}
	}},
	{"refused n, then n-1 fits", func(v costVariant) []costStep {
		if v.denied { // the refused 3 counted: 2 + 3 > N
			return []costStep{req(0, 2, true), req(0, 3, false), rem(0, 0), req(0, 2, false)}
		}
		return []costStep{req(0, 2, true), req(0, 3, false), rem(0, 2), req(0, 2, true), rem(0, 0)}
	}},
	{"weighted requests in one millisecond all count", func(v costVariant) []costStep {
		s := []costStep{req(5, 1, true), req(5, 2, true), rem(5, 1)}
		if !v.denied {
			s = append(s, req(5, 2, false))
		}
		return append(s, req(5, 1, true), rem(5, 0), req(5, 1, false))
	}},
	{"a weighted request leaves exactly at s+W", func(v costVariant) []costStep {
		if v.family == "counter" {
			// A window's count weighs (W-e)/W in the next one: half of
			// [0, W)'s at W + W/2; [W, 2W)'s 2 weigh 2/W at 3W-1, which
			// below N lets 4 more through (estimate + 3 < N) and at-most
			// does not (estimate + 4 > N), and nothing from 3W on.
			mid := int64(costW + costW/2)
			s := []costStep{req(0, costN, true), rem(mid, 2)}
			if !v.denied {
				s = append(s, req(mid, 3, false))
			}
			s = append(s, req(mid, 2, true), rem(mid, 0), req(3*costW-1, costN, !v.atMost))
			if v.atMost {
				s = append(s, req(3*costW, costN, true))
			}
			return s
		}
		return []costStep{req(0, costN, true), req(costW-1, costN, false), req(costW, costN, true), rem(costW, 0)}
	}},
}

// TestAllowRequestNTables runs every weighted table on every script
// (sliding.lua, compact.lua and each profile's), on a fake clock.
func TestAllowRequestNTables(t *testing.T) {
	ctx := context.Background()
	for _, v := range costVariants {
		for _, c := range costCases {
			t.Run(v.String()+"/"+c.name, func(t *testing.T) {
				lim, clk, _ := newCostLimiter(t, v, costN)
				for i, s := range c.steps(v) {
					clk.Set(costStart.Add(time.Duration(s.at) * time.Millisecond))
					if s.n < 0 {
						got, err := lim.GetRemainingRequests(ctx, "u")
						require.NoError(t, err)
						assert.Equal(t, s.want, got, "step %d: remaining at +%dms", i, s.at)
						continue
					}
					ok, err := lim.AllowRequestN(ctx, "u", s.n)
					require.NoError(t, err)
					assert.Equal(t, s.want == 1, ok, "step %d: AllowRequestN(%d) at +%dms", i, s.n, s.at)
				}
			})
		}
	}
}

// A cost of 0 is allowed and writes nothing: a user's state stays as it
// was. Where a query writes (query=write), a cost of 0 is the query: it
// saves the state as a look does, which TestAllowRequestNMatchesTheModel
// compares with the model.
func TestAllowRequestNZeroWritesNothing(t *testing.T) {
	ctx := context.Background()
	for _, v := range costVariants {
		if strings.Contains(v.spec, "query=write") {
			continue
		}
		t.Run(v.String(), func(t *testing.T) {
			lim, clk, p := newCostLimiter(t, v, costN)
			key := p + "{u}"
			ok, err := lim.AllowRequestN(ctx, "u", 0)
			require.NoError(t, err)
			assert.True(t, ok, "a cost of 0 is allowed")
			assert.Zero(t, store.Client.Exists(ctx, key).Val(), "a cost of 0 wrote the key of a user without state")

			ok, err = lim.AllowRequestN(ctx, "u", costN)
			require.NoError(t, err)
			require.True(t, ok)
			before := store.Client.Dump(ctx, key).Val()
			// A TTL no script writes: a cost of 0 must leave it.
			require.True(t, store.Client.PExpire(ctx, key, time.Hour).Val())
			clk.Advance(time.Second)
			ok, err = lim.AllowRequestN(ctx, "u", 0)
			require.NoError(t, err)
			assert.True(t, ok)
			assert.Equal(t, before, store.Client.Dump(ctx, key).Val(), "a cost of 0 changed the user's state")
			assert.Greater(t, store.Client.PTTL(ctx, key).Val(), 59*time.Minute, "a cost of 0 wrote the key's TTL")
		})
	}
}

// A weighted request's key lives as long as what it counts: a TTL written
// for one unit (a quarter of the window here) would let the store forget
// a state that still counts.
func TestAllowRequestNKeyOutlivesWhatItCounts(t *testing.T) {
	ctx := context.Background()
	for _, v := range costVariants {
		t.Run(v.String(), func(t *testing.T) {
			lim, _, p := newCostLimiter(t, v, costN)
			ok, err := lim.AllowRequestN(ctx, "u", costN)
			require.NoError(t, err)
			require.True(t, ok)
			// Every profile's state counts the N units for at least W from
			// now, and its key lives a window more (the logs' do not); a
			// quarter of W leaves time for the calls on a loaded machine.
			want := costW * time.Millisecond * 3 / 4
			if v.family != "log" {
				want += costW * time.Millisecond
			}
			ttl := store.Client.PTTL(ctx, p+"{u}").Val()
			assert.Greater(t, ttl, want, "the key's TTL after a request of cost N")
		})
	}
}

func TestAllowRequestNRefusesANegativeCost(t *testing.T) {
	ctx := context.Background()
	for _, v := range costVariants {
		lim, _, p := newCostLimiter(t, v, costN)
		ok, err := lim.AllowRequestN(ctx, "u", -1)
		require.ErrorIs(t, err, contract.ErrInvalidCost, v.String())
		assert.Contains(t, err.Error(), "reference", v.String())
		assert.Contains(t, err.Error(), "AllowRequestN: ", v.String())
		assert.False(t, ok)
		assert.Zero(t, store.Client.Exists(ctx, p+"{u}").Val(), "a negative cost never reaches Redis")
		_, err = lim.AllowRequestN(ctx, "", 1)
		assert.ErrorIs(t, err, contract.ErrInvalidUserID, v.String())
	}
}

// The ZSET log names the n entries of a weighted request each its own
// member, after those already at the same millisecond; a cost above what
// one call of Lua's unpack takes (about 8000) is logged in several.
func TestAllowRequestNMembersAreUnique(t *testing.T) {
	ctx := context.Background()
	l, clk := newFake(t, 20_000, time.Minute)
	for _, n := range []int{1, 2, 10_000} {
		ok, err := l.AllowRequestN(ctx, "u", n)
		require.NoError(t, err)
		require.True(t, ok, "cost %d", n)
	}
	members := store.Client.ZRange(ctx, l.Key("u"), 0, -1).Val()
	require.Len(t, members, 10_003, "every unit of every request is its own entry")
	now := fmt.Sprint(clk.Now().UnixMilli())
	seen := map[string]bool{}
	for _, m := range members {
		assert.True(t, m == now || strings.HasPrefix(m, now+"-"), m)
		seen[m] = true
	}
	assert.Len(t, seen, 10_003)
	assert.True(t, seen[now] && seen[now+"-1"] && seen[now+"-2"] && seen[now+"-10002"], "members now, now-1 .. now-10002")
	rem, err := l.GetRemainingRequests(ctx, "u")
	require.NoError(t, err)
	assert.Equal(t, 9997, rem)
}

// The compact LIST holds n entries of a weighted request, in time order
// even when it is made earlier than the newest entry; a cost above what
// one call of Lua's unpack takes (about 8000) is pushed in several.
func TestCompactAllowRequestNKeepsOrder(t *testing.T) {
	ctx := context.Background()
	l, clk := newCompactFake(t, 20_000, time.Minute)
	start := clk.Now().UnixMilli()
	clk.Advance(10 * time.Millisecond)
	ok, err := l.AllowRequestN(ctx, "u", 2)
	require.NoError(t, err)
	require.True(t, ok)
	clk.Set(clk.Now().Add(-5 * time.Millisecond)) // an instance whose clock is behind
	ok, err = l.AllowRequestN(ctx, "u", 10_000)
	require.NoError(t, err)
	require.True(t, ok)
	entries := logOf(t, l, "u")
	require.Len(t, entries, 10_002)
	for i, e := range entries {
		want := start + 5
		if i >= 10_000 {
			want = start + 10
		}
		require.Equal(t, want, e, "entry %d", i)
	}
	ok, err = l.AllowRequestN(ctx, "u", 9999)
	require.NoError(t, err)
	assert.False(t, ok, "10,002 + 9,999 > 20,000")
	assert.Len(t, logOf(t, l, "u"), 10_002, "a refused request pushes nothing")
}
