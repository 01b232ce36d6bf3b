package model

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The readings of a change of configuration (reconfigure=) of fixed
// windows and of the weighted counter: each decides as the model always
// did until N or W changes, then as docs/profiles.md says.

// rstep is one step of a reconfiguration table for the user "u", at ms
// after epochMs (a multiple of every window below: offsets are the grid's).
type rstep struct {
	at   int64
	kind string // "allow", "left" (Remaining), "retry" (RetryAfter, ms), "life" (Lifetime, ms), "configure"
	n    int
	w    int64
	want int // allow: 1 allowed, 0 denied
}

func rAllow(at int64, ok bool) rstep {
	if ok {
		return rstep{at: at, kind: "allow", want: 1}
	}
	return rstep{at: at, kind: "allow"}
}
func rLeft(at int64, n int) rstep          { return rstep{at: at, kind: "left", want: n} }
func rRetry(at int64, d int) rstep         { return rstep{at: at, kind: "retry", want: d} }
func rLife(at int64, d int) rstep          { return rstep{at: at, kind: "life", want: d} }
func rConf(at int64, n int, w int64) rstep { return rstep{at: at, kind: "configure", n: n, w: w} }

// reconfigureCase is a history of one variant across a Configure.
type reconfigureCase struct {
	name  string
	spec  string
	n     int
	w     int64
	steps []rstep
}

func runReconfigure(t *testing.T, cases []reconfigureCase) {
	for _, tc := range cases {
		t.Run(tc.spec+"/"+tc.name, func(t *testing.T) {
			p := profile(t, tc.spec, tc.n, time.Duration(tc.w)*time.Millisecond)
			for i, s := range tc.steps {
				now := time.UnixMilli(epochMs + s.at)
				switch s.kind {
				case "allow":
					got, err := p.Allow(now, "u")
					require.NoError(t, err)
					assert.Equal(t, s.want == 1, got, "step %d: Allow(+%d)", i, s.at)
				case "left":
					got, err := p.Remaining(now, "u")
					require.NoError(t, err)
					assert.Equal(t, s.want, got, "step %d: Remaining(+%d)", i, s.at)
				case "retry":
					assert.Equal(t, ms(int64(s.want)), p.RetryAfter(now, "u"), "step %d: RetryAfter(+%d)", i, s.at)
				case "life":
					assert.Equal(t, ms(int64(s.want)), p.Lifetime(now, "u"), "step %d: Lifetime(+%d)", i, s.at)
				case "configure":
					require.NoError(t, p.Configure(now, s.n, time.Duration(s.w)*time.Millisecond))
				}
			}
		})
	}
}

// fixedPrefix counts 2 of N = 3 in the window [1000, 2000) of 1s;
// fixedPrefix2 in [2000, 3000).
var (
	fixedPrefix  = []rstep{rAllow(1200, true), rAllow(1300, true)}
	fixedPrefix2 = []rstep{rAllow(2200, true), rAllow(2300, true)}
)

func with(prefix []rstep, steps ...rstep) []rstep {
	return append(append([]rstep{}, prefix...), steps...)
}

// sameConfig: a Configure with the N and W in force changes nothing.
func sameConfig(spec string) reconfigureCase {
	return reconfigureCase{"the same configuration changes nothing", spec, 3, 1000, with(fixedPrefix,
		rConf(1500, 3, 1000), rLeft(1500, 1), rAllow(1600, true), rAllow(1700, false), rLeft(2000, 3))}
}

