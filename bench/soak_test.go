package bench_test

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/bench"
	"github.com/rlconform/rlconform/internal/testtier"
)

// prunedLog is an exact sliding log in process, each user's entries
// pruned as they leave: a target whose memory is bounded by its users, so
// that the grader's own is what a soak measures.
type prunedLog struct {
	mu     sync.Mutex
	limit  int
	window time.Duration
	log    map[string][]time.Time
}

func (l *prunedLog) AllowRequest(_ context.Context, user string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	kept := l.log[user][:0]
	for _, at := range l.log[user] {
		if now.Sub(at) < l.window {
			kept = append(kept, at)
		}
	}
	ok := len(kept) < l.limit
	if ok {
		kept = append(kept, now)
	}
	l.log[user] = kept
	return ok, nil
}

// TestALongRunKeepsItsMemory: a bench's memory is flat in its length. An
// open loop of 5,000 requests a second for 90 s, the live heap sampled
// every 5 s after a GC: from the first samples to the last it grows by
// less than 8 MB. A run that kept every decision (75 bytes each, issue
// 62) grew by about 34 MB here; the calls held now are those of about a
// window and the settling time.
func TestALongRunKeepsItsMemory(t *testing.T) {
	testtier.SkipUnlessFull(t, "a soak of 90 s")
	lim := &prunedLog{limit: 20, window: time.Second, log: map[string][]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var heap []uint64
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			heap = append(heap, m.HeapAlloc)
		}
	}()
	res, err := bench.Run(ctx, bench.Config{Instances: []bench.Limiter{lim}, Concurrency: 8, Rate: 5000,
		Duration: soakFor, Users: 200, Limit: 20, Window: time.Second, UserPrefix: "soak-u", Seed: 1})
	require.NoError(t, err)
	cancel()
	<-sampled
	require.GreaterOrEqual(t, len(heap), int(soakFor/(5*time.Second))-6, "samples of the heap")
	first, last := slices.Min(heap[1:4]), slices.Max(heap[len(heap)-3:])
	t.Logf("%d decisions; live heap from %d to %d KB (samples every 5s, KB: %v)", res.Decisions+res.ErrorCount(), first>>10, last>>10, kb(heap))
	require.NotNil(t, res.Exactness, res.NotChecked)
	require.Less(t, int64(last)-int64(first), int64(8<<20), "the heap grew with the run's length")
}

func kb(bs []uint64) []uint64 {
	out := make([]uint64, len(bs))
	for i, b := range bs {
		out[i] = b >> 10
	}
	return out
}

var soakFor = 90 * time.Second
