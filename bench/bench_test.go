package bench_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/bench"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/mutants"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/reference"
)

var store *redisenv.Redis

func TestMain(m *testing.M) {
	r, err := redisenv.Obtain(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench tests:", err)
		os.Exit(1)
	}
	store = r
	code := m.Run()
	r.Close()
	os.Exit(code)
}

func prefix(t *testing.T) string {
	return fmt.Sprintf("rlc-bench:%s:%d:", t.Name(), time.Now().UnixNano())
}

// limit is low, so that even a slow machine puts every user of load at it.
const limit = 5

// load is a short, heavy load on few users, so that every user is at the
// limit most of the time (above 100 decisions/s).
func load(t *testing.T, instances ...bench.Limiter) bench.Config {
	return bench.Config{Instances: instances, Concurrency: 16, Duration: 600 * time.Millisecond, Users: 4,
		Limit: limit, Window: 200 * time.Millisecond, UserPrefix: prefix(t) + "u", Seed: 1}
}

// TestTheReferenceIsExactUnderLoad: ten runs on the reference (three in
// make test; deciding on Redis's clock), never an overshoot nor an
// under-admission, and the limit was put to the test every time.
func TestTheReferenceIsExactUnderLoad(t *testing.T) {
	for run := range testtier.Runs(10, 3) {
		lim, err := reference.New(store.Client, reference.Options{MaxRequests: limit, Window: 200 * time.Millisecond, Prefix: prefix(t)})
		require.NoError(t, err)
		res, err := bench.Run(context.Background(), load(t, lim))
		require.NoError(t, err)
		require.NotNil(t, res.Exactness)
		var out bytes.Buffer
		res.Text(&out)
		require.False(t, res.Failed(), "run %d:\n%s", run, out.String())
		require.Zero(t, res.ErrorCount(), out.String())
		require.Equal(t, 4, res.Exactness.UsersAtLimit, out.String())
		require.Positive(t, res.Allowed)
		require.Positive(t, res.Denied)
	}
}

// TestANonAtomicLimiterOvershootsUnderLoad: count and add in two round
// trips pass every spec run one call at a time, and overshoot under load;
// the report names the worst window and its timeline.
func TestANonAtomicLimiterOvershootsUnderLoad(t *testing.T) {
	var res *bench.Result
	for attempt := 0; attempt < 5 && (res == nil || !res.Failed()); attempt++ {
		lim, err := mutants.NonAtomic(mutants.Store{Redis: store.Client, Prefix: prefix(t), MaxRequests: limit, Window: 200 * time.Millisecond})
		require.NoError(t, err)
		cfg := load(t, lim)
		cfg.Users = 1
		res, err = bench.Run(context.Background(), cfg)
		require.NoError(t, err)
	}
	require.True(t, res.Failed(), "five loaded runs of a non-atomic limiter never overshot")
	ex := res.Exactness
	require.Positive(t, ex.Overshoot)
	require.NotNil(t, ex.Worst)
	assert.Greater(t, ex.Worst.Allowed, limit)
	var out bytes.Buffer
	res.Text(&out)
	assert.Contains(t, out.String(), "OVERSHOOT")
	assert.Contains(t, out.String(), "worst window")
	assert.Contains(t, out.String(), "= allowed")
	t.Log("\n" + out.String())
}

// checkThenAdd is a limiter written as many are: the check and the add are
// two critical sections (two round trips to a store, in real life), so
// concurrent callers pass the same check. One caller at a time, it is exact.
type checkThenAdd struct {
	mu     sync.Mutex
	limit  int
	window time.Duration
	log    map[string][]time.Time
}

func (l *checkThenAdd) AllowRequest(_ context.Context, user string) (bool, error) {
	l.mu.Lock()
	now := time.Now()
	n := 0
	for _, s := range l.log[user] {
		if now.Sub(s) < l.window {
			n++
		}
	}
	l.mu.Unlock()
	if n >= l.limit {
		return false, nil
	}
	runtime.Gosched() // the round trip between the check and the add
	l.mu.Lock()
	l.log[user] = append(l.log[user], time.Now())
	l.mu.Unlock()
	return true, nil
}

func TestAnInProcessCheckThenAddOvershootsUnderLoad(t *testing.T) {
	one := &checkThenAdd{limit: limit, window: 200 * time.Millisecond, log: map[string][]time.Time{}}
	cfg := load(t, one)
	cfg.Concurrency = 1
	res, err := bench.Run(context.Background(), cfg)
	require.NoError(t, err)
	require.False(t, res.Failed(), "one caller at a time, check-then-add is exact")

	var failed *bench.Result
	for attempt := 0; attempt < 5 && (failed == nil || !failed.Failed()); attempt++ {
		l := &checkThenAdd{limit: limit, window: 200 * time.Millisecond, log: map[string][]time.Time{}}
		failed, err = bench.Run(context.Background(), load(t, l))
		require.NoError(t, err)
	}
	require.True(t, failed.Failed(), "five loaded runs of check-then-add never overshot")
}

