package model

import (
	"fmt"
	"maps"
	"math/big"
	"time"

	"github.com/rlconform/rlconform/contract"
)

// ProfileSmoothBursty names Guava's SmoothBursty RateLimiter.
const ProfileSmoothBursty = "smooth-bursty"

// smoothBurstyStored are the values of its parameter "stored": the time
// of permits a limiter stores while idle. RateLimiter.create gives 1s
// (SmoothBursty's maxBurstSeconds, RateLimiter.java); Guava has no public
// way to give another.
var smoothBurstyStored = map[string]int64{"1s": 1000}

// smoothBursty is Guava's SmoothBursty: permits at a rate of N per W (an
// interval T = W/N ms, kept exact), a limiter made at a user's first
// request with none stored. Each user has the instant next from which a
// request is allowed (nextFreeTicket) and a credit c, the time of the
// permits stored (storedPermits × T), at most S (the parameter stored). A
// request of cost n at t is allowed when next <= t, whatever n (a permit
// is lent: its cost is owed by the next request); then the idle time
// since next is banked, c = min(S, c + t − next), and the cost is paid
// from the credit first: next = t + max(0, n×T − c), c = max(0, c − n×T).
// A refused request changes nothing. It is not a burst of B requests: a
// fresh user has nothing stored (1 request, the lent one, then one every
// T), and what a user stores is a time, S, so that an idle limiter of 5
// per second admits 6 at once and one of 5 per minute (T = 12 s) only 1,
// its next one 1 s sooner.
//
// A change of N or W (setRate) banks the idle time at the old rate, keeps
// next, and keeps the credit as a time (storedPermits scaled by the ratio
// of the maximums, SmoothBursty.doSetRate): the stored permits are worth
// the same wait.
type smoothBursty struct {
	stored int64 // S, ms
	n      int
	w      int64
	users  map[string]burstyUser
}

// burstyUser is a user's state; values are never changed in place.
type burstyUser struct {
	next, credit *big.Rat // ms
}

func (s *smoothBursty) t() *big.Rat { return big.NewRat(s.w, int64(s.n)) }

// Describe implements [Profile].
func (s *smoothBursty) Describe() string {
	return fmt.Sprintf("Guava's SmoothBursty (%d per %v, one every %v, up to %v of permits stored while idle, none at first; a request of any cost allowed while nothing is owed, its whole cost owed after it)",
		s.n, ms(s.w), ms(s.w)/time.Duration(s.n), ms(s.stored))
}

// Limit implements [Profile].
func (s *smoothBursty) Limit() int { return s.n }

// Window implements [Profile].
func (s *smoothBursty) Window() time.Duration { return ms(s.w) }

// banked is user's state at t: next and the credit with the idle time
// since next banked (a fresh user: t, nothing stored).
func (s *smoothBursty) banked(t int64, user string) (next, credit *big.Rat) {
	now := new(big.Rat).SetInt64(t)
	u, ok := s.users[user]
	if !ok {
		return now, new(big.Rat)
	}
	if u.next.Cmp(now) >= 0 {
		return u.next, u.credit
	}
	credit = new(big.Rat).Add(u.credit, new(big.Rat).Sub(now, u.next))
	if limit := new(big.Rat).SetInt64(s.stored); credit.Cmp(limit) > 0 {
		credit = limit
	}
	return now, credit
}

// Allow implements [Profile].
func (s *smoothBursty) Allow(now time.Time, user string) (bool, error) {
	return s.AllowN(now, user, 1)
}

// AllowN implements [Weighted]: allowed when next <= t, whatever n; then
// the cost is paid from the credit, the rest owed. Cost 0 is allowed and
// changes nothing.
func (s *smoothBursty) AllowN(now time.Time, user string, n int) (bool, error) {
	if err := validateRequest(user, n); err != nil {
		return false, err
	}
	if n == 0 {
		return true, nil
	}
	t := now.UnixMilli()
	next, credit := s.banked(t, user)
	if next.Cmp(new(big.Rat).SetInt64(t)) > 0 {
		return false, nil
	}
	cost := new(big.Rat).Mul(big.NewRat(int64(n), 1), s.t())
	owed := new(big.Rat).Sub(cost, credit)
	left := new(big.Rat).Neg(owed)
	if owed.Sign() < 0 {
		owed.SetInt64(0)
	}
	if left.Sign() < 0 {
		left.SetInt64(0)
	}
	if s.users == nil {
		s.users = map[string]burstyUser{}
	}
	s.users[user] = burstyUser{next: owed.Add(owed, next), credit: left}
	return true, nil
}

