package model

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reconfCase is a history across one Configure, with what each reading
// answers after it: requests before the change (each allowed), the change
// at c, queries of what remains (they write nothing), then requests.
type reconfCase struct {
	name      string
	spec      string // without reconfigure
	n         int
	w         int64   // ms
	before    []int64 // offsets of requests before the change, each allowed
	c         int64
	n2        int
	w2        int64
	at        []int64           // offsets of the queries after the change
	remaining map[string][]int  // per reading: Remaining at each of at
	life      map[string]int64  // per reading: Lifetime at c, ms
	allows    []int64           // offsets of requests after the queries
	allowed   map[string][]bool // per reading
}

// runReconf replays every case under every reading of its algorithm (each
// must have expectations) and under the reading "any" (the first).
func runReconf(t *testing.T, cases []reconfCase) {
	t.Helper()
	for _, tc := range cases {
		alg := MustVariant(tc.spec).Algorithm()
		var names []string
		for _, r := range alg.Readings {
			names = append(names, r.Name)
		}
		require.Len(t, tc.remaining, len(names), "%s: every reading has its answers", tc.name)
		for _, r := range append(names, ReadingAny) {
			want := r
			if r == ReadingAny {
				want = names[0]
			}
			spec := tc.spec + "," + ReconfigureParam + "=" + r
			if !strings.Contains(tc.spec, ":") {
				spec = tc.spec + ":" + ReconfigureParam + "=" + r
			}
			what := fmt.Sprintf("%s (%s)", tc.name, spec)
			p := profile(t, spec, tc.n, ms(tc.w))
			for _, off := range tc.before {
				ok, err := p.Allow(time.UnixMilli(epochMs+off), "u")
				require.NoError(t, err)
				require.True(t, ok, "%s: the request at +%dms before the change", what, off)
			}
			require.NoError(t, p.Configure(time.UnixMilli(epochMs+tc.c), tc.n2, ms(tc.w2)))
			if l, ok := tc.life[want]; ok {
				assert.Equal(t, ms(l), p.Lifetime(time.UnixMilli(epochMs+tc.c), "u"), "%s: Lifetime at the change", what)
			}
			var got []int
			for _, off := range tc.at {
				n, err := p.Remaining(time.UnixMilli(epochMs+off), "u")
				require.NoError(t, err)
				got = append(got, n)
			}
			assert.Equal(t, tc.remaining[want], got, "%s: Remaining at %v", what, tc.at)
			if tc.allows != nil {
				assert.Equal(t, tc.allowed[want], answers(p, "u", tc.allows...), "%s: Allow at %v", what, tc.allows)
			}
		}
	}
}

