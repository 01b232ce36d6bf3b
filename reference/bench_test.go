package reference

import (
	"context"
	goflag "flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/redisenv"
)

// The representative load of the benchmarks: many users, a realistic limit.
const (
	benchUsers  = 10_000
	benchLimit  = 100
	benchWindow = time.Minute
)

// benchUserIDs are the users, in a fixed random order; their ids look like
// the ones redis-benchmark makes of u__rand_int__ with -r, so that both can
// decide for the same users.
var benchUserIDs = func() []string {
	ids := make([]string, benchUsers)
	for i := range ids {
		ids[i] = fmt.Sprintf("u%012d", i)
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return ids
}()

// benchBaseFirst runs the ceiling before the reference in each pair of
// sub-benchmarks; make bench flips it from one round to the next, so that
// neither side always runs first.
var benchBaseFirst = goflag.Bool("basefirst", false, "benchmarks: run impl=reference after its ceiling")

// impl is one side of a side-by-side benchmark.
type impl struct {
	name string
	run  func(b *testing.B)
}

// runSideBySide runs the reference and its ceiling, in the order
// -basefirst says.
func runSideBySide(b *testing.B, reference, ceiling impl) {
	pair := []impl{reference, ceiling}
	if *benchBaseFirst {
		pair[0], pair[1] = ceiling, reference
	}
	for _, i := range pair {
		b.Run("impl="+i.name, i.run)
	}
}

// decider is one way of deciding a request of a user.
type decider func(ctx context.Context, userID string) (bool, error)

// bareScript is the ceiling of AllowRequest: a bare go-redis Script.Run of
// the reference's own script, with arguments boxed once, and nothing else.
func bareScript(client redis.UniversalClient, prefix string) decider {
	args := []any{"", strconv.FormatInt(benchWindow.Milliseconds(), 10), strconv.Itoa(benchLimit), "1", "0"}
	return func(ctx context.Context, userID string) (bool, error) {
		res, err := sliding.Run(ctx, client, []string{prefix + "{" + userID + "}"}, args...).Int64Slice()
		if err != nil {
			return false, err
		}
		return res[0] == 1, nil
	}
}

// benchStore is a Redis the benchmarks run on.
type benchStore struct {
	name string
	open func(b *testing.B) redis.UniversalClient
}

// benchStores are the single Redis of TestMain and a three-master cluster
// started for the benchmark that asks for it (package redisenv sets
// ContextTimeoutEnabled on both clients).
var benchStores = []benchStore{
	{"single", func(*testing.B) redis.UniversalClient { return store.Client }},
	{"cluster", func(b *testing.B) redis.UniversalClient {
		bin, err := exec.LookPath("redis-server")
		if err != nil {
			b.Fatal("redis-server must be on PATH:", err)
		}
		c, err := redisenv.StartCluster(context.Background(), bin, 3)
		if err != nil {
			b.Fatal(err)
		}
		client := c.Client()
		b.Cleanup(func() { client.Close(); c.Close() })
		return client
	}},
}

// benchPrefix is a fresh key prefix, so that every run starts with no
// entries. The keys are dropped after the run unless the Redis is one this
// process started (and will stop).
func benchPrefix(b *testing.B, client redis.UniversalClient) string {
	p := fmt.Sprintf("rlc-bench:%d:", time.Now().UnixNano())
	if !store.Owned() && client == store.Client {
		b.Cleanup(func() {
			ctx := context.Background()
			keys, _ := redisenv.ScanKeys(ctx, client, redisenv.GlobEscape(p)+"*")
			pipe := client.Pipeline() // one key a command: they may be in different slots
			for _, k := range keys {
				pipe.Unlink(ctx, k)
			}
			pipe.Exec(ctx)
		})
	}
	return p
}

// BenchmarkAllowRequest measures AllowRequest side by side with its ceiling,
// the bare Script.Run of the same script (impl=bare-script), for 10,000
// users at a limit of 100 per minute, with 1 and 16 callers, on one Redis
// and on a three-master cluster. Besides time and allocations per decision
// it reports decisions/s and the p99 latency of a decision. make bench runs
// it in interleaved rounds (scripts/bench-reference) and compares the
// columns with benchstat.
func BenchmarkAllowRequest(b *testing.B) {
	for _, st := range benchStores {
		b.Run("store="+st.name, func(b *testing.B) {
			client := st.open(b)
			for _, callers := range []int{1, 16} {
				b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
					runSideBySide(b, impl{"reference", func(b *testing.B) {
						l, err := New(client, Options{MaxRequests: benchLimit, Window: benchWindow, Prefix: benchPrefix(b, client)})
						if err != nil {
							b.Fatal(err)
						}
						runCallers(b, callers, l.AllowRequest)
					}}, impl{"bare-script", func(b *testing.B) {
						runCallers(b, callers, bareScript(client, benchPrefix(b, client)))
					}})
				})
			}
		})
	}
}

