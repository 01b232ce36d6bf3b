package fakeclock

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestFakeMovesOnlyWhenTold(t *testing.T) {
	start := time.UnixMilli(1_700_000_000_000)
	f := New(start)
	assert.Equal(t, start, f.Now())
	f.Advance(1500 * time.Millisecond)
	assert.Equal(t, start.Add(1500*time.Millisecond), f.Now())
	f.Set(start)
	assert.Equal(t, start, f.Now())
	assert.Panics(t, func() { f.Advance(-time.Millisecond) })
}

func TestFakeIsSafeForConcurrentUse(t *testing.T) {
	f := New(time.UnixMilli(0))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				f.Advance(time.Millisecond)
				_ = f.Now()
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, time.UnixMilli(800), f.Now())
}

func TestRealIsTheWallClock(t *testing.T) {
	before := time.Now()
	got := Real{}.Now()
	assert.False(t, got.Before(before))
}
