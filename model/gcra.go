package model

import (
	"fmt"
	"maps"
	"math/big"
	"time"

	"github.com/rlconform/rlconform/contract"
)

// gcraModel is the generic cell rate algorithm, a leaky bucket as a meter: a
// rate of N per W, so an emission interval T = W/N ms (a fraction, kept
// exact), and a burst B (default N). Each user has a theoretical arrival
// time TAT (none when fresh: TAT = t). A request at t is allowed when
//
//	max(TAT, t) - t <= (B-1)*T
//
// and then TAT = max(TAT, t) + T; a denied request changes nothing.
// Remaining is the number allowed at t one after the other:
// floor(((B-1)*T - (max(TAT,t) - t)) / T) + 1, or 0; a denied request may
// retry at TAT - (B-1)*T, rounded up to the millisecond. Its decisions are
// those of a token bucket of capacity B refilled continuously at N per W.
//
// A request of cost n (cost=whole, the default) is n emission intervals,
// all or nothing: allowed when max(TAT, t) + n*T - t <= B*T. With
// cost=debt it is allowed whenever a unit request would be, max(TAT, t) -
// t <= (B-1)*T, whatever n, and TAT = max(TAT, t) + n*T all the same: the
// user may owe more than a burst, and later requests wait until TAT comes
// back within (B-1)*T of them (Guava's RateLimiter).
//
// A change of N or W at c reads a user's TAT as the reading says
// ([gcraReadings]): kept (keep-tat), its excess drained at the new rate
// from the last allowed request l (drain), settled as a bucket at c
// (settle), or forgotten (fresh).
type gcraModel struct {
	burst   int // 0: follow N
	reading string
	debt    bool // cost=debt: a request of any cost while nothing is owed
	n       int
	w       int64
	users   map[string]gcraUser
}

// gcraUser is a user's state; values are never changed in place.
type gcraUser struct {
	tat *big.Rat // ms
	// last is the instant of the latest allowed request, l (drain reads
	// the excess from it).
	last int64
}

// The readings of a change of configuration of GCRA, the model's first.
const (
	gcraKeepTAT = "keep-tat"
	gcraDrain   = "drain"
	gcraSettle  = "settle"
	gcraFresh   = "fresh"
)

// gcraReadings are GCRA's honest readings of a change of N or W at c for a
// user with history (docs/profiles.md, "A change of configuration").
func gcraReadings() []Reading {
	return []Reading{
		{Name: gcraKeepTAT, Doc: "TAT is kept as an instant and read with the new T' = W'/N' and B'",
			Seen: "go-redis/redis_rate (allowN: rate and burst are arguments of each call), throttled (GCRARateLimiterCtx)"},
		{Name: gcraDrain, Doc: "the excess, in requests, is kept and drained at the new rate from the last allowed request l: TAT' = l + (TAT − l)·T'/T",
			Seen: "nginx limit_req (excess and last kept across a reload, rate and burst from the new configuration)"},
		{Name: gcraSettle, Doc: "a bucket settled at the change c: x = B − max(0, TAT − c)/T tokens at the old rate, min(x, B') kept: TAT' = c + (B' − min(x, B'))·T'",
			Seen: "golang.org/x/time/rate (SetLimitAt, SetBurstAt)"},
		{Name: gcraFresh, Doc: "every user is forgotten at a change",
			Seen: "a store keyed on the rate; nginx limit_req when the zone's size changes"},
	}
}

// readingOf is the reading New is given: "any" (or none) is the first.
func readingOf(p map[string]string, first string) string {
	if r := p[ReconfigureParam]; r != "" && r != ReadingAny {
		return r
	}
	return first
}

// Describe implements [Profile].
func (g *gcraModel) Describe() string {
	s := fmt.Sprintf("GCRA (a token bucket of %d refilled continuously at %d per %v, one every %v)", g.b(), g.n, ms(g.w), g.interval())
	if g.debt {
		s += ", a request of any cost allowed while nothing is owed, its whole cost owed after it"
	}
	return s
}

