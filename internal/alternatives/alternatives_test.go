package alternatives

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rlconform/rlconform/model"
)

const epochMs = 1_767_225_600_000

// answers runs allow at each offset (ms) and returns the answers.
func answers(a Algorithm, user string, offsets ...int64) []bool {
	var out []bool
	for _, ms := range offsets {
		ok, _ := a.Allow(time.UnixMilli(epochMs+ms), user)
		out = append(out, ok)
	}
	return out
}

func TestLogVariants(t *testing.T) {
	alts := For(model.Builtin(), model.Variant{}, 2, time.Second)
	byKind := map[string]Algorithm{}
	for _, a := range alts {
		if l, ok := a.Algorithm.(*logVariant); ok {
			byKind[l.kind] = a
		}
	}
	assert.Equal(t, []bool{true, true, true, false}, answers(byKind["limit+1"], "u", 0, 0, 0, 0))
	assert.Equal(t, []bool{true, false}, answers(byKind["limit-1"], "u", 0, 0))
	assert.Equal(t, []bool{true, true, false, true}, answers(byKind["inclusive"], "u", 0, 0, 1000, 1001))
	assert.Equal(t, []bool{true, true, false, false, false}, answers(byKind["count-denied"], "u", 0, 500, 800, 1200, 1400))
	assert.Equal(t, []bool{true, true, true, true, false}, answers(byKind["same-ms-once"], "u", 0, 0, 0, 5, 6))
	assert.Equal(t, []bool{true, true, false, true}, answers(byKind["window/1000"], "u", 0, 0, 0, 1))
	// Its decisions are the log's; remaining counts from the start's whole
	// second: at 2120 the start is 1120, truncated to 1000.
	trunc := byKind["truncated-start"]
	assert.Equal(t, []bool{true, true, true, false}, answers(trunc, "u", 100, 1100, 1150, 1150))
	left := func(ms int64) int { n, _ := trunc.Remaining(time.UnixMilli(epochMs+ms), "u"); return n }
	assert.Equal(t, 0, left(2120), "1100 and 1150 (the log counts 1150 only)")
	assert.Equal(t, 0, left(2151), "still 1100 and 1150 (the log counts none)")
	assert.Equal(t, 2, left(3000))
	for _, a := range alts {
		assert.NotEmpty(t, a.Describe())
		assert.NotEmpty(t, a.Hint)
		if a.Variant.Name != "" {
			assert.NotEqual(t, model.ProfileSlidingLog, a.Variant.String(), "the graded profile is not its own alternative")
		}
	}
}
