package model

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// everySpec is every profile and parameter combination the tests cover.
var everySpec = []string{
	"sliding-log",
	"fixed-window:align=epoch", "fixed-window:align=epoch,count-denied=true,query=read",
	"fixed-window:align=go-zero", "fixed-window:align=go-zero,count-denied=true,query=write",
	"fixed-window:align=first-grid", "fixed-window:align=first-grid,count-denied=true,query=read",
	"fixed-window:align=first-hit", "fixed-window:align=first-hit,count-denied=true,query=read",
	"fixed-window:align=elastic", "fixed-window:align=elastic,count-denied=true,query=read", "fixed-window:align=elastic-allowed",
	"sliding-counter", "sliding-counter:count-denied=true",
	"sliding-counter:align=first-grid", "sliding-counter:align=first-grid,count-denied=true",
	"sliding-counter:admit=at-most", "sliding-counter:align=first-grid,admit=at-most,count-denied=true",
	"sliding-counter:align=go-zero", "sliding-counter:align=go-zero,admit=at-most,count-denied=true",
	"gcra", "gcra:burst=1", "gcra:burst=7",
	"token-bucket", "token-bucket:capacity=2", "token-bucket:refill=interval", "token-bucket:refill=interval,capacity=9",
}

func TestParseVariant(t *testing.T) {
	for _, s := range everySpec {
		sp, err := ParseVariant(s)
		require.NoError(t, err, s)
		again, err := ParseVariant(sp.String())
		require.NoError(t, err)
		assert.Equal(t, sp.String(), again.String(), "String round-trips")
		assert.Equal(t, sp.Params, again.Params)
		assert.Equal(t, sp.Name, sp.Algorithm().Name, "the variant knows its algorithm")
		_, err = sp.New(5, time.Second)
		require.NoError(t, err)
	}
	def, err := ParseVariant("")
	require.NoError(t, err)
	assert.True(t, def.IsSlidingLog())
	assert.Equal(t, "fixed-window:align=first-hit,count-denied=true,query=read", MustVariant("fixed-window:count-denied=true,align=first-hit").String())
	for bad, want := range map[string]string{
		"fixed":                           `unknown profile "fixed"`,
		"fixed-window:align=sideways":     "want one of epoch, go-zero, first-grid, first-hit",
		"fixed-window:burst=3":            `no parameter "burst"`,
		"gcra:burst=0":                    "whole number",
		"gcra:burst":                      "key=value",
		"sliding-log:x=1":                 "it takes none",
		"token-bucket:refill=continuous,": "key=value",
	} {
		_, err := ParseVariant(bad)
		if assert.Error(t, err, bad) {
			assert.Contains(t, err.Error(), want, bad)
		}
	}
}

// schedule drives p and, at every step, checks the profile-wide rules:
// Remaining is how many requests in a row would be allowed now, and
// RetryAfter is the first instant one would.
func TestProfileRules(t *testing.T) {
	for _, spec := range everySpec {
		t.Run(spec, func(t *testing.T) {
			for _, seed := range testtier.Seeds(t, 40, 10) {
				rng := rand.New(rand.NewPCG(seed, 3))
				n, w := 1+rng.IntN(6), time.Duration(20+rng.IntN(300))*time.Millisecond
				p := profile(t, spec, n, w)
				now := time.UnixMilli(epochMs + rng.Int64N(1000))
				for step := range 150 {
					u := fmt.Sprint("u", rng.IntN(2))
					left, err := p.Remaining(now, u)
					require.NoError(t, err)
					in := p.Clone()
					for k := range left + 1 {
						ok, _ := in.Allow(now, u)
						require.Equal(t, k < left, ok, "seed %d step %d: remaining %d, request %d", seed, step, left, k+1)
					}
					if d := p.RetryAfter(now, u); d > 0 {
						require.Zero(t, left, "seed %d step %d", seed, step)
						before, after := p.Clone(), p.Clone()
						ok, _ := before.Allow(now.Add(d-time.Millisecond), u)
						require.False(t, ok, "seed %d step %d: denied just before retry-after %v", seed, step, d)
						ok, _ = after.Allow(now.Add(d), u)
						require.True(t, ok, "seed %d step %d: allowed at retry-after %v", seed, step, d)
					} else {
						require.NotZero(t, left, "seed %d step %d: retry-after 0 means one is allowed", seed, step)
					}
					if life := p.Lifetime(now, u); rng.IntN(4) == 0 {
						// From now+life on, u answers as a fresh user.
						at := now.Add(life + time.Duration(rng.IntN(3))*time.Millisecond)
						old, fresh := p.Clone(), p.Clone()
						fresh.Reset(u)
						for range n + 1 {
							a, _ := old.Allow(at, u)
							b, _ := fresh.Allow(at, u)
							require.Equal(t, b, a, "seed %d step %d: after the lifetime %v, as fresh", seed, step, life)
						}
					}
					switch r := rng.IntN(10); {
					case r < 6:
						p.Allow(now, u)
					case r < 7:
						p.Reset(u)
					default:
						now = now.Add(time.Duration(rng.IntN(int(w.Milliseconds())/2+1)) * time.Millisecond)
					}
				}
			}
		})
	}
}