// TestFixedWindowRelay: the start and the count are kept; windows are laid
// out with W' from the next decision.
func TestFixedWindowRelay(t *testing.T) {
	const fw = "fixed-window:reconfigure=relay"
	runReconfigure(t, []reconfigureCase{
		// count 2 kept: remaining max(0, N'-2) = 0; the window [2000, 3000) is new: N' = 2.
		{"limit lowered", fw, 3, 1000, with(fixedPrefix, rConf(1500, 2, 1000), rLeft(1500, 0), rAllow(1600, false), rLeft(2000, 2))},
		// 5 - 2 = 3 more.
		{"limit raised", fw, 3, 1000, with(fixedPrefix, rConf(1500, 5, 1000), rLeft(1500, 3),
			rAllow(1500, true), rAllow(1500, true), rAllow(1500, true), rAllow(1500, false))},
		// W' = 500: at 1450 the W'-window is [1000, 1500), whose start is the
		// count's: 3 - 2 = 1; at 1500 the window [1500, 2000) has none: 3.
		{"window lowered", fw, 3, 1000, with(fixedPrefix, rConf(1400, 3, 500), rLeft(1450, 1), rLeft(1500, 3))},
		// W' = 2000: the window [2000, 4000) starts where the count's did:
		// 3 - 2 = 1 until 4000.
		{"window raised", fw, 3, 1000, with(fixedPrefix2, rConf(2400, 3, 2000), rLeft(2450, 1), rLeft(3500, 1), rLeft(4000, 3))},
		// N' = 2, W' = 2000: 2 - 2 = 0 in [2000, 4000), until 4000: 1550ms.
		{"both", fw, 3, 1000, with(fixedPrefix2, rConf(2400, 2, 2000), rLeft(2450, 0), rRetry(2450, 1550),
			rAllow(3500, false), rLeft(4000, 2))},
		// first-hit: the window opened at 100 becomes [100, 2100).
		{"first-hit window raised", "fixed-window:align=first-hit,reconfigure=relay", 2, 1000, []rstep{
			rAllow(100, true), rAllow(200, true), rConf(300, 2, 2000), rLife(300, 1800), rAllow(1500, false), rAllow(2100, true)}},
		// elastic: renewed last by the denial at 300, the window ends at
		// 300 + W' = 2300; a query renews nothing.
		{"elastic window raised", "fixed-window:align=elastic,reconfigure=relay", 2, 1000, []rstep{
			rAllow(100, true), rAllow(200, true), rAllow(300, false), rConf(400, 2, 2000), rLife(400, 1900),
			rLeft(2299, 0), rLeft(2300, 2)}},
		// first-grid anchored at 100: 100 + ⌊(t-100)/2000⌋·2000 = 100 for t < 2100: the count's window.
		{"first-grid window raised", "fixed-window:align=first-grid,reconfigure=relay", 2, 1000, []rstep{
			rAllow(100, true), rAllow(200, true), rConf(300, 2, 2000), rAllow(1500, false), rAllow(2100, true)}},
		sameConfig(fw),
	})
}