// TestGCRAReadings: each reading of a change of GCRA's configuration, on
// histories derived by hand. Under burst=limit, N=4, W=1000 (T=250, B=4):
// 3 requests at 0 make TAT=750 (l=0); the change is at c=500, where
// D_c = TAT−c = 250 and x_c = B − D_c/T = 3 tokens. remaining at t is
// ⌊((B'−1)T' − D)/T'⌋ + 1 with D = max(0, TAT'−t), 0 when negative.
//
//	keep-tat: TAT' = TAT
//	drain:    TAT' = l + (TAT − l)·T'/T
//	settle:   TAT' = c + (B' − min(x_c, B'))·T'
//	fresh:    no TAT
func TestGCRAReadings(t *testing.T) {
	threeAt0 := []int64{0, 0, 0}
	runReconf(t, []reconfCase{{
		// N 4→2: T'=500, B'=2, (B'−1)T' = 500.
		// keep-tat: TAT 750; at 500 D=250: ⌊250/500⌋+1 = 1; at 1000 D=0: 2.
		//   Requests at 1000: TAT 1250, 1750 (D=750 > 500: denied).
		// drain: TAT' = 750·500/250 = 1500; at 500 D=1000 > 500: 0; at 1000
		//   D=500: 1; a request at 1000 makes TAT 2000: then denied.
		// settle: x' = min(3, 2) = 2, TAT' = 500: 2 and 2.
		name: "limit lowered, burst following it", spec: "gcra", n: 4, w: 1000, before: threeAt0,
		c: 500, n2: 2, w2: 1000, at: []int64{500, 1000},
		remaining: map[string][]int{"keep-tat": {1, 2}, "drain": {0, 1}, "settle": {2, 2}, "fresh": {2, 2}},
		life:      map[string]int64{"keep-tat": 250, "drain": 1000, "settle": 0, "fresh": 0},
		allows:    []int64{1000, 1000, 1000},
		allowed: map[string][]bool{"keep-tat": {true, true, false}, "drain": {true, false, false},
			"settle": {true, true, false}, "fresh": {true, true, false}},
	}, {
		// N 4→8: T'=125, B'=8, (B'−1)T' = 875.
		// keep-tat: at 500 D=250: ⌊625/125⌋+1 = 6; at 750 D=0: 8.
		// drain: TAT' = 750·125/250 = 375 ≤ 500: 8, 8.
		// settle: x' = min(3, 8) = 3, TAT' = 500 + 5·125 = 1125; at 500
		//   D=625: ⌊250/125⌋+1 = 3; at 750 D=375: ⌊500/125⌋+1 = 5.
		name: "limit raised, burst following it", spec: "gcra", n: 4, w: 1000, before: threeAt0,
		c: 500, n2: 8, w2: 1000, at: []int64{500, 750},
		remaining: map[string][]int{"keep-tat": {6, 8}, "drain": {8, 8}, "settle": {3, 5}, "fresh": {8, 8}},
		life:      map[string]int64{"keep-tat": 250, "drain": 0, "settle": 625, "fresh": 0},
	}, {
		// W 1000→2000: T'=500, B'=4, (B'−1)T' = 1500.
		// keep-tat: at 500 D=250: ⌊1250/500⌋+1 = 3; at 900 D=0: 4.
		// drain: TAT' = 750·2 = 1500; at 500 D=1000: ⌊500/500⌋+1 = 2; at
		//   900 D=600: ⌊900/500⌋+1 = 2.
		// settle: x' = 3, TAT' = 500 + 1·500 = 1000; at 500 D=500:
		//   ⌊1000/500⌋+1 = 3; at 900 D=100: ⌊1400/500⌋+1 = 3.
		name: "window raised", spec: "gcra", n: 4, w: 1000, before: threeAt0,
		c: 500, n2: 4, w2: 2000, at: []int64{500, 900},
		remaining: map[string][]int{"keep-tat": {3, 4}, "drain": {2, 2}, "settle": {3, 3}, "fresh": {4, 4}},
		life:      map[string]int64{"keep-tat": 250, "drain": 1000, "settle": 500, "fresh": 0},
	}, {
		// W 1000→500: T'=125, B'=4, (B'−1)T' = 375.
		// keep-tat: at 500 D=250: ⌊125/125⌋+1 = 2; at 550 D=200: ⌊175/125⌋+1 = 2.
		// drain: TAT' = 750·125/250 = 375 ≤ 500: 4, 4.
		// settle: x' = 3, TAT' = 500 + 125 = 625; at 500 D=125: ⌊250/125⌋+1
		//   = 3; at 550 D=75: ⌊300/125⌋+1 = 3.
		name: "window lowered", spec: "gcra", n: 4, w: 1000, before: threeAt0,
		c: 500, n2: 4, w2: 500, at: []int64{500, 550},
		remaining: map[string][]int{"keep-tat": {2, 2}, "drain": {4, 4}, "settle": {3, 3}, "fresh": {4, 4}},
		life:      map[string]int64{"keep-tat": 250, "drain": 0, "settle": 125, "fresh": 0},
	}, {
		// N 4→2 and W 1000→2000: T'=1000, B'=2, (B'−1)T' = 1000.
		// keep-tat: at 500 D=250: ⌊750/1000⌋+1 = 1; at 2000: 2.
		// drain: TAT' = 750·1000/250 = 3000; at 500 D=2500 > 1000: 0; at
		//   2000 D=1000: 1.
		// settle: x' = min(3, 2) = 2, TAT' = 500: 2, 2.
		name: "limit and window", spec: "gcra", n: 4, w: 1000, before: threeAt0,
		c: 500, n2: 2, w2: 2000, at: []int64{500, 2000},
		remaining: map[string][]int{"keep-tat": {1, 2}, "drain": {0, 1}, "settle": {2, 2}, "fresh": {2, 2}},
		life:      map[string]int64{"keep-tat": 250, "drain": 2500, "settle": 0, "fresh": 0},
	}, {
		// burst=2 fixed, N 4→8: T=250 → T'=125, B = B' = 2. 2 requests at 0:
		// TAT 500; c = 250: D_c = 250, x_c = 2 − 1 = 1. (B'−1)T' = 125.
		// keep-tat: at 250 D=250 > 125: 0; at 375 D=125: 1. Requests at
		//   375: TAT 625 (D=250): denied after one.
		// drain: TAT' = 500·125/250 = 250: 2, 2.
		// settle: x' = min(1, 2) = 1, TAT' = 250 + 1·125 = 375; at 250
		//   D=125: ⌊0/125⌋+1 = 1; at 375: 2.
		name: "limit raised, burst fixed", spec: "gcra:burst=2", n: 4, w: 1000, before: []int64{0, 0},
		c: 250, n2: 8, w2: 1000, at: []int64{250, 375},
		remaining: map[string][]int{"keep-tat": {0, 1}, "drain": {2, 2}, "settle": {1, 2}, "fresh": {2, 2}},
		life:      map[string]int64{"keep-tat": 250, "drain": 0, "settle": 125, "fresh": 0},
		allows:    []int64{375, 375, 375},
		allowed: map[string][]bool{"keep-tat": {true, false, false}, "drain": {true, true, false},
			"settle": {true, true, false}, "fresh": {true, true, false}},
	}, {
		// burst=2 fixed, N 4→2: T'=500, (B'−1)T' = 500; TAT 500, c = 250,
		// x_c = 1.
		// keep-tat: at 250 D=250: ⌊250/500⌋+1 = 1; at 500 D=0: 2.
		// drain: TAT' = 500·2 = 1000; at 250 D=750 > 500: 0; at 500 D=500: 1.
		// settle: x' = 1, TAT' = 250 + 1·500 = 750; at 250 D=500: 1; at
		//   500 D=250: ⌊250/500⌋+1 = 1.
		name: "limit lowered, burst fixed", spec: "gcra:burst=2", n: 4, w: 1000, before: []int64{0, 0},
		c: 250, n2: 2, w2: 1000, at: []int64{250, 500},
		remaining: map[string][]int{"keep-tat": {1, 2}, "drain": {0, 1}, "settle": {1, 1}, "fresh": {2, 2}},
		life:      map[string]int64{"keep-tat": 250, "drain": 750, "settle": 500, "fresh": 0},
	}})
}