// runCallers makes b.N decisions on callers goroutines, each taking the next
// user of benchUserIDs, and reports decisions/s and the p99 latency of one
// decision: runBatches with batches of one.
func runCallers(b *testing.B, callers int, decide decider) {
	runBatches(b, callers, 1, func(ctx context.Context, ids []string) ([]bool, error) {
		_, err := decide(ctx, ids[0])
		return nil, err
	})
}

func ptr[T any](v T) *T { return &v }

// reportRate reports decisions/s for n decisions in the benchmark's time.
func reportRate(b *testing.B, n int) {
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "decisions/s")
}

// BenchmarkAllowRequests measures AllowRequests against the pipelined
// ceiling of the same script, redis-benchmark with 16 connections of 32
// EVALSHA in flight (impl=redis-benchmark), on one Redis and on the
// cluster: 16 callers each decide 32 users a call (impl=reference), for the
// same 10,000 users at 100 per minute. An op is one decision; p99-us is the
// p99 latency of a call of 32 (of a pipeline of 32, for redis-benchmark).
func BenchmarkAllowRequests(b *testing.B) {
	const callers, batch = 16, 32
	for _, st := range benchStores {
		b.Run("store="+st.name, func(b *testing.B) {
			client := st.open(b)
			b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
				runSideBySide(b, impl{"reference", func(b *testing.B) {
					l, err := New(client, Options{MaxRequests: benchLimit, Window: benchWindow, Prefix: benchPrefix(b, client)})
					if err != nil {
						b.Fatal(err)
					}
					runBatches(b, callers, batch, l.AllowRequests)
				}}, impl{"redis-benchmark", func(b *testing.B) {
					redisBenchmark(b, client, callers, batch, benchPrefix(b, client))
				}})
			})
		})
	}
}

// runBatches makes b.N decisions on callers goroutines, each deciding the
// next batch users in one call, and reports decisions/s and the p99
// latency of one call (kept in a slice allocated before the timer starts).
func runBatches(b *testing.B, callers, batch int, decide func(context.Context, []string) ([]bool, error)) {
	ctx := context.Background()
	ids := slices.Concat(benchUserIDs, benchUserIDs) // any batch of consecutive users is a subslice
	latency := make([]time.Duration, (b.N+batch-1)/batch)
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range callers {
		wg.Go(func() {
			<-start
			for {
				call := next.Add(1) - 1
				first := int(call) * batch
				if first >= b.N {
					return
				}
				n := min(batch, b.N-first)
				t0 := time.Now()
				_, err := decide(ctx, ids[first%benchUsers:first%benchUsers+n])
				latency[call] = time.Since(t0)
				if err != nil {
					failed.CompareAndSwap(nil, ptr(err))
					return
				}
			}
		})
	}
	b.ResetTimer()
	close(start)
	wg.Wait()
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	reportRate(b, b.N)
	slices.Sort(latency)
	b.ReportMetric(float64(latency[(len(latency)*99)/100])/1e3, "p99-us")
}

// redisBenchmark runs b.N decisions of the sliding script with
// redis-benchmark (connections × pipeline in flight, users u__rand_int__
// of 10,000) and reports its own figures: requests/s as decisions/s, and
// its p99 latency. On a cluster, redis-benchmark puts a tag of the node of
// each connection in the key ({tag}), where the reference has the user's.
func redisBenchmark(b *testing.B, client redis.UniversalClient, connections, pipeline int, prefix string) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		b.Fatal("redis-benchmark (installed with redis-server) must be on PATH:", err)
	}
	if err := loadSliding(context.Background(), client); err != nil {
		b.Fatal(err)
	}
	var addr, key string
	var mode []string
	switch c := client.(type) {
	case *redis.ClusterClient:
		addr, key, mode = c.Options().Addrs[0], prefix+"{tag}:u__rand_int__", []string{"--cluster"}
	case *redis.Client:
		addr, key = c.Options().Addr, prefix+"{u__rand_int__}"
	default:
		b.Fatalf("redis-benchmark: no address for a %T", client)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		b.Fatal(err)
	}
	args := append(mode, "-h", host, "-p", port, "-c", strconv.Itoa(connections), "-P", strconv.Itoa(pipeline),
		"-n", strconv.Itoa(b.N), "-r", strconv.Itoa(benchUsers), "--csv",
		"EVALSHA", sliding.Hash(), "1", key, "", strconv.FormatInt(benchWindow.Milliseconds(), 10), strconv.Itoa(benchLimit), "1", "0")
	b.ResetTimer()
	out, err := exec.Command(bin, args...).CombinedOutput()
	b.StopTimer()
	if err != nil {
		b.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
	// The last line: "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms".
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	fields := strings.Split(strings.ReplaceAll(lines[len(lines)-1], `"`, ""), ",")
	if len(fields) < 7 || strings.Contains(string(out), "Error") {
		b.Fatalf("redis-benchmark answered:\n%s", out)
	}
	rps, err1 := strconv.ParseFloat(fields[len(fields)-7], 64)
	p99, err2 := strconv.ParseFloat(fields[len(fields)-2], 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("redis-benchmark answered:\n%s", out)
	}
	b.ReportMetric(rps, "decisions/s")
	b.ReportMetric(p99*1e3, "p99-us")
}