// TestFixedWindowFinish: the window open at the change keeps its end s+W
// and its count, compared with N'; the windows after it have W'.
func TestFixedWindowFinish(t *testing.T) {
	const fw = "fixed-window:reconfigure=finish"
	runReconfigure(t, []reconfigureCase{
		{"limit lowered", fw, 3, 1000, with(fixedPrefix, rConf(1500, 2, 1000), rLeft(1500, 0), rAllow(1600, false), rLeft(2000, 2))},
		{"limit raised", fw, 3, 1000, with(fixedPrefix, rConf(1500, 5, 1000), rLeft(1500, 3),
			rAllow(1500, true), rAllow(1500, true), rAllow(1500, true), rAllow(1500, false))},
		// W' = 500: [1000, 2000) keeps its end: 3 - 2 = 1 at 1450 and 1500;
		// the third request fills it, denied until its end 2000 (1ms from
		// 1999); the W'-window [2000, 2500) has none: 3.
		{"window lowered", fw, 3, 1000, with(fixedPrefix, rConf(1400, 3, 500), rLeft(1450, 1), rLeft(1500, 1),
			rAllow(1999, true), rAllow(1999, false), rRetry(1999, 1), rLeft(2000, 3))},
		// W' = 2000: [2000, 3000) keeps its end: 1 until 2999; from 3000 the
		// W'-window [2000, 4000) counts afresh (3 at 3100-3300), then [4000, 6000).
		{"window raised", fw, 3, 1000, with(fixedPrefix2, rConf(2400, 3, 2000), rLeft(2450, 1), rLife(2450, 550), rLeft(2999, 1), rLeft(3000, 3),
			rAllow(3100, true), rAllow(3200, true), rAllow(3300, true), rAllow(3999, false), rAllow(4000, true))},
		// N' = 2: 2 - 2 = 0 until the old end 3000 (550ms), then 2.
		{"both", fw, 3, 1000, with(fixedPrefix2, rConf(2400, 2, 2000), rLeft(2450, 0), rRetry(2450, 550), rLeft(3000, 2))},
		// first-hit: [100, 1100) keeps its end; the next window is [1100, 3100).
		{"first-hit window raised", "fixed-window:align=first-hit,reconfigure=finish", 2, 1000, []rstep{
			rAllow(100, true), rAllow(200, true), rConf(300, 2, 2000), rAllow(1099, false), rAllow(1100, true),
			rAllow(3000, true), rAllow(3099, false), rAllow(3100, true)}},
		// elastic: the TTL written at 300 keeps its end 1300; the denial
		// at 1200 writes one of W': the end is 3200.
		{"elastic window raised", "fixed-window:align=elastic,reconfigure=finish", 2, 1000, []rstep{
			rAllow(100, true), rAllow(200, true), rAllow(300, false), rConf(400, 2, 2000), rLife(400, 900),
			rLeft(1199, 0), rAllow(1200, false), rLife(1200, 2000), rLeft(3199, 0), rLeft(3200, 2)}},
		// first-hit, W' = 500: still [100, 1100), then [1100, 1600).
		{"first-hit window lowered", "fixed-window:align=first-hit,reconfigure=finish", 2, 1000, []rstep{
			rAllow(100, true), rAllow(200, true), rConf(300, 2, 500), rAllow(1099, false), rAllow(1100, true),
			rAllow(1599, true), rAllow(1599, false), rAllow(1600, true)}},
		// first-grid: [100, 1100) keeps its end; the grid goes on from 1100
		// with W': [1100, 3100), [3100, 5100). Lifetime: 1100 + min(1000, 2000).
		{"first-grid window raised", "fixed-window:align=first-grid,reconfigure=finish", 2, 1000, []rstep{
			rAllow(100, true), rAllow(200, true), rConf(300, 2, 2000), rLife(300, 1800), rAllow(1099, false), rAllow(1500, true),
			rAllow(1600, true), rAllow(3099, false), rAllow(3100, true)}},
		// first-grid, idle: the old anchor expires at 1100 + min(1000, 2000)
		// = 2100; 2150 anchors a new grid: [2150, 4150).
		{"first-grid window raised, idle past the anchor", "fixed-window:align=first-grid,reconfigure=finish", 2, 1000, []rstep{
			rAllow(100, true), rAllow(200, true), rConf(300, 2, 2000), rAllow(2150, true), rAllow(2200, true),
			rAllow(3100, false), rAllow(4149, false), rAllow(4150, true)}},
		// first-grid, two changes: under W = 500 the window [100, 1100) rolls
		// into [1100, 1600) until 1100 + min(1000, 500) = 1600: at 1700 the
		// user is as fresh, and stays so under W = 3000 (which would reach
		// 1100 + min(1000, 3000) = 2100): 1800 anchors [1800, 4800).
		{"first-grid, a user already fresh at the change", "fixed-window:align=first-grid,reconfigure=finish", 2, 1000, []rstep{
			rAllow(100, true), rAllow(200, true), rConf(300, 2, 500), rLife(1599, 1), rConf(1700, 2, 3000),
			rAllow(1800, true), rAllow(1900, true), rAllow(4200, false), rAllow(4800, true)}},
		sameConfig(fw),
	})
}

// TestFixedWindowRekey: a changed W starts a fresh count; a changed N
// keeps it.
func TestFixedWindowRekey(t *testing.T) {
	const fw = "fixed-window:reconfigure=rekey"
	runReconfigure(t, []reconfigureCase{
		{"limit lowered", fw, 3, 1000, with(fixedPrefix, rConf(1500, 2, 1000), rLeft(1500, 0), rAllow(1600, false), rLeft(2000, 2))},
		{"limit raised", fw, 3, 1000, with(fixedPrefix, rConf(1500, 5, 1000), rLeft(1500, 3))},
		// W' = 500: [1000, 1500) is a new key: 3.
		{"window lowered", fw, 3, 1000, with(fixedPrefix, rConf(1400, 3, 500), rLeft(1450, 3))},
		// W' = 2000: [2000, 4000) is a new key: 3, full at 2450 until 4000.
		{"window raised", fw, 3, 1000, with(fixedPrefix2, rConf(2400, 3, 2000), rLeft(2450, 3),
			rAllow(2450, true), rAllow(2450, true), rAllow(2450, true), rAllow(2450, false), rLeft(3999, 0), rLeft(4000, 3))},
		{"both", fw, 3, 1000, with(fixedPrefix2, rConf(2400, 2, 2000), rLeft(2450, 2))},
		// first-hit: the next request opens [400, 2400).
		{"first-hit window raised", "fixed-window:align=first-hit,reconfigure=rekey", 2, 1000, []rstep{
			rAllow(100, true), rAllow(200, true), rConf(300, 2, 2000), rAllow(400, true), rAllow(500, true),
			rAllow(2399, false), rAllow(2400, true)}},
		sameConfig(fw),
	})
}

