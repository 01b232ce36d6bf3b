package honest

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// GCRAProfile is the profile [GCRAMiddleware] implements.
const GCRAProfile = "gcra"

// GCRAMiddleware is net/http rate limiting by the generic cell rate
// algorithm in memory, as in-process middlewares write it: n requests per
// w with a burst of n for each key (an emission interval T = w/n, a
// theoretical arrival time TAT per key). Every answer carries
// X-RateLimit-Limit, X-RateLimit-Remaining (after the request) and
// X-RateLimit-Reset: the whole seconds until the whole quota is back,
// ⌈TAT − now⌉, rounded up; a refusal is 429 with Retry-After, the whole
// seconds until a request is allowed, rounded up. A request without a key
// is 400. rlconform's http/ratelimit-fields once failed it, reading
// X-RateLimit-Reset as the wait for the next request only.
//
// w/n is kept in nanoseconds: choose n and w with w a multiple of n, as
// the tests do, for the exact arithmetic of the profile.
func GCRAMiddleware(n int, w time.Duration, key func(*http.Request) string) func(http.Handler) http.Handler {
	g := &gcra{t: w / time.Duration(n), burst: n, tat: map[string]time.Time{}}
	limit := strconv.Itoa(n)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			k := key(r)
			if k == "" {
				http.Error(rw, "no rate-limit key", http.StatusBadRequest)
				return
			}
			d := g.decide(k, time.Now())
			h := rw.Header()
			h.Set("X-RateLimit-Limit", limit)
			h.Set("X-RateLimit-Remaining", strconv.Itoa(d.remaining))
			h.Set("X-RateLimit-Reset", strconv.FormatInt(ceilSeconds(d.reset), 10))
			if !d.allowed {
				h.Set("Retry-After", strconv.FormatInt(ceilSeconds(d.retry), 10))
				http.Error(rw, "too many requests", http.StatusTooManyRequests)
				return
			}
			next.ServeHTTP(rw, r)
		})
	}
}

// gcra is the per-key state of [GCRAMiddleware].
type gcra struct {
	t     time.Duration // the emission interval
	burst int
	mu    sync.Mutex
	tat   map[string]time.Time // a key whose TAT has passed is forgotten
	seen  int                  // decisions, for the sweep of forgotten keys
}

type gcraDecision struct {
	allowed      bool
	remaining    int
	reset, retry time.Duration
}

func (g *gcra) decide(key string, now time.Time) gcraDecision {
	g.mu.Lock()
	defer g.mu.Unlock()
	tol := time.Duration(g.burst-1) * g.t
	tat := g.tat[key]
	if tat.Before(now) {
		tat = now
	}
	d := gcraDecision{allowed: tat.Sub(now) <= tol}
	if d.allowed {
		tat = tat.Add(g.t)
		g.tat[key] = tat
	}
	if left := tol - tat.Sub(now); left >= 0 {
		d.remaining = int(left/g.t) + 1
	}
	d.reset = tat.Sub(now)
	if !d.allowed {
		d.retry = tat.Sub(now) - tol
	}
	if g.seen++; g.seen%1024 == 0 { // forget what no longer matters
		for k, t := range g.tat {
			if !t.After(now) {
				delete(g.tat, k)
			}
		}
	}
	return d
}

// ceilSeconds is d in whole seconds, rounded up.
func ceilSeconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}
