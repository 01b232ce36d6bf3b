package main

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/sethvargo/go-limiter"
	"github.com/sethvargo/go-limiter/memorystore"
	"golang.org/x/time/rate"
)

// sethvargo is github.com/sethvargo/go-limiter's memory store. Its
// configuration is the store's (Tokens per Interval, fixed at New), so
// Configure makes a new store; it has no call that forgets a key (Set
// makes a new full bucket, anchored at that instant): no Reset.
type sethvargo struct {
	mu    sync.Mutex
	store limiter.Store
	n     int // the store's Tokens
}

func newSethvargo(e *env) (contractLimiter, error) {
	s := &sethvargo{}
	return s, s.Configure(context.Background(), e.limit, e.window)
}

func (s *sethvargo) current() limiter.Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.store
}

func (s *sethvargo) AllowRequest(ctx context.Context, u string) (bool, error) {
	if err := checkUser(u); err != nil {
		return false, err
	}
	_, _, _, ok, err := s.current().Take(ctx, u)
	if err != nil {
		return false, storeErr("go-limiter Take", err)
	}
	return ok, nil
}

func (s *sethvargo) GetRemainingRequests(ctx context.Context, u string) (int, error) {
	if err := checkUser(u); err != nil {
		return 0, err
	}
	limit, remaining, err := s.current().Get(ctx, u)
	if err != nil {
		return 0, storeErr("go-limiter Get", err)
	}
	// No bucket for u: Get answers 0, 0 (memorystore/store.go:162). The
	// library has no count for it; its first Take makes a full bucket of
	// the store's Tokens (store.go:138, :272-281), which is what is left.
	if limit == 0 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.n, nil
	}
	return int(remaining), nil
}

func (s *sethvargo) Reset(context.Context, string) error { return errNoReset }

func (s *sethvargo) Configure(ctx context.Context, n int, w time.Duration) error {
	st, err := memorystore.New(&memorystore.Config{Tokens: uint64(n), Interval: w})
	if err != nil {
		return err
	}
	s.mu.Lock()
	old := s.store
	s.store, s.n = st, n
	s.mu.Unlock()
	if old != nil {
		old.Close(ctx)
	}
	return nil
}

// xTime is golang.org/x/time/rate: a token bucket per user in this
// process (a Limiter of N per W, burst N, made at the user's first
// request), on the clock its *At methods take.
type xTime struct {
	e     *env
	mu    sync.Mutex
	n     int
	w     time.Duration
	users map[string]*rate.Limiter
}

func newXTime(e *env) (contractLimiter, error) {
	return &xTime{e: e, n: e.limit, w: e.window, users: map[string]*rate.Limiter{}}, nil
}

// every is N per W as a rate.Limit (events per second).
func every(n int, w time.Duration) rate.Limit { return rate.Limit(float64(n) / w.Seconds()) }

func (x *xTime) user(u string) *rate.Limiter {
	x.mu.Lock()
	defer x.mu.Unlock()
	l := x.users[u]
	if l == nil {
		l = rate.NewLimiter(every(x.n, x.w), x.n)
		x.users[u] = l
	}
	return l
}

func (x *xTime) AllowRequest(_ context.Context, u string) (bool, error) {
	if err := checkUser(u); err != nil {
		return false, err
	}
	return x.user(u).AllowN(x.e.now(), 1), nil
}

// AllowRequestN is AllowN(t, n), as given: refused when n exceeds the
// burst or the tokens (rate.go:362); a negative n is allowed and adds -n
// tokens, past the burst until the next call clamps them (rate.go:353,
// :370-377, :397-399): a refund the library takes.
func (x *xTime) AllowRequestN(_ context.Context, u string, n int) (bool, error) {
	if err := checkUser(u); err != nil {
		return false, err
	}
	return x.user(u).AllowN(x.e.now(), n), nil
}

// GetRemainingRequests is the largest n that AllowN(t, n) would admit at
// t, asked of the library without consuming: the library has no such
// call (TokensAt is float64 tokens, ReserveN consumes and CancelAt moves
// the Limiter's anchor), so grants is reserveN's own test on the
// library's own numbers.
func (x *xTime) GetRemainingRequests(_ context.Context, u string) (int, error) {
	if err := checkUser(u); err != nil {
		return 0, err
	}
	l := x.user(u)
	return remainingAt(l.TokensAt(x.e.now()), l.Limit(), l.Burst()), nil
}

// remainingAt is the largest n in [0, burst] that grants admits, given
// the tokens TokensAt reports (advance, rate.go:86-91, the value reserveN
// starts from at :350). It is not ⌊tokens⌋: at 4.999999999999999 tokens
// the library admits 5, its wait for the 1e-15 token short truncating to
// 0 ns (rate.go:417).
func remainingAt(tokens float64, limit rate.Limit, burst int) int {
	n := 0
	if tokens >= 1 {
		n = min(int(tokens), burst) // admitted without a wait: tokens - n >= 0
	}
	for n < burst && grants(tokens, limit, burst, n+1) {
		n++
	}
	return n
}

// grants is reserveN's decision for AllowN(t, n) (maxFutureReserve 0) on
// a finite limit, from the tokens advance gives: rate.go:353-362, with
// durationFromTokens (rate.go:405-418) as written there, its float64 wait
// truncated to whole nanoseconds.
func grants(tokens float64, limit rate.Limit, burst, n int) bool {
	tokens -= float64(n) // rate.go:353
	var wait time.Duration
	if tokens < 0 { // rate.go:357-359
		wait = rate.InfDuration // durationFromTokens: rate.go:406-408
		if limit > 0 {
			d := (-tokens / float64(limit)) * float64(time.Second) // rate.go:410
			if d <= float64(math.MaxInt64) {                       // rate.go:413-415
				wait = time.Duration(d) // rate.go:417
			}
		}
	}
	return n <= burst && wait <= 0 // rate.go:362
}

func (x *xTime) Reset(_ context.Context, u string) error {
	if err := checkUser(u); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.users, u)
	return nil
}

// Configure applies SetLimitAt and SetBurstAt to every user's Limiter
// (tokens settled at the old rate up to now), and the new values to users
// made later.
func (x *xTime) Configure(_ context.Context, n int, w time.Duration) error {
	now := x.e.now()
	x.mu.Lock()
	defer x.mu.Unlock()
	x.n, x.w = n, w
	for _, l := range x.users {
		l.SetLimitAt(now, every(n, w))
		l.SetBurstAt(now, n)
	}
	return nil
}