// TestFixedWindowFresh: any change of N or W forgets every user.
func TestFixedWindowFresh(t *testing.T) {
	const fw = "fixed-window:reconfigure=fresh"
	runReconfigure(t, []reconfigureCase{
		{"limit lowered", fw, 3, 1000, with(fixedPrefix, rConf(1500, 2, 1000), rLeft(1500, 2),
			rAllow(1600, true), rAllow(1700, true), rAllow(1800, false))},
		{"limit raised", fw, 3, 1000, with(fixedPrefix, rConf(1500, 5, 1000), rLeft(1500, 5))},
		{"window lowered", fw, 3, 1000, with(fixedPrefix, rConf(1400, 3, 500), rLeft(1450, 3))},
		{"window raised", fw, 3, 1000, with(fixedPrefix2, rConf(2400, 3, 2000), rLeft(2450, 3))},
		{"both", fw, 3, 1000, with(fixedPrefix2, rConf(2400, 2, 2000), rLeft(2450, 2))},
		sameConfig(fw),
	})
}

// counterPrefix leaves, with N = 4 and W = 1s on the epoch, prev = 2 (the
// window [1000, 2000)) and cur = 2 ([2000, 3000)): at 2100 the estimate
// is 2×900/1000 = 1.8, then 2.8, both below 4. The room at t is
// N·L - prev·(L-e) - cur·L for a window of L, e into it; remaining is
// ⌈room/L⌉ (0 when room <= 0).
var counterPrefix = []rstep{rAllow(1100, true), rAllow(1100, true), rAllow(2100, true), rAllow(2100, true)}

// counterGridPrefix is a first-grid user anchored at 0 (W = 1s, N = 4):
// one request in each of the windows 0, 1, 2, then two in window 3
// ([3000, 4000)): j = 3, prev = 1, cur = 2.
var counterGridPrefix = []rstep{rAllow(0, true), rAllow(1000, true), rAllow(2000, true), rAllow(3000, true), rAllow(3100, true)}

// counterLimitCases are the changes of the limit alone, which every
// reading but fresh reads alike: the counts are kept against N'.
func counterLimitCases(spec string) []reconfigureCase {
	return []reconfigureCase{
		// N' = 3 at 2500: 3000 - 2×500 - 2×1000 = 0 → 0; at 2750: 3000 - 500 - 2000 = 500 → 1.
		{"limit lowered", spec, 4, 1000, with(counterPrefix, rConf(2500, 3, 1000), rLeft(2500, 0), rLeft(2750, 1))},
		// N' = 6 at 2500: 6000 - 1000 - 2000 = 3000 → 3.
		{"limit raised", spec, 4, 1000, with(counterPrefix, rConf(2500, 6, 1000), rLeft(2500, 3))},
		// 4000 - 1000 - 2000 = 1000 → 1, as before.
		{"the same configuration changes nothing", spec, 4, 1000, with(counterPrefix, rConf(2500, 4, 1000), rLeft(2500, 1),
			rAllow(2500, true), rAllow(2500, false))},
	}
}

// TestSlidingCounterIndex: the counts keep their window's index on the
// origin, read with W'.
func TestSlidingCounterIndex(t *testing.T) {
	const sc = "sliding-counter:reconfigure=index"
	runReconfigure(t, append(counterLimitCases(sc), []reconfigureCase{
		// On the epoch ⌊(T+t)/W'⌋ is neither j = ⌊(T+2000)/1000⌋ nor j+1
		// for the epoch offset T of the tests: the counts are gone.
		{"window lowered", sc, 4, 1000, with(counterPrefix, rConf(2400, 4, 500), rLeft(2400, 4))},
		{"window raised", sc, 4, 1000, with(counterPrefix, rConf(2400, 4, 2000), rLeft(2400, 4))},
		{"both", sc, 4, 1000, with(counterPrefix, rConf(2400, 2, 2000), rLeft(2400, 2))},
		// first-grid anchored at 0, W' = 1100: ⌊3500/1100⌋ = 3 = j keeps (1, 2),
		// e = 200: 4400 - 900 - 2200 = 1300 → 2; at 4300 e = 1000: 4400 - 100
		// - 2200 = 2100 → 2; at 4400 index 4 = j+1: (2, 0), 4400 - 2200 → 2;
		// at 4950 e = 550: 4400 - 1100 = 3300 → 3; forgotten at a+(j+2)W' = 5500.
		{"first-grid window raised", "sliding-counter:align=first-grid,reconfigure=index", 4, 1000, with(counterGridPrefix,
			rConf(3200, 4, 1100), rLeft(3500, 2), rLife(3500, 2000), rLeft(4300, 2), rLeft(4400, 2), rLeft(4950, 3), rLeft(5500, 4))},
	}...))
}