// TestTokenBucketReadings: each reading of a change of a continuous
// bucket's configuration, on histories derived by hand. Under
// capacity=limit, N=4, W=1000: 3 requests at 0 leave x=1 (l=0); the change
// is at c=250, where x_c = min(C, 1 + 250·4/1000) = 2 at the old rate.
// remaining at t is ⌊tokens⌋, tokens refilled at r' = N'/W' per ms:
//
//	lazy:         min(C', min(1, C') + t·r')
//	settle:       min(C', min(x_c, C') + (t−c)·r')
//	proportional: min(C', x_c·C'/C + (t−c)·r')
//	reset, fresh: C' (a full continuous bucket is a fresh one)
//
// Lifetime at c is the time until full: l + (C' − x)/r' − c.
func TestTokenBucketReadings(t *testing.T) {
	threeAt0 := []int64{0, 0, 0}
	runReconf(t, []reconfCase{{
		// N 4→2, C'=2, r' = 1/500. lazy: at 250 1 + 0.5 = 1.5 → 1, at 500
		// 2; full at 0 + 1·500. settle: min(2, 2) = 2. proportional: 2·2/4
		// = 1, at 500 1 + 0.5 → 1; full at 250 + 500.
		name: "limit lowered, capacity following it", spec: "token-bucket", n: 4, w: 1000, before: threeAt0,
		c: 250, n2: 2, w2: 1000, at: []int64{250, 500},
		remaining: map[string][]int{"lazy": {1, 2}, "settle": {2, 2}, "proportional": {1, 1}, "reset": {2, 2}, "fresh": {2, 2}},
		life:      map[string]int64{"lazy": 250, "settle": 0, "proportional": 500, "reset": 0, "fresh": 0},
	}, {
		// N 4→8, C'=8, r' = 1/125. lazy: 1 + 2 = 3, at 500 1 + 4 = 5; full
		// at 7·125 = 875. settle: 2, at 500 2 + 2 = 4; full at 250 + 750.
		// proportional: 2·8/4 = 4, at 500 6; full at 250 + 500.
		name: "limit raised, capacity following it", spec: "token-bucket", n: 4, w: 1000, before: threeAt0,
		c: 250, n2: 8, w2: 1000, at: []int64{250, 500},
		remaining: map[string][]int{"lazy": {3, 5}, "settle": {2, 4}, "proportional": {4, 6}, "reset": {8, 8}, "fresh": {8, 8}},
		life:      map[string]int64{"lazy": 625, "settle": 750, "proportional": 500, "reset": 0, "fresh": 0},
	}, {
		// W 1000→2000, r' = 1/500, C' = 4. lazy: 1 + 0.5 → 1, at 500 2;
		// full at 3·500 = 1500. settle = proportional (C unchanged): 2, at
		// 500 2.5 → 2; full at 250 + 2·500.
		name: "window raised", spec: "token-bucket", n: 4, w: 1000, before: threeAt0,
		c: 250, n2: 4, w2: 2000, at: []int64{250, 500},
		remaining: map[string][]int{"lazy": {1, 2}, "settle": {2, 2}, "proportional": {2, 2}, "reset": {4, 4}, "fresh": {4, 4}},
		life:      map[string]int64{"lazy": 1250, "settle": 1000, "proportional": 1000, "reset": 0, "fresh": 0},
	}, {
		// W 1000→500, r' = 1/125, C' = 4. lazy: 1 + 2 = 3, at 300 1 + 2.4
		// → 3; full at 3·125 = 375. settle = proportional: 2, at 300 2.4 →
		// 2; full at 250 + 2·125.
		name: "window lowered", spec: "token-bucket", n: 4, w: 1000, before: threeAt0,
		c: 250, n2: 4, w2: 500, at: []int64{250, 300},
		remaining: map[string][]int{"lazy": {3, 3}, "settle": {2, 2}, "proportional": {2, 2}, "reset": {4, 4}, "fresh": {4, 4}},
		life:      map[string]int64{"lazy": 125, "settle": 250, "proportional": 250, "reset": 0, "fresh": 0},
	}, {
		// N 4→2 and W 1000→2000: C'=2, r' = 1/1000. lazy: 1.25 → 1, at 1000
		// 2; full at 1000. settle: min(2, 2) = 2. proportional: 2·2/4 = 1,
		// at 1000 1.75 → 1; full at 250 + 1000.
		name: "limit and window", spec: "token-bucket", n: 4, w: 1000, before: threeAt0,
		c: 250, n2: 2, w2: 2000, at: []int64{250, 1000},
		remaining: map[string][]int{"lazy": {1, 2}, "settle": {2, 2}, "proportional": {1, 1}, "reset": {2, 2}, "fresh": {2, 2}},
		life:      map[string]int64{"lazy": 750, "settle": 0, "proportional": 1000, "reset": 0, "fresh": 0},
	}, {
		// capacity=2 fixed, N 4→8: 2 requests at 0 leave 0; x_c = min(2,
		// 0 + 1) = 1; r' = 1/125. lazy: min(2, 0 + 2) = 2, full at 250.
		// settle = proportional (2·1/2): 1, at 300 1.4 → 1; full at 250 +
		// 125. Requests at 300: lazy 2, settle 1.
		name: "limit raised, capacity fixed", spec: "token-bucket:capacity=2", n: 4, w: 1000, before: []int64{0, 0},
		c: 250, n2: 8, w2: 1000, at: []int64{250, 300},
		remaining: map[string][]int{"lazy": {2, 2}, "settle": {1, 1}, "proportional": {1, 1}, "reset": {2, 2}, "fresh": {2, 2}},
		life:      map[string]int64{"lazy": 0, "settle": 125, "proportional": 125, "reset": 0, "fresh": 0},
		allows:    []int64{300, 300, 300},
		allowed: map[string][]bool{"lazy": {true, true, false}, "settle": {true, false, false},
			"proportional": {true, false, false}, "reset": {true, true, false}, "fresh": {true, true, false}},
	}, {
		// capacity=2 fixed, N 4→2: x_c = 1, r' = 1/500. lazy: 0 + 0.5 → 0,
		// at 500 1; full at 2·500. settle = proportional: 1, at 500 1.5 →
		// 1; full at 250 + 500.
		name: "limit lowered, capacity fixed", spec: "token-bucket:capacity=2", n: 4, w: 1000, before: []int64{0, 0},
		c: 250, n2: 2, w2: 1000, at: []int64{250, 500},
		remaining: map[string][]int{"lazy": {0, 1}, "settle": {1, 1}, "proportional": {1, 1}, "reset": {2, 2}, "fresh": {2, 2}},
		life:      map[string]int64{"lazy": 750, "settle": 500, "proportional": 500, "reset": 0, "fresh": 0},
	}})
}

