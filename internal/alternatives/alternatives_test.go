package alternatives

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
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

// TestLogVariantsTakeCosts: a sliding log's mistakes take a request of
// cost n as n requests at its instant: allowed when its count + n fits its
// limit, and then (count-denied: always) as a twin fed n unit requests,
// which are all allowed, answers later; same-ms-once collapses them into
// one; 0 changes nothing; a negative cost is ErrInvalidCost.
func TestLogVariantsTakeCosts(t *testing.T) {
	kinds := func() map[string]*logVariant {
		out := map[string]*logVariant{}
		for _, a := range Mistakes(3, time.Second) {
			out[a.Key] = a.Algorithm.(*logVariant)
		}
		out["mistake:truncated-start"] = &logVariant{kind: "truncated-start", n: 3, w: time.Second}
		return out
	}
	byCost, twins := kinds(), kinds()
	costs := []int{2, 2, 0, 1, 3, 4, 1, 2}
	offsets := []int64{0, 400, 400, 700, 1000, 1100, 1405, 2100}
	for key, l := range byCost {
		if l.kind == "same-ms-once" {
			continue
		}
		twin := twins[key]
		for i, c := range costs {
			now := time.UnixMilli(epochMs + offsets[i])
			room := l.limit() - l.active(now.UnixMilli(), "u")
			ok, err := l.AllowN(now, "u", c)
			require.NoError(t, err)
			where := fmt.Sprintf("%s: cost %d at +%d with room for %d", key, c, offsets[i], room)
			assert.Equal(t, c == 0 || c <= room, ok, where)
			if ok || l.kind == "count-denied" {
				all := true
				for range c {
					one, _ := twin.Allow(now, "u")
					all = all && one
				}
				assert.Equal(t, ok, all, "%s: its %d unit requests", where, c)
			}
			left, _ := l.Remaining(now, "u")
			twinLeft, _ := twin.Remaining(now, "u")
			assert.Equal(t, twinLeft, left, "%s: remaining after", where)
		}
		_, err := l.AllowN(time.UnixMilli(epochMs), "u", -1)
		assert.ErrorIs(t, err, contract.ErrInvalidCost, key)
	}
	once := byCost["mistake:same-ms-once"]
	ok, _ := once.AllowN(time.UnixMilli(epochMs), "v", 3)
	assert.True(t, ok)
	ok, _ = once.AllowN(time.UnixMilli(epochMs+5), "v", 3)
	assert.False(t, ok, "the 3 entries at 0 count once: 1 + 3 > 3")
	ok, _ = once.AllowN(time.UnixMilli(epochMs+5), "v", 2)
	assert.True(t, ok)
}