// TestSlidingCounterRebase: the stored window's start s is kept and the
// period is W' (HAProxy's freq_ctr).
func TestSlidingCounterRebase(t *testing.T) {
	const sc = "sliding-counter:reconfigure=rebase"
	runReconfigure(t, append(counterLimitCases(sc), []reconfigureCase{
		// W' = 500, s = 2000: at 2400 d = 400 < 500 keeps (2, 2): 2000 - 2×100
		// - 1000 = 800 → 2; at 2500 d = 500: (2, 0) in [2500, 3000): 2000 -
		// 1000 = 1000 → 2; at 2750: 2000 - 500 = 1500 → 3; one more at 2750
		// makes (2, 1): 1500 - 500 → 2; at 3000 (1, 0) in [3000, 3500): 2000
		// - 500 → 3; at 3500 fresh: 4.
		{"window lowered", sc, 4, 1000, with(counterPrefix, rConf(2400, 4, 500), rLeft(2400, 2), rLeft(2500, 2),
			rLeft(2750, 3), rAllow(2750, true), rLeft(2750, 2), rLeft(3000, 3), rLeft(3500, 4))},
		// W' = 2000: at 2400 (2, 2), e = 400: 8000 - 3200 - 4000 = 800 → 1;
		// at 3001: 8000 - 1998 - 4000 = 2002 → 2; at 4000 (2, 0) in [4000,
		// 6000): 8000 - 4000 → 2; at 5000: 8000 - 2000 → 3; at 6000 fresh.
		{"window raised", sc, 4, 1000, with(counterPrefix, rConf(2400, 4, 2000), rLeft(2400, 1), rLife(2400, 3600), rLeft(3000, 1),
			rLeft(3001, 2), rLeft(4000, 2), rLeft(5000, 3), rLeft(6000, 4))},
		// N' = 2, W' = 2000: at 2400 4000 - 3200 - 4000 < 0 → 0, none in this
		// window (N' - cur = 0); in [4000, 6000) 2×(2000-e) < 2×2000 from e
		// = 1: 1601ms; 4000 - 2×1999 = 2 → 1 at 4001.
		{"both", sc, 4, 1000, with(counterPrefix, rConf(2400, 2, 2000), rLeft(2400, 0), rRetry(2400, 1601),
			rLeft(4000, 0), rLeft(4001, 1), rLeft(6000, 2))},
		// first-grid, W' = 1100, s = 3000: at 3500 d = 500: (1, 2), 4400 -
		// 600 - 2200 = 1600 → 2; at 4300 d = 1300: (2, 0) in [4100, 5200),
		// e = 200: 4400 - 1800 = 2600 → 3 (index says 2); fresh at 5200.
		{"first-grid window raised", "sliding-counter:align=first-grid,reconfigure=rebase", 4, 1000, with(counterGridPrefix,
			rConf(3200, 4, 1100), rLeft(3500, 2), rLeft(4300, 3), rLeft(5199, 4), rLeft(5200, 4))},
		// Two changes: under W = 500 the counts of s = 2000 live until s +
		// 2×500 = 3000; at 3100 the user is as fresh and stays so under W =
		// 2000 (which would keep (2, 2): d = 1100 < 2000, remaining 2).
		{"a user already fresh at the change", sc, 4, 1000, with(counterPrefix, rConf(2400, 4, 500), rLife(2400, 600),
			rConf(3100, 4, 2000), rLeft(3100, 4))},
	}...))
}