// TestIntervalBucketReadings: each reading of a change of an interval
// bucket's configuration, derived by hand. N' tokens are added at each
// edge g + jW' of the bucket's grid (lazy: its anchor; settle and
// proportional: the last old edge g_c ≤ c; reset: c); with expire=full a
// refill that fills the bucket forgets it (the next request makes a new
// one, anchored at its instant); a full bucket keeps its anchor until its
// next edge.
func TestIntervalBucketReadings(t *testing.T) {
	threeAt0 := []int64{0, 0, 0}
	runReconf(t, []reconfCase{{
		// capacity=3, N=1, W=1000: 3 at 0 leave 0, anchor 0; at c=2500 the
		// old edges 1000, 2000 made x_c = 2, g_c = 2000. W' = 2000.
		// lazy: anchor 0, edges 2000, 4000: 1 at 2500, 2 at 4000 (full at
		//   6000); requests at 4000: 2, then none until 6000.
		// settle = proportional (C unchanged): 2, anchor 2000; at 4000 the
		//   edge fills it: forgotten (full at 4000). Requests at 4000: a new
		//   bucket of 3 anchored at 4000, next edge 6000.
		// reset: 3 anchored at 2500 (kept until 4500); at 4500 its edge adds 1.
		// fresh: a new bucket at 4000: nothing at 4500.
		name: "window raised, capacity fixed", spec: "token-bucket:refill=interval,capacity=3", n: 1, w: 1000, before: threeAt0,
		c: 2500, n2: 1, w2: 2000, at: []int64{2500, 4000},
		remaining: map[string][]int{"lazy": {1, 2}, "settle": {2, 3}, "proportional": {2, 3}, "reset": {3, 3}, "fresh": {3, 3}},
		life:      map[string]int64{"lazy": 3500, "settle": 1500, "proportional": 1500, "reset": 2000, "fresh": 0},
		allows:    []int64{4000, 4000, 4000, 4000, 4500},
		allowed: map[string][]bool{"lazy": {true, true, false, false, false}, "settle": {true, true, true, false, false},
			"proportional": {true, true, true, false, false}, "reset": {true, true, true, false, true}, "fresh": {true, true, true, false, false}},
	}, {
		// capacity=3, N 1→2, W=1000: x_c = 2, g_c = 2000 as above.
		// lazy: anchor 0, 2 edges of 2 by 2500: 4 ≥ 3, forgotten: 3, 3.
		// settle = proportional: 2 anchored at 2000; at 3000 2 + 2 ≥ 3:
		//   forgotten: 3 (full at 3000).
		// reset: 3 anchored at 2500 (until 3500).
		name: "limit raised, capacity fixed", spec: "token-bucket:refill=interval,capacity=3", n: 1, w: 1000, before: threeAt0,
		c: 2500, n2: 2, w2: 1000, at: []int64{2500, 3000},
		remaining: map[string][]int{"lazy": {3, 3}, "settle": {2, 3}, "proportional": {2, 3}, "reset": {3, 3}, "fresh": {3, 3}},
		life:      map[string]int64{"lazy": 0, "settle": 500, "proportional": 500, "reset": 1000, "fresh": 0},
	}, {
		// capacity=limit, N 4→2 (C' = 2), W=1000: 3 at 0 leave 1; c = 500,
		// before any old edge: x_c = 1, g_c = 0.
		// lazy = settle: min(1, 2) = 1; at 1000 1 + 2 ≥ 2: forgotten, 2.
		// proportional: 1·2/4 = 1/2 → 0; at 1000 forgotten, 2 (full at
		//   1000).
		// reset: 2 anchored at 500, until 1500.
		name: "limit lowered, capacity following it", spec: "token-bucket:refill=interval", n: 4, w: 1000, before: threeAt0,
		c: 500, n2: 2, w2: 1000, at: []int64{500, 1000},
		remaining: map[string][]int{"lazy": {1, 2}, "settle": {1, 2}, "proportional": {0, 2}, "reset": {2, 2}, "fresh": {2, 2}},
		life:      map[string]int64{"lazy": 500, "settle": 500, "proportional": 500, "reset": 1000, "fresh": 0},
		allows:    []int64{1000},
		allowed:   map[string][]bool{"lazy": {true}, "settle": {true}, "proportional": {true}, "reset": {true}, "fresh": {true}},
	}, {
		// capacity=limit, N 2→4 (C' = 4): 2 at 0 leave 0; c = 500: x_c = 0.
		// lazy = settle = proportional (0·4/2): 0; at 1000 0 + 4: forgotten,
		//   4. reset, fresh: 4 (strict/raised-limit at one instant: 0 more
		//   or 4 more).
		name: "limit raised, capacity following it", spec: "token-bucket:refill=interval", n: 2, w: 1000, before: []int64{0, 0},
		c: 500, n2: 4, w2: 1000, at: []int64{500, 1000},
		remaining: map[string][]int{"lazy": {0, 4}, "settle": {0, 4}, "proportional": {0, 4}, "reset": {4, 4}, "fresh": {4, 4}},
		life:      map[string]int64{"lazy": 500, "settle": 500, "proportional": 500, "reset": 1000, "fresh": 0},
	}, {
		// capacity=limit, N 2→4 (C' = 4): 2 at 0 leave 0; the old edge at
		// 1000 fills the bucket, so it is forgotten before c = 1500: under
		// every reading the user is fresh, 4 from its next request (at 2000,
		// anchored there: nothing more at 2500).
		name: "a bucket forgotten before the change", spec: "token-bucket:refill=interval", n: 2, w: 1000, before: []int64{0, 0},
		c: 1500, n2: 4, w2: 1000, at: []int64{1500, 2000},
		remaining: map[string][]int{"lazy": {4, 4}, "settle": {4, 4}, "proportional": {4, 4}, "reset": {4, 4}, "fresh": {4, 4}},
		life:      map[string]int64{"lazy": 0, "settle": 0, "proportional": 0, "reset": 0, "fresh": 0},
		allows:    []int64{2000, 2000, 2000, 2000, 2500},
		allowed: map[string][]bool{"lazy": {true, true, true, true, false}, "settle": {true, true, true, true, false},
			"proportional": {true, true, true, true, false}, "reset": {true, true, true, true, false}, "fresh": {true, true, true, true, false}},
	}, {
		// expire=idle, N 2→1 and W 1000→2000 (C 2→1): 2 at 0 leave 0, anchor
		// 0, forgotten at 0 + 1000·⌈2/2⌉ = 1000. c = 500: x_c = 0.
		// lazy: forgotten at 1000 (its last write): 0, then 1, 1; a request
		//   at 2000 makes a new bucket anchored there: none at 2500.
		// settle = proportional: 0 anchored at 0, saved at c: forgotten at
		//   500 + 2000·⌈1/1⌉ = 2500; its edge at 2000 adds 1: 0, 0, 1; the
		//   request at 2000 spends it, the next edge is 4000.
		// reset: 1 anchored at 500, saved at c (forgotten at 2500); the
		//   request at 2000 saves it until 4000; its edge at 2500 adds 1.
		name: "limit and window, expire=idle", spec: "token-bucket:refill=interval,expire=idle", n: 2, w: 1000, before: []int64{0, 0},
		c: 500, n2: 1, w2: 2000, at: []int64{500, 1500, 2000},
		remaining: map[string][]int{"lazy": {0, 1, 1}, "settle": {0, 0, 1}, "proportional": {0, 0, 1}, "reset": {1, 1, 1}, "fresh": {1, 1, 1}},
		life:      map[string]int64{"lazy": 500, "settle": 2000, "proportional": 2000, "reset": 2000, "fresh": 0},
		allows:    []int64{2000, 2500},
		allowed: map[string][]bool{"lazy": {true, false}, "settle": {true, false},
			"proportional": {true, false}, "reset": {true, true}, "fresh": {true, false}},
	}})
}