// equivalent runs the same random schedule on a and b and requires the
// same decisions.
func equivalent(t *testing.T, a, b string) {
	t.Helper()
	equivalentWith(t, a, b, func(rng *rand.Rand) time.Duration { return time.Duration(20+rng.IntN(500)) * time.Millisecond })
}

// equivalentWith is equivalent with the windows window draws.
func equivalentWith(t *testing.T, a, b string, window func(*rand.Rand) time.Duration) {
	t.Helper()
	for _, seed := range testtier.Seeds(t, 60, 20) {
		rng := rand.New(rand.NewPCG(seed, 5))
		n, w := 1+rng.IntN(6), window(rng)
		p, q := profile(t, a, n, w), profile(t, b, n, w)
		now := time.UnixMilli(epochMs + rng.Int64N(1000))
		for step := range 300 {
			u := fmt.Sprint("u", rng.IntN(2))
			if rng.IntN(3) == 0 {
				now = now.Add(time.Duration(rng.IntN(int(w.Milliseconds())/3+1)) * time.Millisecond)
			}
			if rng.IntN(4) != 0 { // else only a query: on a fresh user too
				x, _ := p.Allow(now, u)
				y, _ := q.Allow(now, u)
				require.Equal(t, x, y, "%s and %s, seed %d step %d", a, b, seed, step)
			}
			if rng.IntN(2) == 0 {
				r, _ := p.Remaining(now, u)
				s, _ := q.Remaining(now, u)
				require.Equal(t, r, s, "%s and %s remaining, seed %d step %d", a, b, seed, step)
			}
		}
	}
}

// GCRA and a continuously refilled token bucket decide alike; so do an
// interval-refilled bucket of N and a fixed window opened by the first
// request (with queries that write or not, alike), and a fixed window
// counting denied requests or not, while the limit stays the same:
// identify groups them, the docs say so.
func TestEquivalentProfiles(t *testing.T) {
	equivalent(t, "gcra", "token-bucket")
	equivalent(t, "gcra:burst=3", "token-bucket:capacity=3")
	equivalent(t, "token-bucket:refill=interval", "fixed-window:align=first-hit")
	equivalent(t, "token-bucket:refill=interval,query=write", "fixed-window:align=first-hit,query=write")
	equivalent(t, "gcra", "token-bucket:expire=idle,query=write")
	equivalent(t, "fixed-window:align=epoch", "fixed-window:align=epoch,query=write")
	for _, align := range []string{"epoch", "first-grid", "first-hit", "elastic", "elastic-allowed"} {
		equivalent(t, "fixed-window:align="+align, "fixed-window:count-denied=true,align="+align)
	}
}

// A raised limit tells the first-hit group apart: 3 requests under a
// limit of 2, then 4 under 5 at the same instant (strict/raised-limit).
func TestRaisedLimitTellsTheFirstHitGroupApart(t *testing.T) {
	allowed := map[string]int{}
	for _, spec := range []string{"fixed-window:align=first-hit", "fixed-window:align=first-hit,count-denied=true,query=read", "token-bucket:refill=interval"} {
		p := profile(t, spec, 2, time.Minute)
		allowed[spec] = 0
		answers(p, "u", 0, 0, 0)
		require.NoError(t, p.Configure(time.UnixMilli(0), 5, time.Minute))
		for _, ok := range answers(p, "u", 0, 0, 0, 0) {
			if ok {
				allowed[spec]++
			}
		}
	}
	assert.Equal(t, map[string]int{"fixed-window:align=first-hit": 3, "fixed-window:align=first-hit,count-denied=true,query=read": 2, "token-bucket:refill=interval": 0}, allowed)
}

