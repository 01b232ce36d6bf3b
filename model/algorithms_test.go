package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// answers runs allow at each offset (ms) and returns the answers.
func answers(a Algorithm, user string, offsets ...int64) []bool {
	var out []bool
	for _, ms := range offsets {
		out = append(out, a.Allow(time.UnixMilli(1_767_225_600_000+ms), user))
	}
	return out
}

func TestFixedWindowEpoch(t *testing.T) {
	f := NewFixedWindow(2, time.Second, false, false)
	// 2 just before the edge at 1000 and 2 just after: all pass.
	assert.Equal(t, []bool{true, true, false, true, true, false}, answers(f, "u", 998, 999, 999, 1000, 1001, 1999))
	n, ok := f.Remaining(time.UnixMilli(1_767_225_600_000+1500), "u")
	assert.True(t, ok)
	assert.Equal(t, 0, n)
}

func TestFixedWindowFirstHitCountingDenied(t *testing.T) {
	f := NewFixedWindow(2, time.Second, true, true)
	// The window opens at 100; denied requests count; a new one opens at the
	// first request at or after 1100.
	assert.Equal(t, []bool{true, true, false, true}, answers(f, "u", 100, 500, 900, 1100))
	g := NewFixedWindow(2, time.Second, true, false)
	assert.Equal(t, []bool{true, true, false, false, true}, answers(g, "u", 100, 1099, 1099, 1099, 1100))
}

func TestSlidingCounter(t *testing.T) {
	s := &SlidingCounter{n: 4, w: time.Second}
	// 4 late in window 0; at 1500 the estimate is 4*0.5 = 2: 2 more pass.
	assert.Equal(t, []bool{true, true, true, true}, answers(s, "u", 900, 900, 900, 900))
	assert.Equal(t, []bool{true, true, false}, answers(s, "u", 1500, 1500, 1500))
	// At 1000 exactly the estimate is 4: denied.
	s2 := &SlidingCounter{n: 4, w: time.Second}
	answers(s2, "u", 999, 999, 999, 999)
	assert.Equal(t, []bool{false}, answers(s2, "u", 1000))
}

func TestGCRA(t *testing.T) {
	g := &GCRA{n: 4, w: time.Second} // one every 250ms, burst 4
	assert.Equal(t, []bool{true, true, true, true, false}, answers(g, "u", 0, 0, 0, 0, 0))
	assert.Equal(t, []bool{false, true, false, true}, answers(g, "u", 249, 250, 250, 500))
}

func TestLogVariants(t *testing.T) {
	alts := Alternatives(2, time.Second)
	byKind := map[string]Algorithm{}
	for _, a := range alts {
		if l, ok := a.(*logVariant); ok {
			byKind[l.kind] = a
		}
	}
	assert.Equal(t, []bool{true, true, true, false}, answers(byKind["limit+1"], "u", 0, 0, 0, 0))
	assert.Equal(t, []bool{true, false}, answers(byKind["limit-1"], "u", 0, 0))
	assert.Equal(t, []bool{true, true, false, true}, answers(byKind["inclusive"], "u", 0, 0, 1000, 1001))
	assert.Equal(t, []bool{true, true, false, false, false}, answers(byKind["count-denied"], "u", 0, 500, 800, 1200, 1400))
	assert.Equal(t, []bool{true, true, true, true, false}, answers(byKind["same-ms-once"], "u", 0, 0, 0, 5, 6))
	assert.Equal(t, []bool{true, true, false, true}, answers(byKind["window/1000"], "u", 0, 0, 0, 1))
	for _, a := range alts {
		assert.NotEmpty(t, a.Name())
		assert.NotEmpty(t, a.Hint())
	}
}
