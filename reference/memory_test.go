package reference

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/redisenv"
)

// raisedListpack is the zset-max-listpack-entries the trade-off is measured
// with: every log of the tables below stays a listpack.
const raisedListpack = "16384"

// serverWith starts a redis-server of its own with extra settings, and a
// client that has ContextTimeoutEnabled.
func serverWith(tb testing.TB, extra ...string) *redis.Client {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatal("redis-server must be on PATH:", err)
	}
	srv, err := redisenv.StartServer(context.Background(), bin, extra...)
	if err != nil {
		tb.Fatal(err)
	}
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	tb.Cleanup(func() { client.Close(); srv.Close() })
	return client
}

// TestMemoryPerEntryByLogSize logs MEMORY USAGE of one user's log at 16,
// 128, 129, 1,000 and 10,000 entries (one a millisecond, as in real use),
// under Redis's default zset-max-listpack-entries (128) and raised: a
// listpack costs about 23 B an entry, a skiplist about 110. A log that grew
// past the limit stays a skiplist when it shrinks, until its key expires.
func TestMemoryPerEntryByLogSize(t *testing.T) {
	testtier.SkipShort(t, "fills logs of up to 10,000 entries")
	ctx := context.Background()
	var table strings.Builder
	fmt.Fprintf(&table, "%-38s %8s %10s %10s %12s %s\n", "zset-max-listpack-entries", "entries", "encoding", "bytes", "B/entry", "B/entry since the row above")
	for _, setting := range []string{"128 (default)", raisedListpack} {
		var client *redis.Client
		if setting == raisedListpack {
			client = serverWith(t, "--zset-max-listpack-entries", raisedListpack)
		} else {
			client = serverWith(t)
		}
		clk := fakeclock.New(time.UnixMilli(1_767_225_600_000))
		l, err := New(client, Options{MaxRequests: 20_000, Window: time.Hour, Clock: clk})
		require.NoError(t, err)
		key := l.Key("u")
		entries, last, before := 0, 0, int64(0)
		for _, n := range []int{16, 128, 129, 1000, 10_000} {
			for ; entries < n; entries++ {
				ok, err := l.AllowRequest(ctx, "u")
				require.NoError(t, err)
				require.True(t, ok)
				clk.Advance(time.Millisecond)
			}
			usage, err := client.MemoryUsage(ctx, key, 0).Result()
			require.NoError(t, err)
			enc, err := client.ObjectEncoding(ctx, key).Result()
			require.NoError(t, err)
			since := "-"
			if before > 0 {
				since = strconv.FormatFloat(float64(usage-before)/float64(n-last), 'f', 1, 64)
			}
			fmt.Fprintf(&table, "%-38s %8d %10s %10d %12.1f %s\n", setting, n, enc, usage, float64(usage)/float64(n), since)
			before, last = usage, n
			if setting != raisedListpack {
				assert.Equal(t, map[bool]string{true: "listpack", false: "skiplist"}[n <= 128], enc, "%d entries", n)
			} else {
				assert.Equal(t, "listpack", enc, "%d entries", n)
			}
		}
		if setting != raisedListpack {
			// All but 10 entries leave the window: the log shrinks, its encoding stays.
			clk.Advance(time.Hour - 11*time.Millisecond)
			n, err := l.GetRemainingRequests(ctx, "u")
			require.NoError(t, err)
			require.Equal(t, 20_000-10, n)
			enc, _ := client.ObjectEncoding(ctx, key).Result()
			usage, _ := client.MemoryUsage(ctx, key, 0).Result()
			fmt.Fprintf(&table, "%-38s %8d %10s %10d %12.1f (after shrinking from 10,000)\n", setting, 10, enc, usage, float64(usage)/10)
			assert.Equal(t, "skiplist", enc, "a log never goes back to a listpack while its key lives")
		}
	}
	t.Log("MEMORY USAGE of one user's key (SAMPLES 0):\n" + table.String())
}

// BenchmarkLongLog measures one user's decisions with a log held at 1,000
// or 10,000 entries (window W ms, one request a millisecond, limit W), as
// a skiplist (Redis's default) and as a listpack (zset-max-listpack-entries
// raised): the price of the listpack's memory. Not run by make bench.
func BenchmarkLongLog(b *testing.B) {
	for _, entries := range []int{1000, 10_000} {
		for _, enc := range []string{"skiplist", "listpack"} {
			b.Run(fmt.Sprintf("entries=%d/encoding=%s", entries, enc), func(b *testing.B) {
				var client *redis.Client
				if enc == "listpack" {
					client = serverWith(b, "--zset-max-listpack-entries", raisedListpack)
				} else {
					client = serverWith(b)
				}
				ctx := context.Background()
				clk := fakeclock.New(time.UnixMilli(1_767_225_600_000))
				l, err := New(client, Options{MaxRequests: entries, Window: time.Duration(entries) * time.Millisecond, Clock: clk})
				if err != nil {
					b.Fatal(err)
				}
				members := make([]redis.Z, entries)
				for i := range members {
					ms := clk.Now().UnixMilli() - int64(entries) + 1 + int64(i)
					members[i] = redis.Z{Score: float64(ms), Member: strconv.FormatInt(ms, 10)}
				}
				if err := client.ZAdd(ctx, l.Key("u"), members...).Err(); err != nil {
					b.Fatal(err)
				}
				if got, _ := client.ObjectEncoding(ctx, l.Key("u")).Result(); got != enc {
					b.Fatalf("the log is a %s, want a %s", got, enc)
				}
				b.ResetTimer()
				for b.Loop() {
					clk.Advance(time.Millisecond)
					ok, err := l.AllowRequest(ctx, "u")
					if err != nil || !ok {
						b.Fatal(ok, err)
					}
				}
			})
		}
	}
}