// TestOpenLoopCountsEveryDueRequest: at a constant rate, every request due
// is answered or counted in the backlog, and latency counts from when it
// was due.
func TestOpenLoopCountsEveryDueRequest(t *testing.T) {
	lim, err := reference.New(store.Client, reference.Options{MaxRequests: limit, Window: 200 * time.Millisecond, Prefix: prefix(t)})
	require.NoError(t, err)
	cfg := load(t, lim)
	cfg.Rate, cfg.Duration = 2000, time.Second
	res, err := bench.Run(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, "open-loop", res.Mode)
	assert.Equal(t, 2000, res.Decisions+res.ErrorCount()+res.Backlog)
	var out bytes.Buffer
	res.Text(&out)
	assert.Contains(t, out.String(), "open loop at 2000/s (latency from when each request was due)")
	require.NotNil(t, res.Exactness)
	assert.False(t, res.Failed(), out.String())
}

// TestAHotKeyIsShown: with a Zipf skew, the hottest user takes the largest
// share, and the report says how its latency compares.
func TestAHotKeyIsShown(t *testing.T) {
	lim, err := reference.New(store.Client, reference.Options{MaxRequests: limit, Window: 200 * time.Millisecond, Prefix: prefix(t)})
	require.NoError(t, err)
	cfg := load(t, lim)
	cfg.Users, cfg.Zipf = 1000, 1.5
	res, err := bench.Run(context.Background(), cfg)
	require.NoError(t, err)
	require.NotNil(t, res.HotKey)
	assert.Equal(t, int32(0), res.HotKey.User)
	assert.Greater(t, res.HotKey.Share, 0.2)
	var out bytes.Buffer
	res.Text(&out)
	assert.Contains(t, out.String(), "hot key")
}

// TestErrorsAreCountedByKindNeverJudged: a limiter whose store fails is
// measured, its errors counted by kind, and they prove nothing: an errored
// call may have been allowed.
func TestErrorsAreCountedByKindNeverJudged(t *testing.T) {
	res, err := bench.Run(context.Background(), bench.Config{Instances: []bench.Limiter{failing{}}, Concurrency: 2,
		Duration: 200 * time.Millisecond, Users: 1, Limit: 1, Window: time.Second})
	require.NoError(t, err)
	assert.Positive(t, res.Errors["timeout"])
	assert.Zero(t, res.Decisions)
	assert.False(t, res.Failed())
	var out bytes.Buffer
	res.Text(&out)
	assert.Contains(t, out.String(), "timeout (first: store call: context deadline exceeded)")
}

type failing struct{}

func (failing) AllowRequest(ctx context.Context, _ string) (bool, error) {
	return false, fmt.Errorf("store call: %w", context.DeadlineExceeded)
}

func TestResultsRoundTripAndCompare(t *testing.T) {
	lim, err := reference.New(store.Client, reference.Options{MaxRequests: limit, Window: 200 * time.Millisecond, Prefix: prefix(t)})
	require.NoError(t, err)
	cfg := load(t, lim)
	cfg.Duration = 300 * time.Millisecond
	res, err := bench.Run(context.Background(), cfg)
	require.NoError(t, err)
	var js bytes.Buffer
	require.NoError(t, res.WriteJSON(&js))
	back, err := bench.ReadJSON(&js)
	require.NoError(t, err)
	assert.Equal(t, res.Throughput, back.Throughput)
	assert.Equal(t, res.Latency, back.Latency)
	c := bench.Compare(back, res)
	assert.Zero(t, c.Throughput)
	assert.Empty(t, c.Regressed(0))

	slower := *res
	slower.Throughput, slower.Latency.P99 = res.Throughput/2, res.Latency.P99*3
	c = bench.Compare(&slower, res)
	assert.InDelta(t, -50, c.Throughput, 0.001)
	assert.InDelta(t, 200, c.P99, 0.001)
	assert.Equal(t, []string{"throughput fell 50.0%", "p99 rose 200.0%"}, c.Regressed(10))
	assert.Empty(t, c.Regressed(300))

	var svg bytes.Buffer
	require.NoError(t, res.WriteSVG(&svg))
	assert.True(t, strings.HasPrefix(svg.String(), "<?xml"))
	assert.Contains(t, svg.String(), "allowed/s")
	assert.NotContains(t, svg.String(), "<script")

	_, err = bench.ReadJSON(strings.NewReader(`{"mode":"closed-loop"}`))
	assert.Error(t, err)
}