// TestSlidingCounterFinish: the stored window keeps its end E and its
// length until E; then [E, E+W') holds its count as prev, if reached before
// E + min(W, W') (Symfony's SlidingWindow).
func TestSlidingCounterFinish(t *testing.T) {
	const sc = "sliding-counter:reconfigure=finish"
	runReconfigure(t, append(counterLimitCases(sc), []reconfigureCase{
		// W' = 500, E = 3000: at 2400 with L = 1000: 4000 - 1200 - 2000 = 800
		// → 1; at 2750: 4000 - 500 - 2000 = 1500 → 2; at 3000 (2, 0) in
		// [3000, 3500), L = 500: 2000 - 1000 → 2; at 3250: 2000 - 500 → 3; at
		// 3500 = E + min(1000, 500) fresh.
		{"window lowered", sc, 4, 1000, with(counterPrefix, rConf(2400, 4, 500), rLeft(2400, 1), rLeft(2750, 2),
			rLeft(3000, 2), rLeft(3250, 3), rLeft(3500, 4))},
		// W' = 2000: at 2400 as above → 1; at 3000 (2, 0) in [3000, 5000):
		// 8000 - 4000 → 2; at 3999: 8000 - 2×1001 = 5998 → 3; the old state
		// expires at E + min(1000, 2000) = 4000: 4.
		{"window raised, idle", sc, 4, 1000, with(counterPrefix, rConf(2400, 4, 2000), rLeft(2400, 1), rLife(2400, 1600), rLeft(3000, 2), rLife(3000, 1000),
			rLeft(3999, 3), rLeft(4000, 4))},
		// Reached at 3500: 8000 - 2×1500 = 5000 > 0, allowed: (2, 1) in [3000,
		// 5000); at 4500: 8000 - 1000 - 2000 = 5000 → 3; at 5000 (1, 0) in
		// [5000, 7000): 8000 - 2000 → 3.
		{"window raised, reached", sc, 4, 1000, with(counterPrefix, rConf(2400, 4, 2000), rAllow(3500, true),
			rLeft(4500, 3), rLeft(5000, 3))},
		// N' = 2, W' = 2000: at 2400 2000 - 1200 - 2000 < 0 → 0, none before
		// E; in [3000, 5000) 2×(2000-e) < 2×2000 from e = 1: 601ms.
		{"both", sc, 4, 1000, with(counterPrefix, rConf(2400, 2, 2000), rLeft(2400, 0), rRetry(2400, 601),
			rLeft(3000, 0), rLeft(3001, 1), rLeft(4000, 2))},
		// 4 at 2100 in [2000, 3000); N' = 1, W' = 4000: in [3000, 7000)
		// 4×(4000-e) < 4000 only from e = 3001, but the state expires first,
		// at E + min(1000, 4000) = 4000: retry 1500ms.
		{"expiry before the next window allows", sc, 4, 1000, []rstep{rAllow(2100, true), rAllow(2100, true), rAllow(2100, true),
			rAllow(2100, true), rConf(2500, 1, 4000), rRetry(2500, 1500), rAllow(3999, false), rAllow(4000, true)}},
		// Two changes: under W = 500, E = 3000, the counts live until E +
		// min(1000, 500) = 3500; at 3600 the user is as fresh and stays so
		// under W = 2000 (which would reach E + min(1000, 2000) = 4000 and
		// weigh (2, 0) in [3000, 5000): 8000 - 2×1400 → 3).
		{"a user already fresh at the change", sc, 4, 1000, with(counterPrefix, rConf(2400, 4, 500), rLife(3400, 100),
			rConf(3600, 4, 2000), rLeft(3600, 4))},
	}...))
}

// TestSlidingCounterFresh: any change of N or W forgets every user.
func TestSlidingCounterFresh(t *testing.T) {
	const sc = "sliding-counter:reconfigure=fresh"
	runReconfigure(t, []reconfigureCase{
		{"limit lowered", sc, 4, 1000, with(counterPrefix, rConf(2500, 3, 1000), rLeft(2500, 3))},
		{"limit raised", sc, 4, 1000, with(counterPrefix, rConf(2500, 6, 1000), rLeft(2500, 6))},
		{"window lowered", sc, 4, 1000, with(counterPrefix, rConf(2400, 4, 500), rLeft(2400, 4))},
		{"window raised", sc, 4, 1000, with(counterPrefix, rConf(2400, 4, 2000), rLeft(2400, 4))},
		{"both", sc, 4, 1000, with(counterPrefix, rConf(2400, 2, 2000), rLeft(2400, 2))},
		{"the same configuration changes nothing", sc, 4, 1000, with(counterPrefix, rConf(2500, 4, 1000), rLeft(2500, 1))},
	})
}