func (g *gcraModel) b() int {
	if g.burst == 0 {
		return g.n
	}
	return g.burst
}

func (g *gcraModel) interval() time.Duration { return ms(g.w) / time.Duration(g.n) }

// Limit implements [Profile].
func (g *gcraModel) Limit() int { return g.n }

// Window implements [Profile].
func (g *gcraModel) Window() time.Duration { return ms(g.w) }

// t is the emission interval W/N.
func (g *gcraModel) t() *big.Rat { return big.NewRat(g.w, int64(g.n)) }

// slack is (B-1)*T - (max(TAT,t) - t): allowed when not negative. It also
// returns max(TAT, t).
func (g *gcraModel) slack(t int64, user string) (slack, from *big.Rat) {
	now := new(big.Rat).SetInt64(t)
	from = now
	if u, ok := g.users[user]; ok && u.tat.Cmp(now) > 0 {
		from = u.tat
	}
	slack = new(big.Rat).Mul(big.NewRat(int64(g.b()-1), 1), g.t())
	slack.Sub(slack, new(big.Rat).Sub(from, now))
	return slack, from
}

// Allow implements [Profile].
func (g *gcraModel) Allow(now time.Time, user string) (bool, error) {
	return g.AllowN(now, user, 1)
}

// AllowN implements [Weighted]: n emission intervals, allowed when
// max(TAT, t) + n*T - t <= B*T, that is when slack - (n-1)*T >= 0 (with
// cost=debt when slack >= 0, as for one), and then TAT = max(TAT, t) +
// n*T; refused, nothing changes. Cost 0 is allowed and changes nothing.
func (g *gcraModel) AllowN(now time.Time, user string, n int) (bool, error) {
	if err := validateRequest(user, n); err != nil {
		return false, err
	}
	if n == 0 {
		return true, nil
	}
	t := now.UnixMilli()
	slack, from := g.slack(t, user)
	extra := new(big.Rat).Mul(big.NewRat(int64(n-1), 1), g.t())
	need := extra // all n must fit
	if g.debt {
		need = new(big.Rat) // as for one: nothing owed beyond the tolerance
	}
	if slack.Cmp(need) < 0 {
		return false, nil
	}
	if g.users == nil {
		g.users = map[string]gcraUser{}
	}
	last := t
	if u, ok := g.users[user]; ok {
		last = max(last, u.last) // a clock stepped back does not move l back
	}
	g.users[user] = gcraUser{tat: new(big.Rat).Add(from, extra.Add(extra, g.t())), last: last}
	return true, nil
}

// Remaining implements [Profile].
func (g *gcraModel) Remaining(now time.Time, user string) (int, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return 0, err
	}
	slack, _ := g.slack(now.UnixMilli(), user)
	if slack.Sign() < 0 {
		return 0, nil
	}
	q := new(big.Rat).Quo(slack, g.t())
	return int(new(big.Int).Quo(q.Num(), q.Denom()).Int64()) + 1, nil
}

// RetryAfter implements [Profile].
func (g *gcraModel) RetryAfter(now time.Time, user string) time.Duration {
	t := now.UnixMilli()
	slack, _ := g.slack(t, user)
	if slack.Sign() >= 0 {
		return 0
	}
	// -slack ms from now, rounded up.
	return ms(ceilRat(new(big.Rat).Neg(slack)))
}

// Lifetime implements [Profile]: until TAT.
func (g *gcraModel) Lifetime(now time.Time, user string) time.Duration {
	u, ok := g.users[user]
	if !ok {
		return 0
	}
	return ms(max(0, ceilRat(new(big.Rat).Sub(u.tat, new(big.Rat).SetInt64(now.UnixMilli())))))
}