// bucketReadingSpecs are the GCRA and token-bucket variants the property tests
// replay under each reading.
func bucketReadingSpecs() []string {
	specs := []string{"gcra", "gcra:burst=1", "gcra:burst=3"}
	for _, c := range []string{"limit", "2"} {
		for _, r := range []string{"continuous", "interval"} {
			for _, e := range []string{"full", "idle"} {
				for _, q := range []string{"read", "write"} {
					specs = append(specs, fmt.Sprintf("token-bucket:capacity=%s,refill=%s,expire=%s,query=%s", c, r, e, q))
				}
			}
		}
	}
	return specs
}

// withReading is spec with reconfigure=r.
func withReading(spec, r string) string {
	if strings.Contains(spec, ":") {
		return spec + "," + ReconfigureParam + "=" + r
	}
	return spec + ":" + ReconfigureParam + "=" + r
}

// TestReadingsDecideAlikeWithoutAChange: on random histories whose
// configuration never changes (Configure with the values in force, Reset,
// a clock that may step back), every reading answers as the model's first
// (today's) does, and a Configure with the same values changes no user's
// state: each reading's StateKey is its twin's, which never sees one.
func TestBucketReadingsDecideAlikeWithoutAChange(t *testing.T) {
	seeds := testtier.Seeds(t, 12, 3)
	for _, spec := range bucketReadingSpecs() {
		alg := MustVariant(spec).Algorithm()
		require.Greater(t, len(alg.Readings), 1, spec)
		for _, seed := range seeds {
			rng := rand.New(rand.NewPCG(seed, 41))
			n, w := 1+rng.IntN(5), time.Duration(50+rng.IntN(500))*time.Millisecond
			var models, twins []Replayable
			for _, r := range alg.Readings {
				models = append(models, profile(t, withReading(spec, r.Name), n, w))
				twins = append(twins, profile(t, withReading(spec, r.Name), n, w))
			}
			now := int64(epochMs)
			for step := range 150 {
				u := fmt.Sprint("u", rng.IntN(2))
				now += rng.Int64N(int64(w/time.Millisecond)) - 5
				at := time.UnixMilli(now)
				what := fmt.Sprintf("%s, seed %d, step %d", spec, seed, step)
				switch op := rng.IntN(10); {
				case op == 0:
					for _, m := range models {
						require.NoError(t, m.Configure(at, n, w))
					}
				case op == 1:
					for i := range models {
						require.NoError(t, models[i].Reset(u))
						require.NoError(t, twins[i].Reset(u))
					}
				case op < 5:
					var want int
					for i, m := range models {
						got, _ := m.Remaining(at, u)
						_, _ = twins[i].Remaining(at, u)
						if i == 0 {
							want = got
						}
						require.Equal(t, want, got, "%s: %s Remaining", what, alg.Readings[i].Name)
					}
				default:
					var want bool
					for i, m := range models {
						got, _ := m.Allow(at, u)
						_, _ = twins[i].Allow(at, u)
						if i == 0 {
							want = got
						}
						require.Equal(t, want, got, "%s: %s Allow", what, alg.Readings[i].Name)
					}
				}
				for i, m := range models {
					r := alg.Readings[i].Name
					require.Equal(t, models[0].RetryAfter(at, u), m.RetryAfter(at, u), "%s: %s RetryAfter", what, r)
					require.Equal(t, models[0].Lifetime(at, u), m.Lifetime(at, u), "%s: %s Lifetime", what, r)
					require.Equal(t, twins[i].StateKey(u), m.StateKey(u), "%s: %s, the same configuration changed the state", what, r)
				}
			}
		}
	}
}