// countingReadingSpecs are every variant of fixed windows and of the weighted
// counter, each with every reading pinned: by algorithm, the variants with
// the default reading first.
func countingReadingSpecs() map[string][][]string {
	out := map[string][][]string{}
	for _, name := range []string{ProfileFixedWindow, ProfileSlidingCounter} {
		alg := Builtin().Lookup(name)
		var bases []string
		switch name {
		case ProfileFixedWindow:
			for _, c := range crossed([]string{"epoch", "go-zero", "first-grid", "first-hit", "elastic", "elastic-allowed"}, []string{"false", "true"}, nil) {
				bases = append(bases, c+",query=read", c+",query=write")
			}
		default:
			bases = crossed([]string{"epoch", "go-zero", "first-grid"}, []string{"false", "true"}, []string{"below", "at-most"})
		}
		for _, b := range bases {
			var group []string
			for _, r := range alg.Readings {
				group = append(group, name+":"+b+","+ReconfigureParam+"="+r.Name)
			}
			out[name] = append(out[name], group)
		}
	}
	return out
}

// TestReadingsDecideAlikeWithoutAChange: on random histories whose
// configuration never changes (a Configure with the values in force, a
// step back of the clock, a reset, queries), every reading answers as the
// default one, and as a twin that was never configured, with the same
// state key.
func TestCountingReadingsDecideAlikeWithoutAChange(t *testing.T) {
	for _, groups := range countingReadingSpecs() {
		for _, group := range groups {
			t.Run(group[0], func(t *testing.T) {
				for _, seed := range testtier.Seeds(t, 30, 8) {
					rng := rand.New(rand.NewPCG(seed, 7))
					n, w := 1+rng.IntN(5), time.Duration(20+rng.IntN(300))*time.Millisecond
					var ps, twins []Replayable
					for _, spec := range group {
						ps, twins = append(ps, profile(t, spec, n, w)), append(twins, profile(t, spec, n, w))
					}
					now := time.UnixMilli(epochMs + rng.Int64N(1000))
					for step := range 200 {
						u := fmt.Sprint("u", rng.IntN(2))
						where := fmt.Sprintf("seed %d step %d", seed, step)
						r := rng.IntN(20)
						for i, p := range ps {
							switch {
							case r < 9:
								got, _ := p.Allow(now, u)
								want, _ := twins[i].Allow(now, u)
								require.Equal(t, want, got, "%s: %s Allow", where, group[i])
							case r < 14:
								got, _ := p.Remaining(now, u)
								want, _ := twins[i].Remaining(now, u)
								require.Equal(t, want, got, "%s: %s Remaining", where, group[i])
							case r < 15:
								require.NoError(t, p.Reset(u))
								require.NoError(t, twins[i].Reset(u))
							case r < 17:
								require.NoError(t, p.Configure(now, n, w))
							}
							require.Equal(t, twins[i].StateKey(u), p.StateKey(u), "%s: %s", where, group[i])
							require.Equal(t, ps[0].RetryAfter(now, u), p.RetryAfter(now, u), "%s: %s RetryAfter", where, group[i])
							require.Equal(t, ps[0].Lifetime(now, u), p.Lifetime(now, u), "%s: %s Lifetime", where, group[i])
							left, _ := p.Clone().Remaining(now, u)
							want, _ := ps[0].Clone().Remaining(now, u)
							require.Equal(t, want, left, "%s: %s Remaining", where, group[i])
						}
						switch rng.IntN(12) {
						case 0:
							now = now.Add(-time.Duration(rng.IntN(int(w.Milliseconds())+1)) * time.Millisecond)
						case 1, 2, 3, 4:
							now = now.Add(time.Duration(rng.IntN(int(w.Milliseconds())+1)) * time.Millisecond)
						case 5:
							now = now.Add(time.Duration(rng.IntN(3*int(w.Milliseconds())+1)) * time.Millisecond)
						}
					}
				}
			})
		}
	}
}

// TestReadingsKeepTheRulesAcrossChanges: on random histories whose
// configuration changes, every reading keeps the rules every profile
// shares: Remaining is how many requests in a row would be allowed,
// RetryAfter the first instant one would, and from the Lifetime on the
// user answers as a fresh one.
func TestReadingsKeepTheRulesAcrossChanges(t *testing.T) {
	for _, groups := range countingReadingSpecs() {
		for _, group := range groups {
			for _, spec := range group {
				t.Run(spec, func(t *testing.T) {
					for _, seed := range testtier.Seeds(t, 20, 5) {
						checkRulesAcrossChanges(t, spec, seed)
					}
				})
			}
		}
	}
}