// ceilRat rounds r up to a whole number.
func ceilRat(r *big.Rat) int64 {
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

// Reset implements [Profile].
func (g *gcraModel) Reset(user string) error {
	if err := contract.ValidateUserID(user); err != nil {
		return err
	}
	delete(g.users, user)
	return nil
}

// Configure implements [Profile]: T and B follow N and W; a change reads
// each user's TAT as the model's reading says. The same N and W change
// nothing.
func (g *gcraModel) Configure(now time.Time, n int, w time.Duration) error {
	if err := contract.ValidateConfig(n, w); err != nil {
		return err
	}
	if n == g.n && w.Milliseconds() == g.w {
		return nil
	}
	oldT, oldB := g.t(), g.b()
	g.n, g.w = n, w.Milliseconds()
	switch g.reading {
	case gcraDrain:
		g.drain(oldT)
	case gcraSettle:
		g.settle(now.UnixMilli(), oldT, oldB)
	case gcraFresh:
		g.users = nil
	}
	return nil
}

// drain keeps each user's excess, in requests, from its last allowed
// request l and drains it at the new rate: TAT' = l + (TAT − l)·T'/T.
func (g *gcraModel) drain(oldT *big.Rat) {
	scale := new(big.Rat).Quo(g.t(), oldT)
	for name, u := range g.users {
		l := new(big.Rat).SetInt64(u.last)
		tat := new(big.Rat).Sub(u.tat, l)
		tat.Mul(tat, scale).Add(tat, l)
		g.users[name] = gcraUser{tat: tat, last: u.last}
	}
}

// settle reads each user as a bucket of oldB tokens refilled every oldT,
// settled at c: x = B − max(0, TAT − c)/T tokens, of which min(x, B') are
// kept, refilled at the new rate from c: TAT' = c + (B' − min(x, B'))·T'.
func (g *gcraModel) settle(c int64, oldT *big.Rat, oldB int) {
	at := new(big.Rat).SetInt64(c)
	newB := big.NewRat(int64(g.b()), 1)
	for name, u := range g.users {
		debt := new(big.Rat).Sub(u.tat, at)
		if debt.Sign() < 0 {
			debt.SetInt64(0)
		}
		x := new(big.Rat).Sub(big.NewRat(int64(oldB), 1), debt.Quo(debt, oldT))
		if x.Cmp(newB) > 0 {
			x.Set(newB)
		}
		tat := new(big.Rat).Sub(newB, x)
		tat.Mul(tat, g.t()).Add(tat, at)
		g.users[name] = gcraUser{tat: tat, last: u.last}
	}
}

// Explain implements [Profile].
func (g *gcraModel) Explain(now, base time.Time, user string) string {
	u, ok := g.users[user]
	if !ok {
		return fmt.Sprintf("%s is fresh: a burst of %d is allowed", user, g.b())
	}
	f, _ := u.tat.Float64()
	s := fmt.Sprintf("the theoretical arrival time of %s is %s (%s); a request is allowed while it is at most (B-1)×T = %d×%v after now",
		user, offset(time.UnixMilli(int64(f)), base), u.tat.FloatString(3), g.b()-1, g.interval())
	if g.reading == gcraDrain {
		s += fmt.Sprintf("; its last allowed request was at %s (a change of configuration drains its excess at the new rate from there)", offset(time.UnixMilli(u.last), base))
	}
	return s
}

// Clone implements [Profile].
func (g *gcraModel) Clone() Profile {
	c := *g
	c.users = maps.Clone(g.users) // values are never changed in place
	return &c
}

// StateKey implements [Profile]: TAT, and under drain the last allowed
// request, from which a change drains the excess.
func (g *gcraModel) StateKey(user string) string {
	u, ok := g.users[user]
	switch {
	case !ok:
		return ""
	case g.reading == gcraDrain:
		return u.tat.RatString() + "@" + fmt.Sprint(u.last)
	}
	return u.tat.RatString()
}

// gcraAlgorithm describes GCRA.
func gcraAlgorithm() Algorithm {
	return Algorithm{
		Name:    ProfileGCRA,
		Summary: "the generic cell rate algorithm (leaky bucket as a meter): one request every W/N, a burst of B",
		Params: []ParamInfo{
			{"burst", "limit", nil, "the burst B: requests allowed at once from idle (limit: follow N)"},
			costParam(),
		},
		New: func(p map[string]string, n int, w time.Duration) Replayable {
			return &gcraModel{burst: fixedParam(p["burst"]), reading: readingOf(p, gcraKeepTAT), debt: p[CostParam] == CostDebt, n: n, w: w.Milliseconds()}
		},
		Cost:     "n emission intervals (T = W/N): cost=whole, allowed when max(TAT, t) + n×T - t <= B×T (n > B is never allowed); cost=debt, allowed when max(TAT, t) - t <= (B-1)×T, as one request is, whatever n; then TAT = max(TAT, t) + n×T; refused, nothing changes; " + costShared,
		Readings: gcraReadings(),
		Candidates: func(bursts []string) []string {
			var list []string
			for _, b := range bursts {
				list = append(list, "burst="+b, "burst="+b+","+CostParam+"="+CostDebt)
			}
			return list
		},
		Alike: func(p map[string]string, n int, _, _ bool) string {
			return "bucket/" + sizeKey(p["burst"], n) + costKey(p)
		},
		Suspects:        []string{""},
		Anchored:        func(map[string]string) bool { return true },
		Remedy:          "a rate with a burst lets requests through as soon as the bucket refills, one every W/N, not when an entry leaves the window: keep a log of the instants of allowed requests instead",
		RemainingVaries: true,
		Envelope: func(p map[string]string, n int64, w time.Duration) Envelope {
			b := sizeParam(p["burst"], n)
			return bucketEnvelope(b, n, w, false, fmt.Sprintf("a GCRA of burst %d", b))
		},
	}
}

// costKey is what a variant's parameter cost adds to its key of decisions
// ([Algorithm.Alike]): nothing for cost=whole, the default.
func costKey(p map[string]string) string {
	if c := p[CostParam]; c != "" && c != CostWhole {
		return "/cost=" + c
	}
	return ""
}

// sizeKey is a burst or capacity parameter as identify compares it under
// limit n: "limit" when it is n.
func sizeKey(v string, n int) string {
	if v == fmt.Sprint(n) {
		return "limit"
	}
	return v
}

// sizeParam is a burst or capacity parameter under limit n.
func sizeParam(v string, n int64) int64 {
	if c := fixedParam(v); c > 0 {
		return int64(c)
	}
	return n
}

// bucketEnvelope bounds a bucket of capacity c refilled with n per w
// under load: continuously, or (interval) n at once every w.
func bucketEnvelope(c, n int64, w time.Duration, interval bool, what string) Envelope {
	if interval {
		return Envelope{
			Linear: []LinearBound{
				{Windows: c + n - 1, Within: 1, Rule: fmt.Sprintf("at most %d + %d − 1 allowed within any span shorter than %v (%s and one refill; its maker spent a token)", c, n, w, what)},
				{Rate: n, Windows: c + n, Rule: fmt.Sprintf("at most %d + %d + %d×E/%v allowed within any span E (at most ⌈E/W⌉ refills)", c, n, n, w)},
			},
			Under: UnderRule{Limit: min(n, c), LookbackWindows: 1, Rule: fmt.Sprintf("a denial needs the %d tokens of its last refill (less than %v before it) spent", min(n, c), w)},
		}
	}
	return Envelope{
		Linear: []LinearBound{{Rate: n, Windows: c, Rule: fmt.Sprintf("at most %d + %d×E/%v allowed within any span E (%s refilled at %d per %v)", c, n, w, what, n, w)}},
		Under:  UnderRule{Bucket: true, Capacity: c, Rule: fmt.Sprintf("%s refilled at %d per %v holds a token whatever the timing", what, n, w)},
	}
}