// TestReadingsAcrossModels: the readings of GCRA and of a continuous
// bucket are the same arithmetic written twice, so on random histories
// with changes of N and W (time never stepping back) they answer alike:
// settle as settle (tokens B − D/T), fresh as fresh and as reset (a full
// continuous bucket is a fresh one), and with a fixed burst drain as lazy
// (TAT' − l = (TAT − l)·T'/T is the debt B − x_l refilled at the new
// rate from l) when only requests write and the bucket lives until full
// (a query that writes moves a lazy bucket's last refill, not nginx's l;
// expire=idle forgets it W⌈C/N⌉ after its last write under the old
// configuration).
func TestReadingsAcrossModels(t *testing.T) {
	seeds := testtier.Seeds(t, 25, 5)
	pairs := [][2]string{
		{"gcra:reconfigure=settle", "token-bucket:reconfigure=settle"},
		{"gcra:burst=3,reconfigure=settle", "token-bucket:capacity=3,reconfigure=settle"},
		{"gcra:burst=3,reconfigure=settle", "token-bucket:capacity=3,expire=idle,query=write,reconfigure=settle"},
		{"gcra:reconfigure=fresh", "token-bucket:reconfigure=fresh"},
		{"gcra:reconfigure=fresh", "token-bucket:reconfigure=reset"},
		{"gcra:burst=2,reconfigure=drain", "token-bucket:capacity=2,reconfigure=lazy"},
		{"gcra:burst=5,reconfigure=drain", "token-bucket:capacity=5,reconfigure=lazy"},
	}
	for _, pair := range pairs {
		idle := strings.Contains(pair[1], "idle")
		for _, seed := range seeds {
			rng := rand.New(rand.NewPCG(seed, 43))
			n, w := 1+rng.IntN(5), time.Duration(50+rng.IntN(500))*time.Millisecond
			a, b := profile(t, pair[0], n, w), profile(t, pair[1], n, w)
			now := int64(epochMs)
			changes := 0
			for step := range 200 {
				u := fmt.Sprint("u", rng.IntN(2))
				now += rng.Int64N(int64(a.Window()/time.Millisecond)) / 2
				at := time.UnixMilli(now)
				what := fmt.Sprintf("%s and %s, seed %d, step %d", pair[0], pair[1], seed, step)
				switch op := rng.IntN(12); {
				case op == 0:
					nn, ww := 1+rng.IntN(6), time.Duration(50+rng.IntN(500))*time.Millisecond
					if nn != a.Limit() || ww != a.Window() {
						changes++
					}
					require.NoError(t, a.Configure(at, nn, ww))
					require.NoError(t, b.Configure(at, nn, ww))
				case op < 5:
					x, _ := a.Remaining(at, u)
					y, _ := b.Remaining(at, u)
					require.Equal(t, x, y, "%s: Remaining", what)
				default:
					x, _ := a.Allow(at, u)
					y, _ := b.Allow(at, u)
					require.Equal(t, x, y, "%s: Allow", what)
				}
				require.Equal(t, a.RetryAfter(at, u), b.RetryAfter(at, u), "%s: RetryAfter", what)
				if !idle {
					require.Equal(t, a.Lifetime(at, u), b.Lifetime(at, u), "%s: Lifetime", what)
				}
			}
			require.Positive(t, changes, "the history changes the configuration")
		}
	}
}

