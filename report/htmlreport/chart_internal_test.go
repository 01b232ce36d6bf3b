package htmlreport

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/result"
)

// Marks at one instant never hide each other: each goes on a row of its
// own in its lane, up to maxRows; the axis has a few round ticks; the
// window of the wrong answer is drawn whole.
func TestLayout(t *testing.T) {
	tl := &result.Timeline{Limit: 5, Window: time.Minute, Instances: 1}
	for i := range 5 {
		tl.Ops = append(tl.Ops, result.Op{Step: i + 1, At: 59999 * time.Millisecond, User: `"u"`, Op: `AllowRequest("u")`, Got: "allowed", Count: 1, Window: time.Minute})
	}
	tl.Ops = append(tl.Ops, result.Op{Step: 6, At: time.Minute, User: `"u"`, Op: `AllowRequest("u")`, Got: "allowed", Want: "denied", Count: 1, Window: time.Minute})
	v := layout(tl, chartOptions{id: "t", step: 6, band: windowOf(tl, 6, false)})
	require.NotNil(t, v)
	require.Len(t, v.Lanes, 1)
	seen := map[[2]float64]bool{}
	for _, m := range v.Marks {
		at := [2]float64{m.Shape.CX, m.Shape.CY}
		assert.False(t, seen[at], "two marks at %v", at)
		seen[at] = true
	}
	assert.InDelta(t, 6*rowH+laneGap, v.Lanes[0].H, 0.01, "six rows: the last mark, a millisecond later, would overlap the first five")
	assert.LessOrEqual(t, len(v.Ticks), 8)
	assert.GreaterOrEqual(t, len(v.Ticks), 3)
	require.NotNil(t, v.Band)
	assert.InDelta(t, v.PlotLeft, v.Band.X, 20, "the band starts near the left: the window (0, 60000] is drawn whole")
	require.NotNil(t, v.Wrong)
	require.Len(t, v.Rows, 6)
	assert.True(t, v.Rows[5].Wrong)
	assert.Nil(t, layout(&result.Timeline{}, chartOptions{}), "nothing to draw")
}

func TestNiceStep(t *testing.T) {
	for _, d := range []time.Duration{time.Microsecond, 3 * time.Millisecond, 61 * time.Second, 100 * 365 * 24 * time.Hour} {
		s := niceStep(d)
		assert.LessOrEqual(t, int64(d/s), int64(7), d)
		assert.Greater(t, int64(d/s), int64(1), d)
	}
}