func checkRulesAcrossChanges(t *testing.T, spec string, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 11))
	windows := []int64{50, 100, 150, 200, 300}
	n, w := 1+rng.IntN(5), windows[rng.IntN(len(windows))]
	p := profile(t, spec, n, ms(w))
	now := time.UnixMilli(epochMs + rng.Int64N(1000))
	for step := range 150 {
		u := fmt.Sprint("u", rng.IntN(2))
		where := fmt.Sprintf("seed %d step %d (N %d, W %d)", seed, step, n, w)
		left, err := p.Remaining(now, u)
		require.NoError(t, err)
		in := p.Clone()
		for k := range left + 1 {
			ok, _ := in.Allow(now, u)
			require.Equal(t, k < left, ok, "%s: remaining %d, request %d", where, left, k+1)
		}
		if d := p.RetryAfter(now, u); d > 0 {
			require.Zero(t, left, where)
			before, after := p.Clone(), p.Clone()
			ok, _ := before.Allow(now.Add(d-time.Millisecond), u)
			require.False(t, ok, "%s: denied just before retry-after %v", where, d)
			ok, _ = after.Allow(now.Add(d), u)
			require.True(t, ok, "%s: allowed at retry-after %v", where, d)
		} else {
			require.NotZero(t, left, "%s: retry-after 0 means one is allowed", where)
		}
		if life := p.Lifetime(now, u); rng.IntN(3) == 0 {
			at := now.Add(life + time.Duration(rng.IntN(3))*time.Millisecond)
			old, fresh := p.Clone(), p.Clone()
			require.NoError(t, fresh.Reset(u))
			for range n + 1 {
				a, _ := old.Allow(at, u)
				b, _ := fresh.Allow(at, u)
				require.Equal(t, b, a, "%s: after the lifetime %v, as fresh", where, life)
			}
		}
		switch r := rng.IntN(12); {
		case r < 7:
			p.Allow(now, u)
		case r < 8:
			n, w = 1+rng.IntN(5), windows[rng.IntN(len(windows))]
			require.NoError(t, p.Configure(now, n, ms(w)))
		default:
			now = now.Add(ms(rng.Int64N(w/2 + 1)))
		}
	}
}

// TestReadingStateKeysHoldTheWindowsLength: under the readings that keep a
// window's own length, two states alike but for it answer differently, and
// their keys differ.
func TestReadingStateKeysHoldTheWindowsLength(t *testing.T) {
	at := func(ms int64) time.Time { return time.UnixMilli(epochMs + ms) }
	// finish: a counts 1 in [0, 1000) of W = 1s; after W' = 2s, b counts 1
	// in the W'-window [0, 2000). At 1500 a is fresh, b is not.
	f := profile(t, "fixed-window:reconfigure=finish", 2, time.Second)
	f.Allow(at(100), "a")
	require.NoError(t, f.Configure(at(200), 2, 2*time.Second))
	f.Allow(at(300), "b")
	left := func(p Replayable, t0 int64, u string) int { n, _ := p.Clone().Remaining(at(t0), u); return n }
	assert.Equal(t, []int{2, 1}, []int{left(f, 1500, "a"), left(f, 1500, "b")})
	assert.NotEqual(t, f.StateKey("a"), f.StateKey("b"))

	// rebase and finish, first-grid anchored at 0, N = 4: a has (2, 1) in
	// [1000, 2000) of W = 1s; after W' = 2s, b has (2, 1) in [2000, 4000):
	// the same anchor, index and counts. At 3000, rebase: a's d = 2000
	// makes (1, 0) in [3000, 5000): 8000 - 2000 → 3; finish: a expired at
	// 2000 + min(1s, 2s) = 3000: 4; b, e = 1000: 8000 - 2000 - 2000 → 2.
	for r, want := range map[string][]int{"rebase": {3, 2}, "finish": {4, 2}} {
		s := profile(t, "sliding-counter:align=first-grid,reconfigure="+r, 4, time.Second)
		assert.Equal(t, []bool{true, true, true}, answers(s, "a", 0, 0, 1000))
		require.NoError(t, s.Configure(at(1100), 4, 2*time.Second))
		assert.Equal(t, []bool{true, true, true}, answers(s, "b", 0, 0, 2000))
		assert.Equal(t, want, []int{left(s, 3000, "a"), left(s, 3000, "b")}, r)
		assert.NotEqual(t, s.StateKey("a"), s.StateKey("b"), r)
	}
}