// TestReadingsDiffer: every reading of each algorithm is its own on some
// history of the tables above (no two name one behaviour), and the
// parameter pins one; a reading's Explain names what it keeps.
func TestReadingsDiffer(t *testing.T) {
	for _, name := range []string{ProfileGCRA, ProfileTokenBucket} {
		v := MustVariant(name)
		require.Equal(t, ReadingAny, v.Params[ReconfigureParam])
		var got []string
		for _, r := range v.Readings() {
			got = append(got, r.Reading())
		}
		var want []string
		for _, r := range v.Algorithm().Readings {
			want = append(want, r.Name)
			assert.NotEmpty(t, r.Doc, r.Name)
			assert.NotEmpty(t, r.Seen, r.Name)
		}
		assert.Equal(t, want, got, name)
	}
	assert.Equal(t, []string{"keep-tat", "drain", "settle", "fresh"}, readingNames(ProfileGCRA))
	assert.Equal(t, []string{"lazy", "settle", "proportional", "reset", "fresh"}, readingNames(ProfileTokenBucket))
	_, err := ParseVariant("gcra:reconfigure=lazy")
	assert.ErrorContains(t, err, "want one of any, keep-tat, drain, settle, fresh")

	g := profile(t, "gcra:reconfigure=drain", 2, time.Second)
	answers(g, "u", 0, 300)
	assert.Contains(t, g.Explain(time.UnixMilli(epochMs+300), time.UnixMilli(epochMs), "u"), "last allowed request was at +300ms")
}