// Remaining implements [Profile]: none while something is owed, else the
// lent one and a request for each whole T of credit.
func (s *smoothBursty) Remaining(now time.Time, user string) (int, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return 0, err
	}
	t := now.UnixMilli()
	next, credit := s.banked(t, user)
	if next.Cmp(new(big.Rat).SetInt64(t)) > 0 {
		return 0, nil
	}
	q := new(big.Rat).Quo(credit, s.t())
	return int(new(big.Int).Quo(q.Num(), q.Denom()).Int64()) + 1, nil
}

// RetryAfter implements [Profile]: until next, rounded up to the
// millisecond.
func (s *smoothBursty) RetryAfter(now time.Time, user string) time.Duration {
	t := now.UnixMilli()
	next, _ := s.banked(t, user)
	return ms(max(0, ceilRat(new(big.Rat).Sub(next, new(big.Rat).SetInt64(t)))))
}

// Lifetime implements [Profile]: a user stores permits until it is idle
// S past next; from then on it answers as one with S stored, not as a
// fresh one (which has none): its state matters for ever. A limiter
// forgets it at its own risk, as the card's map never does.
func (s *smoothBursty) Lifetime(now time.Time, user string) time.Duration {
	if _, ok := s.users[user]; !ok {
		return 0
	}
	return contract.MaxWindow
}

// Reset implements [Profile].
func (s *smoothBursty) Reset(user string) error {
	if err := contract.ValidateUserID(user); err != nil {
		return err
	}
	delete(s.users, user)
	return nil
}

// Configure implements [Profile], as setRate: each user's idle time is
// banked at now, next is kept, and the credit kept as a time.
func (s *smoothBursty) Configure(now time.Time, n int, w time.Duration) error {
	if err := contract.ValidateConfig(n, w); err != nil {
		return err
	}
	t := now.UnixMilli()
	for name := range s.users {
		next, credit := s.banked(t, name)
		s.users[name] = burstyUser{next: next, credit: credit}
	}
	s.n, s.w = n, w.Milliseconds()
	return nil
}

// Explain implements [Profile].
func (s *smoothBursty) Explain(now, base time.Time, user string) string {
	u, ok := s.users[user]
	if !ok {
		return fmt.Sprintf("%s is fresh: nothing stored, one request allowed (its cost owed)", user)
	}
	f, _ := u.next.Float64()
	return fmt.Sprintf("%s may make its next request from %s (%s), with %s ms of permits stored then, and up to %v stored while idle",
		user, offset(time.UnixMilli(int64(f)), base), u.next.FloatString(3), u.credit.FloatString(3), ms(s.stored))
}

// Clone implements [Profile].
func (s *smoothBursty) Clone() Profile {
	c := *s
	c.users = maps.Clone(s.users) // values are never changed in place
	return &c
}

// StateKey implements [Profile]: next and the credit.
func (s *smoothBursty) StateKey(user string) string {
	u, ok := s.users[user]
	if !ok {
		return ""
	}
	return u.next.RatString() + "+" + u.credit.RatString()
}

// smoothBurstyAlgorithm describes Guava's SmoothBursty.
func smoothBurstyAlgorithm() Algorithm {
	return Algorithm{
		Name:    ProfileSmoothBursty,
		Summary: "Guava's SmoothBursty: one permit every W/N, a request allowed while nothing is owed, its cost paid from the permits stored while idle (up to a time, stored; none at first) and the rest owed",
		Params: []ParamInfo{
			{"stored", "1s", []string{"1s"}, "the time of permits stored while idle, S (RateLimiter.create's maxBurstSeconds): a count of S×N/W, not a burst of requests; a fresh limiter stores none"},
		},
		New: func(p map[string]string, n int, w time.Duration) Replayable {
			return &smoothBursty{stored: smoothBurstyStored[p["stored"]], n: n, w: w.Milliseconds()}
		},
		Cost:              "n permits (T = W/N): allowed when nothing is owed (next <= t), whatever n; then c = min(S, c + t − next) and next = t + max(0, n×T − c), c = max(0, c − n×T); refused, nothing changes; " + costShared,
		GradesLimitChange: true,
		Readings: []Reading{{Name: "keep", Doc: "setRate: the idle time banked at the change, next kept, the stored permits kept as a time",
			Seen: "Guava's RateLimiter.setRate (SmoothBursty.doSetRate)"}},
		Candidates: func([]string) []string { return []string{"stored=1s"} },
		Alike: func(p map[string]string, _ int, _, _ bool) string {
			return "smooth-bursty/" + p["stored"]
		},
		Anchored:        func(map[string]string) bool { return true },
		Remedy:          "permits stored while idle let a burst through after a pause, one every W/N otherwise: keep a log of the instants of allowed requests instead",
		RemainingVaries: true,
		Envelope: func(p map[string]string, n int64, w time.Duration) Envelope {
			c := 1 + smoothBurstyStored[p["stored"]]*n/w.Milliseconds()
			return bucketEnvelope(c, n, w, false, fmt.Sprintf("a SmoothBursty of %d stored and one lent", c-1))
		},
	}
}
