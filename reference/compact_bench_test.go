package reference

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/fakeclock"
)

// logBench is one user's limiter, clock and log, held at its size across
// the runs of one sub-benchmark (the testing package calls a benchmark
// function again for each b.N; the logs are filled once).
type logBench struct {
	client *redis.Client
	l      *Limiter
	clk    *fakeclock.Fake
	user   string
	step   time.Duration // W/N: the time between two entries
}

var (
	logBenchMu sync.Mutex
	logBenches map[string][]logBench // BenchmarkCompactVsZSET's, on its own server
)

// benchLogs returns callers users' limiters for one sub-benchmark, made
// and filled the first time it is asked for: each user's log holds n
// entries W/n apart up to its clock, W an hour (so that no key expires in
// real time while the benchmark runs). On the allow path each decision
// moves the user's clock W/n on, so that one entry leaves and one is
// logged; on the deny path the clock stands still and every decision is
// refused with n entries to count.
func benchLogs(b *testing.B, client *redis.Client, name string, newLimiter func(*redis.Client, Options) (*Limiter, error), n, callers int) []logBench {
	logBenchMu.Lock()
	defer logBenchMu.Unlock()
	if lb, ok := logBenches[name]; ok {
		return lb
	}
	ctx := context.Background()
	prefix := fmt.Sprintf("rlc-bench:%s:", name)
	step := benchLogWindow.Milliseconds() / int64(n)
	lbs := make([]logBench, callers)
	for i := range lbs {
		clk := fakeclock.New(time.UnixMilli(1_767_225_600_000))
		l, err := newLimiter(client, Options{MaxRequests: n, Window: benchLogWindow, Prefix: prefix, Clock: clk})
		if err != nil {
			b.Fatal(err)
		}
		user := fmt.Sprintf("u%d", i)
		// What the scripts write for requests in distinct milliseconds: a
		// LIST of the instants, or a ZSET of members named by their score.
		key, first := l.Key(user), clk.Now().UnixMilli()-int64(n-1)*step
		pipe := client.Pipeline()
		for done := 0; done < n; done += 1000 {
			var list []any
			var members []redis.Z
			for j := done; j < min(n, done+1000); j++ {
				ms := first + int64(j)*step
				list = append(list, strconv.FormatInt(ms, 10))
				members = append(members, redis.Z{Score: float64(ms), Member: strconv.FormatInt(ms, 10)})
			}
			if l.log == compactLog {
				pipe.RPush(ctx, key, list...)
			} else {
				pipe.ZAdd(ctx, key, members...)
			}
		}
		pipe.PExpire(ctx, key, benchLogWindow)
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
		lbs[i] = logBench{client, l, clk, user, time.Duration(step) * time.Millisecond}
	}
	logBenches[name] = lbs
	return lbs
}

// benchLogWindow is the window of BenchmarkCompactVsZSET.
const benchLogWindow = time.Hour

// BenchmarkCompactVsZSET measures the compact log (impl=compact,
// NewCompact) side by side with the ZSET reference (impl=zset, New) on one
// Redis: one user's log per caller held at N = 10, 1,000 and 10,000
// entries (W an hour), with 1 and 16 callers, on the allow path (each decision lets
// one entry leave and logs one) and the deny path (every decision refused,
// N entries counted). It reports decisions/s and the p99 latency of a
// decision. make bench runs it in interleaved rounds (scripts/
// bench-compact) and compares the columns. On a Redis of its own, it
// reports the server's time per decision too (server-us: the time inside
// EVALSHA, INFO commandstats), which the round trip and a busy machine's
// scheduling blur far less than they blur the latency.
func BenchmarkCompactVsZSET(b *testing.B) {
	// A server of its own, so that its statistics are these decisions'
	// alone; the logs are filled once per server.
	client := serverWith(b)
	logBenchMu.Lock()
	logBenches = map[string][]logBench{}
	logBenchMu.Unlock()
	for _, path := range []string{"allow", "deny"} {
		b.Run("path="+path, func(b *testing.B) {
			for _, n := range []int{10, 1000, 10_000} {
				b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
					for _, callers := range []int{1, 16} {
						b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
							side := func(name string, newLimiter func(*redis.Client, Options) (*Limiter, error)) impl {
								key := fmt.Sprintf("%s/%s/%d/%d", name, path, n, callers)
								return impl{name, func(b *testing.B) {
									runPerCaller(b, benchLogs(b, client, key, newLimiter, n, callers), path == "allow")
								}}
							}
							compact := side("compact", func(c *redis.Client, o Options) (*Limiter, error) { return NewCompact(c, o) })
							zset := side("zset", func(c *redis.Client, o Options) (*Limiter, error) { return New(c, o) })
							// runSideBySide's first side is the one -basefirst puts second.
							runSideBySide(b, compact, zset)
						})
					}
				})
			}
		})
	}
}

// runPerCaller makes b.N decisions on len(lbs) goroutines, each deciding
// its own user's requests on its own limiter (W/N apart when allow, at one
// instant otherwise), and reports decisions/s and the p99
// latency of one decision. Every answer must be the path's.
func runPerCaller(b *testing.B, lbs []logBench, allow bool) {
	ctx := context.Background()
	latency := make([]time.Duration, b.N)
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, lb := range lbs {
		wg.Go(func() {
			<-start
			for {
				call := next.Add(1) - 1
				if call >= int64(b.N) {
					return
				}
				if allow {
					lb.clk.Advance(lb.step)
				}
				t0 := time.Now()
				ok, err := lb.l.AllowRequest(ctx, lb.user)
				latency[call] = time.Since(t0)
				if err == nil && ok != allow {
					err = fmt.Errorf("%s's request at %v: allowed %v on the %v path", lb.user, lb.clk.Now(), ok, map[bool]string{true: "allow", false: "deny"}[allow])
				}
				if err != nil {
					failed.CompareAndSwap(nil, ptr(err))
					return
				}
			}
		})
	}
	before := serverStats(b, lbs[0].client)
	b.ResetTimer()
	close(start)
	wg.Wait()
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	after := serverStats(b, lbs[0].client)
	if calls := after.calls - before.calls; calls > 0 {
		b.ReportMetric(float64(after.usec-before.usec)/float64(calls), "server-us")
	}
	reportRate(b, b.N)
	slices.Sort(latency)
	b.ReportMetric(float64(latency[(len(latency)*99)/100])/1e3, "p99-us")
}

// stats are the Redis server's count of EVALSHA calls and the
// microseconds it spent in them (INFO commandstats): their differences
// over a run are the server's time per decision, which the round trip
// around it does not blur.
type stats struct {
	calls, usec int64
}

func serverStats(b *testing.B, client *redis.Client) stats {
	info, err := client.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var st stats
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:"); ok {
			for _, kv := range strings.Split(rest, ",") {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "calls":
					st.calls, _ = strconv.ParseInt(v, 10, 64)
				case "usec":
					st.usec, _ = strconv.ParseInt(v, 10, 64)
				}
			}
		}
	}
	return st
}