// With every interval a point, the search oracle is exact: each answer of
// the profile is certain, and its opposite impossible.
func TestSearchExactOnPoints(t *testing.T) {
	seeds := testtier.Seeds(t, 15, 5)
	for _, spec := range everySpec[1:] {
		for _, seed := range seeds {
			rng := rand.New(rand.NewPCG(seed, 11))
			n, w := 1+rng.IntN(5), time.Duration(50+rng.IntN(500))*time.Millisecond
			p := profile(t, spec, n, w)
			o, err := newSearch(MustVariant(spec), n, w)
			require.NoError(t, err)
			now := time.UnixMilli(epochMs)
			for step := range 120 {
				u := fmt.Sprint("u", rng.IntN(2))
				var op TimedOp
				switch r := rng.IntN(10); {
				case r < 5:
					ok, _ := p.Allow(now, u)
					op = TimedOp{Kind: OpAllow, User: u, Allowed: ok}
				case r < 7:
					left, _ := p.Remaining(now, u)
					op = TimedOp{Kind: OpRemaining, User: u, Remaining: left}
				case r < 8:
					p.Reset(u)
					op = TimedOp{Kind: OpReset, User: u}
				default:
					now = now.Add(time.Duration(rng.IntN(200)) * time.Millisecond)
					continue
				}
				op.Lo, op.Hi = now, now
				if op.Kind == OpAllow {
					bad := op
					bad.Allowed = !op.Allowed
					probe, _ := newSearch(MustVariant(spec), n, w)
					probe.users = o.cloneUsers()
					j, _, _ := probe.Judge(bad)
					require.Equal(t, Impossible, j, "%s seed %d step %d: the opposite of %+v", spec, seed, step, op)
				}
				j, why, _ := o.Judge(op)
				require.Equal(t, Certain, j, "%s seed %d step %d: %+v: %s", spec, seed, step, op, why)
			}
		}
	}
}

// The search never fails a correct limiter: answers given at true instants
// inside random intervals are never impossible, bursts included.
func TestSearchSoundOnIntervals(t *testing.T) {
	seeds := testtier.Seeds(t, 15, 5)
	for _, spec := range everySpec[1:] {
		decided := 0
		for _, seed := range seeds {
			rng := rand.New(rand.NewPCG(seed, 13))
			n, w := 1+rng.IntN(5), time.Duration(50+rng.IntN(500))*time.Millisecond
			p := profile(t, spec, n, w)
			o, _ := newSearch(MustVariant(spec), n, w)
			now := time.UnixMilli(epochMs)
			for step := range 100 {
				u := fmt.Sprint("u", rng.IntN(2))
				lo := now.Add(-time.Duration(rng.IntN(4)) * time.Millisecond)
				hi := now.Add(time.Duration(rng.IntN(4)) * time.Millisecond)
				switch r := rng.IntN(10); {
				case r < 5:
					ok, _ := p.Allow(now, u)
					j, why, _ := o.Judge(TimedOp{Kind: OpAllow, User: u, Allowed: ok, Lo: lo, Hi: hi})
					require.NotEqual(t, Impossible, j, "%s seed %d step %d: %s", spec, seed, step, why)
					if j == Certain {
						decided++
					}
				case r < 6:
					left, _ := p.Remaining(now, u)
					j, why, _ := o.Judge(TimedOp{Kind: OpRemaining, User: u, Remaining: left, Lo: lo, Hi: hi})
					require.NotEqual(t, Impossible, j, "%s seed %d step %d: %s", spec, seed, step, why)
				case r < 7:
					k, allowed := 1+rng.IntN(2*n), 0
					at := now
					for range k {
						if ok, _ := p.Allow(at, u); ok {
							allowed++
						}
						if rng.IntN(3) == 0 {
							at = at.Add(time.Millisecond)
						}
					}
					j, want := o.JudgeBurst(u, lo, at.Add(time.Duration(rng.IntN(3))*time.Millisecond), k, allowed)
					require.NotEqual(t, Impossible, j, "%s seed %d step %d: burst of %d, %d allowed, want %s", spec, seed, step, k, allowed, want)
					now = at
				default:
					now = now.Add(time.Duration(5+rng.IntN(200)) * time.Millisecond)
				}
			}
		}
		assert.Positive(t, decided, "%s: the search decides something", spec)
	}
}

func (s *searchOracle) cloneUsers() map[string]*searchUser {
	out := map[string]*searchUser{}
	for u, su := range s.users {
		c := &searchUser{off: su.off}
		for _, x := range su.states {
			c.states = append(c.states, cand{p: x.p.Clone().(Replayable), low: x.low, n: x.n})
		}
		out[u] = c
	}
	return out
}