func readingNames(alg string) []string {
	var out []string
	for _, r := range MustVariant(alg).Algorithm().Readings {
		out = append(out, r.Name)
	}
	return out
}

// TestReadingCloneIsDeep: a change of configuration on a clone leaves the
// original's users as they were, under every reading.
func TestReadingCloneIsDeep(t *testing.T) {
	for _, spec := range []string{"gcra", "token-bucket", "token-bucket:refill=interval,expire=idle"} {
		for _, r := range readingNames(MustVariant(spec).Name) {
			p := profile(t, withReading(spec, r), 4, time.Second)
			answers(p, "u", 0, 0, 0)
			before := p.StateKey("u")
			q := p.Clone().(Replayable)
			require.NoError(t, q.Configure(time.UnixMilli(epochMs+100), 2, 3*time.Second))
			assert.Equal(t, before, p.StateKey("u"), "%s %s", spec, r)
			assert.Equal(t, 4, p.Limit())
			n, _ := p.Remaining(time.UnixMilli(epochMs+100), "u")
			assert.Equal(t, 1, n, "%s %s: the original still refills at 4 per second", spec, r)
		}
	}
}

// TestDrainStateKeyHoldsTheLastRequest: under drain two users with one TAT
// but different last requests answer differently after a change, so their
// keys differ; under keep-tat they are one state. N=4, W=1000: a's
// requests at 0, 0 and b's at 250 make TAT = 500 (l = 0 and 250). N→2
// (T' = 500, B' = 2) at 250: a's TAT' = 0 + 500·2 = 1000 (D = 750 > 500:
// 0), b's TAT' = 250 + 250·2 = 750 (D = 500: 1).
func TestDrainStateKeyHoldsTheLastRequest(t *testing.T) {
	keep := profile(t, "gcra:reconfigure=keep-tat", 4, time.Second)
	drain := profile(t, "gcra:reconfigure=drain", 4, time.Second)
	for _, p := range []Replayable{keep, drain} {
		answers(p, "a", 0, 0)
		answers(p, "b", 250)
	}
	assert.Equal(t, keep.StateKey("a"), keep.StateKey("b"))
	assert.NotEqual(t, drain.StateKey("a"), drain.StateKey("b"))
	require.NoError(t, drain.Configure(time.UnixMilli(epochMs+250), 2, time.Second))
	a, _ := drain.Remaining(time.UnixMilli(epochMs+250), "a")
	b, _ := drain.Remaining(time.UnixMilli(epochMs+250), "b")
	assert.Equal(t, []int{0, 1}, []int{a, b})
	// The readings decide alike while the configuration stays: one key.
	p := map[string]string{"capacity": "3", "refill": "interval", "expire": "idle", "query": "write"}
	settle := map[string]string{"capacity": "3", "refill": "interval", "expire": "idle", "query": "write", ReconfigureParam: "settle"}
	assert.Equal(t, tokenBucketAlike(p, 2, true, true), tokenBucketAlike(settle, 2, true, true))
}