// fillLog logs count requests of user on l, one a millisecond from
// first (unix ms), through l's own script in pipelines of 1,000: the log
// the limiter itself writes, in a few round trips.
func fillLog(tb testing.TB, l *Limiter, user string, first int64, count int) {
	tb.Helper()
	ctx := context.Background()
	cfg := l.cfg.Load()
	for done := 0; done < count; {
		n := min(1000, count-done)
		calls := make([][]any, n)
		for i := range calls {
			calls[i] = l.scriptArgs(cfg, user, strconv.FormatInt(first+int64(done+i), 10), true, false)
		}
		cmds, err := evalPipelined(ctx, l.client, pipelined{calls, l.log})
		if err != nil {
			tb.Fatal(err)
		}
		for _, cmd := range cmds {
			if vals, err := cmd.Slice(); err != nil || len(vals) == 0 || vals[0] != int64(1) {
				tb.Fatalf("filling %s's log: %v %v", user, vals, err)
			}
		}
		done += n
	}
}

// TestMemoryCompactVsZSET logs MEMORY USAGE of one user's log of N = 100,
// 1,000, 10,000 and 100,000 requests (one a millisecond) as the reference's
// ZSET (Redis's defaults) and as the compact log's LIST (NewCompact), and,
// for comparison only, a LIST of the same instants as offsets from a base
// an hour older (what a denser compact log would store; not implemented:
// docs/performance.md says why). The compact log must take at most 12 B a
// logged request from N = 1,000 on. make bench prints the table.
func TestMemoryCompactVsZSET(t *testing.T) {
	testtier.SkipShort(t, "fills logs of up to 100,000 entries")
	ctx := context.Background()
	client := serverWith(t)
	const base = int64(1_767_225_600_000)
	var table strings.Builder
	fmt.Fprintf(&table, "%9s %14s %8s %14s %8s %8s %16s %8s\n", "N", "ZSET bytes", "B/req", "LIST bytes", "B/req", "ZSET/LIST", "offsets bytes", "B/req")
	for _, n := range []int{100, 1000, 10_000, 100_000} {
		opts := Options{MaxRequests: 200_000, Window: 24 * time.Hour, Prefix: fmt.Sprintf("rlc-mem:%d:", n)}
		z, err := New(client, opts)
		require.NoError(t, err)
		c, err := NewCompact(client, Options{MaxRequests: opts.MaxRequests, Window: opts.Window, Prefix: opts.Prefix + "compact:"})
		require.NoError(t, err)
		fillLog(t, z, "u", base, n)
		fillLog(t, c, "u", base, n)
		// Offsets an hour or more from the key's base: 24-bit integers in a
		// listpack, as the offsets of any log up to 4.6 hours old would be.
		const offset = 3_600_000
		offsets := opts.Prefix + "offsets:{u}"
		for done := 0; done < n; done += 1000 {
			vals := make([]any, 0, 1000)
			for i := done; i < min(n, done+1000); i++ {
				vals = append(vals, strconv.Itoa(offset+i))
			}
			require.NoError(t, client.RPush(ctx, offsets, vals...).Err())
		}
		usage := func(key string) int64 {
			u, err := client.MemoryUsage(ctx, key, 0).Result()
			require.NoError(t, err)
			return u
		}
		zb, cb, ob := usage(z.Key("u")), usage(c.Key("u")), usage(offsets)
		require.EqualValues(t, n, client.ZCard(ctx, z.Key("u")).Val())
		require.EqualValues(t, n, client.LLen(ctx, c.Key("u")).Val())
		fmt.Fprintf(&table, "%9d %14d %8.1f %14d %8.1f %8.1f %16d %8.1f\n", n, zb, float64(zb)/float64(n), cb, float64(cb)/float64(n),
			float64(zb)/float64(cb), ob, float64(ob)/float64(n))
		if n >= 1000 {
			assert.LessOrEqual(t, float64(cb)/float64(n), 12.0, "the compact log takes at most 12 B a logged request at N = %d", n)
		}
	}
	t.Log("MEMORY USAGE of one user's log of N requests, one a millisecond (SAMPLES 0; offsets: a LIST of the same instants as ms since a base an hour older, for comparison):\n" + table.String())
}