// perKeyLock is a limiter that serialises each user's decisions and takes
// a millisecond over each (a slow script on one key): it slows down under
// a hot key, and the report shows the hot key's p99 above the others'.
type perKeyLock struct {
	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

func (l *perKeyLock) AllowRequest(_ context.Context, user string) (bool, error) {
	l.mu.Lock()
	k := l.locks[user]
	if k == nil {
		k = &sync.Mutex{}
		l.locks[user] = k
	}
	l.mu.Unlock()
	k.Lock()
	defer k.Unlock()
	time.Sleep(time.Millisecond)
	return true, nil
}

func TestALimiterThatSlowsDownUnderAHotKeyShowsIt(t *testing.T) {
	cfg := bench.Config{Instances: []bench.Limiter{&perKeyLock{locks: map[string]*sync.Mutex{}}}, Concurrency: 16,
		Duration: 500 * time.Millisecond, Users: 1000, Zipf: 2, Limit: 1 << 20, Window: time.Second, SkipExactness: "not a limiter"}
	res, err := bench.Run(context.Background(), cfg)
	require.NoError(t, err)
	require.NotNil(t, res.HotKey)
	var out bytes.Buffer
	res.Text(&out)
	assert.Greater(t, res.HotKey.P99, res.HotKey.OthersP99, out.String())
	assert.Contains(t, out.String(), "exactness   not checked: not a limiter")
	t.Log("\n" + out.String())
}

// TestAnInterruptedRunKeepsWhatRan: the result of what ran comes back with
// the error, and a call cut short counts as possibly allowed.
func TestAnInterruptedRunKeepsWhatRan(t *testing.T) {
	lim, err := reference.New(store.Client, reference.Options{MaxRequests: limit, Window: 200 * time.Millisecond, Prefix: prefix(t)})
	require.NoError(t, err)
	cfg := load(t, lim)
	cfg.Duration = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	res, err := bench.Run(ctx, cfg)
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, res)
	assert.True(t, res.Interrupted)
	assert.Positive(t, res.Decisions)
	assert.Less(t, res.Elapsed, 30*time.Second)
	var out bytes.Buffer
	res.Text(&out)
	assert.Contains(t, out.String(), "INTERRUPTED after")
	assert.False(t, res.Failed(), out.String())
}

// TestAnOpenLoopThatKeepsUpHasNoBacklog: the request due last is sent.
func TestAnOpenLoopThatKeepsUpHasNoBacklog(t *testing.T) {
	lim, err := reference.New(store.Client, reference.Options{MaxRequests: limit, Window: 200 * time.Millisecond, Prefix: prefix(t)})
	require.NoError(t, err)
	cfg := load(t, lim)
	cfg.Rate, cfg.Duration = 50, time.Second
	res, err := bench.Run(context.Background(), cfg)
	require.NoError(t, err)
	assert.Zero(t, res.Backlog)
	assert.Equal(t, 50, res.Decisions)
}

// denyAll answers at once, denying.
type denyAll struct{}

func (denyAll) AllowRequest(context.Context, string) (bool, error) { return false, nil }

// BenchmarkAHugeRunStartsSmall measures what a run of a huge configured
// load (10M/s for an hour over 1,000 callers) reserves before it is cut
// short: callers start small and grow, where they once reserved 2^20
// decisions each (about 40 GB for this load). B/op is that memory.
func BenchmarkAHugeRunStartsSmall(b *testing.B) {
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // cut short at once: what is left is what it reserved
		_, err := bench.Run(ctx, bench.Config{Instances: []bench.Limiter{denyAll{}}, Concurrency: 1000, Rate: 1e7,
			Duration: time.Hour, Users: 10, Limit: 1, Window: time.Second, Grace: time.Millisecond})
		if !errors.Is(err, context.Canceled) {
			b.Fatal(err)
		}
	}
}

// TestAHugeRunStartsSmall: the same run allocates well under a gigabyte
// (it reserved about 40 GB before callers grew as needed).
func TestAHugeRunStartsSmall(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := bench.Run(ctx, bench.Config{Instances: []bench.Limiter{denyAll{}}, Concurrency: 1000, Rate: 1e7,
		Duration: time.Hour, Users: 10, Limit: 1, Window: time.Second, Grace: time.Millisecond})
	require.ErrorIs(t, err, context.Canceled)
	runtime.ReadMemStats(&after)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<30), "a cut-short run of a huge load allocated %d MB", (after.TotalAlloc-before.TotalAlloc)>>20)
	t.Logf("a cut-short run of 10M/s for 1h over 1,000 callers allocated %d MB", (after.TotalAlloc-before.TotalAlloc)>>20)
}