// A limiter deciding on microsecond instants (Redis TIME, a float clock)
// is judged on millisecond intervals, widened by a millisecond each way:
// never impossible. The microsecond limiter is the same profile with every
// duration a thousand times longer.
func TestSearchSoundForSubMillisecondLimiters(t *testing.T) {
	seeds := testtier.Seeds(t, 20, 5)
	for _, spec := range []string{"gcra", "gcra:burst=2", "token-bucket", "fixed-window:align=epoch", "sliding-counter", "token-bucket:refill=interval"} {
		for _, seed := range seeds {
			rng := rand.New(rand.NewPCG(seed, 17))
			n, w := 1+rng.IntN(5), time.Duration(50+rng.IntN(300))*time.Millisecond
			micro := profile(t, spec, n, w*1000) // its "ms" are µs
			o, err := NewOracle(MustVariant(spec), n, w)
			require.NoError(t, err)
			us := int64(epochMs) * 1000
			for step := range 200 {
				u := fmt.Sprint("u", rng.IntN(2))
				sent := us
				us += rng.Int64N(900) // the decision, within the call
				ok, _ := micro.Allow(time.UnixMilli(us), u)
				answered := us + rng.Int64N(900)
				j, why, _ := o.Judge(TimedOp{Kind: OpAllow, User: u, Allowed: ok, Lo: time.UnixMilli(sent / 1000), Hi: time.UnixMilli(answered / 1000)})
				require.NotEqual(t, Impossible, j, "%s seed %d step %d: %s", spec, seed, step, why)
				us = answered + rng.Int64N(int64(w.Microseconds())/3)
			}
		}
	}
}

// align=go-zero lays windows out as time.Time.Truncate does, from Go's
// zero time: the fixed window's and the weighted counter's windows start
// where Truncate puts them, for short windows and for the longest.
func TestGoZeroWindowsAreTruncates(t *testing.T) {
	require.Equal(t, time.Time{}.UnixMilli(), int64(goZeroMs))
	rng := rand.New(rand.NewPCG(1, 37))
	for range 2000 {
		w := 1 + rng.Int64N(contract.MaxWindow.Milliseconds())
		if rng.IntN(2) == 0 {
			w = 1 + rng.Int64N(10*24*3600*1000)
		}
		now := epochMs + rng.Int64N(400*365*24*3600*1000) - 200*365*24*3600*1000
		want := time.UnixMilli(now).Truncate(ms(w)).UnixMilli()
		f := &fixedWindow{align: "go-zero", n: 1, w: w}
		require.Equal(t, want, f.current(now, "u").start, "fixed window of %dms at %d", w, now)
		c := &slidingCounter{align: "go-zero", n: 1, w: w}
		st := c.at(now, "u")
		require.Equal(t, want, st.a+st.k*w, "weighted counter of %dms at %d", w, now)
	}
}

// The grids of the epoch and of Go's zero time are one where the window
// divides 62,135,596,800,000 ms (every divisor of two days does): the
// profiles decide alike there. Where it does not (a week, 30 days, 365
// days), a window's edges are elsewhere: 0001-01-01 is 719,162 days
// before 1970-01-01, so Go's edges of 365 days are 112 days before the
// epoch's (253 after).
func TestGoZeroGridIsTheEpochsWhereTheWindowDividesTheOffset(t *testing.T) {
	divisors := []time.Duration{time.Millisecond, 6 * time.Millisecond, 1600 * time.Millisecond, time.Second, time.Minute, 90 * time.Minute, 24 * time.Hour, 48 * time.Hour}
	pick := func(rng *rand.Rand) time.Duration { return divisors[rng.IntN(len(divisors))] }
	for _, w := range divisors {
		require.Zero(t, -goZeroMs%w.Milliseconds(), "%v divides the offset", w)
	}
	equivalentWith(t, "fixed-window:align=epoch", "fixed-window:align=go-zero", pick)
	equivalentWith(t, "sliding-counter:align=epoch", "sliding-counter:align=go-zero", pick)
	equivalentWith(t, "sliding-counter:align=epoch,admit=at-most,count-denied=true", "sliding-counter:align=go-zero,admit=at-most,count-denied=true", pick)
	for _, c := range []struct {
		w   time.Duration
		off time.Duration // how far Go's edges are after the epoch's
	}{{7 * 24 * time.Hour, 4 * 24 * time.Hour}, {30 * 24 * time.Hour, 28 * 24 * time.Hour}, {365 * 24 * time.Hour, 253 * 24 * time.Hour}, {7 * time.Second, 3 * time.Second}} {
		epoch := profile(t, "fixed-window:align=epoch", 1, c.w)
		goZero := profile(t, "fixed-window:align=go-zero", 1, c.w)
		edge := time.UnixMilli(0).Add(c.off) // a window of Go's grid starts here
		for _, p := range []Profile{epoch, goZero} {
			ok, _ := p.Allow(edge.Add(-time.Millisecond), "u")
			require.True(t, ok)
		}
		a, _ := epoch.Allow(edge, "u")
		b, _ := goZero.Allow(edge, "u")
		assert.False(t, a, "%v: the epoch's window goes on past Go's edge", c.w)
		assert.True(t, b, "%v: Go's grid starts a window %v after the epoch's", c.w, c.off)
		assert.Equal(t, edge, edge.Truncate(c.w), "%v: Truncate puts an edge there", c.w)
	}
}
