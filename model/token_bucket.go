package model

import (
	"fmt"
	"maps"
	"math/big"
	"time"

	"github.com/rlconform/rlconform/contract"
)

// tokenBucket is a bucket of capacity C (default N) per user, made full at
// the user's first request, holding tokens that requests spend one each; a
// request is allowed when a whole token is there. Refill adds N tokens per
// W, never above C:
//
//   - continuous: (t - last)*N/W tokens at every decision, exactly (a
//     fraction): the decisions of GCRA with burst C;
//   - interval: N tokens at once at each whole W since the bucket was made
//     (its anchor a: at a+W, a+2W, ...); a bucket that a refill makes full
//     is forgotten, so the next request makes a new one, anchored at its
//     own instant (a store forgets it when its TTL, the time to full,
//     runs out). With C = N these are the decisions of a fixed window
//     opened by the first request, not counting denied requests.
//   - second: N×1s/W tokens (a fraction where it is not whole) at each
//     whole second of the epoch the clock crosses, as a store that keeps
//     the time in whole seconds refills (go-zero's TokenLimiter:
//     now.Unix() in tokenscript.lua). With C = N and W = 1s these are the
//     decisions of a fixed window aligned to the epoch, not counting
//     denied requests, until a change of N: the bucket keeps what is
//     left, not what was counted.
//
// expire says when a store forgets a bucket:
//
//   - full: when refills make it full again, as above (a key whose TTL is
//     the time until full);
//   - idle: W*ceil(C/N) after its last write (a key whose TTL is set at
//     every save to the time a whole bucket takes to refill); an interval
//     bucket keeps its grid, anchored where it was made, through refills
//     that fill it, for as long as it is written. A continuous bucket
//     decides alike either way.
//
// query says whether a query of what remains writes: read (it changes
// nothing) or write (it saves the bucket as a request does without
// spending a token: a user with none gets one, full, anchored at the
// query's instant, and with expire=idle the bucket lives on from there).
// An allowed request writes; a denied one does not.
//
// cost says how a request of cost n is decided: whole (the default), all
// or nothing, allowed when the bucket holds n tokens; debt, allowed when it
// holds one, as a unit request is, and then all n are spent, which may
// leave it below zero (in debt): refills repay the debt before another
// request is allowed, and a store keeps the bucket until it is full again
// (with expire=idle, W*ceil((C+debt)/N) after its last write).
//
// Remaining is the whole tokens in the bucket at t, 0 when in debt.
//
// A change of N or W at c reads a user's bucket as the reading says
// ([bucketReadings]): its tokens and last refill read with the new rate
// and capacity (lazy), settled at c at the old rate and kept (settle) or
// scaled to the new capacity (proportional), made full at c (reset), or
// forgotten (fresh).
type tokenBucket struct {
	capacity int // 0: follow N
	reading  string
	interval bool // refill=interval
	second   bool // refill=second
	idle     bool // expire=idle
	writes   bool // query=write
	debt     bool // cost=debt: a request of any cost while a token is there
	n        int
	w        int64
	users    map[string]bucket
}

type bucket struct {
	tokens *big.Rat // continuous: may be a fraction; never changed in place
	last   int64    // continuous, second: the last refill; interval: the anchor
	// expires is when a store forgets the bucket (expire=idle): W*ceil(C/N)
	// after its last write.
	expires int64
}

func (b *tokenBucket) c() int64 {
	if b.capacity == 0 {
		return int64(b.n)
	}
	return int64(b.capacity)
}

// Describe implements [Profile].
func (b *tokenBucket) Describe() string {
	s := fmt.Sprintf("a token bucket of %d refilled continuously at %d per %v", b.c(), b.n, ms(b.w))
	if b.interval {
		s = fmt.Sprintf("a token bucket of %d refilled with %d tokens at once every %v", b.c(), b.n, ms(b.w))
	}
	if b.second {
		s = fmt.Sprintf("a token bucket of %d refilled with %s tokens (%d per %v) at each whole second of the epoch", b.c(), b.perSecond().FloatString(3), b.n, ms(b.w))
	}
	if b.debt {
		s += ", a request of any cost allowed while a token is there, its whole cost taken (into debt)"
	}
	return s
}

// Limit implements [Profile].
func (b *tokenBucket) Limit() int { return b.n }

// Window implements [Profile].
func (b *tokenBucket) Window() time.Duration { return ms(b.w) }

// at is the user's bucket refilled up to t (ok false: no bucket, full).
func (b *tokenBucket) at(t int64, user string) (bucket, bool) {
	st, ok := b.users[user]
	if !ok || (b.idle && t >= st.expires) {
		return bucket{tokens: big.NewRat(b.c(), 1), last: t}, false
	}
	full := big.NewRat(b.c(), 1)
	if st.tokens.Cmp(full) > 0 { // a lowered capacity: the excess is gone
		st.tokens = full
	}
	if b.interval {
		k := floorDiv(t-st.last, b.w)
		if k < 1 {
			return st, true
		}
		tok := new(big.Rat).Add(st.tokens, new(big.Rat).Mul(big.NewRat(k, 1), big.NewRat(int64(b.n), 1)))
		if tok.Cmp(full) >= 0 {
			if !b.idle { // full again: forgotten, a new bucket at t
				return bucket{tokens: full, last: t}, false
			}
			tok = full
		}
		return bucket{tokens: tok, last: st.last + k*b.w, expires: st.expires}, true
	}
	if b.second {
		return b.atSecond(t, st, full)
	}
	if t <= st.last {
		return st, true
	}
	expires := st.expires
	gained := new(big.Int).Mul(big.NewInt(t-st.last), big.NewInt(int64(b.n)))
	tok := new(big.Rat).Add(st.tokens, new(big.Rat).SetFrac(gained, big.NewInt(b.w)))
	if tok.Cmp(full) > 0 {
		tok = full
	}
	return bucket{tokens: tok, last: t, expires: expires}, true
}

// atSecond is st refilled up to t with refill=second: N×1s/W tokens at
// each whole second of the epoch since its last refill.
func (b *tokenBucket) atSecond(t int64, st bucket, full *big.Rat) (bucket, bool) {
	k := floorDiv(t, 1000) - floorDiv(st.last, 1000)
	if k < 1 {
		return st, true
	}
	tok := new(big.Rat).Add(st.tokens, new(big.Rat).Mul(big.NewRat(k, 1), b.perSecond()))
	if tok.Cmp(full) >= 0 {
		if !b.idle { // full again: forgotten
			return bucket{tokens: full, last: t}, false
		}
		tok = full
	}
	return bucket{tokens: tok, last: t, expires: st.expires}, true
}

// perSecond is refill=second's refill: N×1s/W tokens.
func (b *tokenBucket) perSecond() *big.Rat {
	return big.NewRat(int64(b.n)*1000, b.w)
}

// secondsFor is how many whole seconds of refill=second bring need
// tokens (at least one).
func (b *tokenBucket) secondsFor(need *big.Rat) int64 {
	return max(1, ceilRat(new(big.Rat).Quo(need, b.perSecond())))
}

// save keeps st as the user's bucket, written at t. With expire=idle it
// lives W*ceil((C+debt)/N) from t: the refills that make it full.
func (b *tokenBucket) save(t int64, user string, st bucket) {
	if b.idle {
		missing := big.NewRat(b.c(), 1)
		if st.tokens.Sign() < 0 {
			missing.Sub(missing, st.tokens)
		}
		st.expires = t + b.w*ceilRat(missing.Quo(missing, big.NewRat(int64(b.n), 1)))
	}
	if b.users == nil {
		b.users = map[string]bucket{}
	}
	b.users[user] = st
}

var one = big.NewRat(1, 1)

// Allow implements [Profile].
func (b *tokenBucket) Allow(now time.Time, user string) (bool, error) {
	return b.AllowN(now, user, 1)
}

// AllowN implements [Weighted]: allowed when the bucket, refilled up to
// now, holds at least n tokens (with cost=debt at least one, as for a
// unit request), and then it spends n; refused, nothing changes. Cost 0
// is allowed and spends nothing; with query=write it is the query, and
// saves the bucket as the query does.
func (b *tokenBucket) AllowN(now time.Time, user string, n int) (bool, error) {
	if err := validateRequest(user, n); err != nil {
		return false, err
	}
	if n == 0 {
		if b.writes {
			b.Remaining(now, user)
		}
		return true, nil
	}
	st, _ := b.at(now.UnixMilli(), user)
	cost := big.NewRat(int64(n), 1)
	need := cost
	if b.debt {
		need = one
	}
	if st.tokens.Cmp(need) < 0 {
		return false, nil
	}
	st.tokens = new(big.Rat).Sub(st.tokens, cost)
	b.save(now.UnixMilli(), user, st)
	return true, nil
}

// Remaining implements [Profile].
func (b *tokenBucket) Remaining(now time.Time, user string) (int, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return 0, err
	}
	st, _ := b.at(now.UnixMilli(), user)
	if b.writes {
		b.save(now.UnixMilli(), user, st)
	}
	if st.tokens.Sign() < 0 { // in debt (cost=debt)
		return 0, nil
	}
	return int(new(big.Int).Quo(st.tokens.Num(), st.tokens.Denom()).Int64()), nil
}

// RetryAfter implements [Profile].
func (b *tokenBucket) RetryAfter(now time.Time, user string) time.Duration {
	t := now.UnixMilli()
	st, _ := b.at(t, user)
	if st.tokens.Cmp(one) >= 0 {
		return 0
	}
	if b.second {
		return ms((floorDiv(t, 1000)+b.secondsFor(new(big.Rat).Sub(one, st.tokens)))*1000 - t)
	}
	if b.interval {
		// The refills that bring a token: one, unless in debt.
		k := new(big.Rat).Sub(one, st.tokens)
		return ms(st.last + ceilRat(k.Quo(k, big.NewRat(int64(b.n), 1)))*b.w - t)
	}
	// (1 - tokens) * W / N ms, rounded up.
	d := new(big.Rat).Sub(one, st.tokens)
	return ms(ceilRat(d.Mul(d, big.NewRat(b.w, int64(b.n)))))
}

// Lifetime implements [Profile]: until the bucket is full again, or with
// expire=idle until it is forgotten. A full interval bucket (one a write
// made, or a change settled) keeps its anchor until its next refill
// forgets it.
func (b *tokenBucket) Lifetime(now time.Time, user string) time.Duration {
	t := now.UnixMilli()
	st, ok := b.users[user]
	if !ok {
		return 0
	}
	if b.idle {
		return ms(max(0, st.expires-t))
	}
	missing := new(big.Rat).Sub(big.NewRat(b.c(), 1), st.tokens)
	if b.second {
		return ms(max(0, (floorDiv(st.last, 1000)+b.secondsFor(missing))*1000-t))
	}
	if b.interval {
		k := max(1, ceilRat(missing.Quo(missing, big.NewRat(int64(b.n), 1))))
		return ms(max(0, st.last+k*b.w-t))
	}
	return ms(max(0, st.last+ceilRat(missing.Mul(missing, big.NewRat(b.w, int64(b.n))))-t))
}

// Reset implements [Profile].
func (b *tokenBucket) Reset(user string) error {
	if err := contract.ValidateUserID(user); err != nil {
		return err
	}
	delete(b.users, user)
	return nil
}

// Configure implements [Profile]: later refills use the new rate and
// capacity; a change reads each user's bucket as the model's reading says.
// The same N and W change nothing.
func (b *tokenBucket) Configure(now time.Time, n int, w time.Duration) error {
	if err := contract.ValidateConfig(n, w); err != nil {
		return err
	}
	if n == b.n && w.Milliseconds() == b.w {
		return nil
	}
	c := now.UnixMilli()
	var settled map[string]bucket
	if b.reading == bucketSettle || b.reading == bucketProportional || b.reading == bucketReset {
		// At c under the old rate and capacity; a bucket the store has
		// forgotten by then is fresh.
		settled = make(map[string]bucket, len(b.users))
		for u := range b.users {
			if st, ok := b.at(c, u); ok {
				settled[u] = st
			}
		}
	}
	oldC := b.c()
	b.n, b.w = n, w.Milliseconds()
	switch b.reading {
	case bucketFresh:
		b.users = nil
	case bucketSettle, bucketProportional, bucketReset:
		b.users = nil
		for u, st := range settled {
			b.save(c, u, b.reread(c, st, oldC))
		}
	}
	return nil
}

// reread is st, settled at c under capacity oldC, as the reading makes it
// under the new configuration: min(x, C') (settle), x·C'/C
// (proportional), or C' anchored at c (reset). Settled and proportional
// buckets keep their last refill (interval: the last old edge at or before
// c); the change saves each bucket at c.
func (b *tokenBucket) reread(c int64, st bucket, oldC int64) bucket {
	full := big.NewRat(b.c(), 1)
	switch b.reading {
	case bucketSettle:
		if st.tokens.Cmp(full) > 0 {
			st.tokens = full
		}
	case bucketProportional:
		st.tokens = new(big.Rat).Mul(st.tokens, big.NewRat(b.c(), oldC))
	default: // reset
		st = bucket{tokens: full, last: c}
	}
	return st
}

// Explain implements [Profile].
func (b *tokenBucket) Explain(now, base time.Time, user string) string {
	st, ok := b.at(now.UnixMilli(), user)
	if !ok {
		return fmt.Sprintf("%s has a full bucket of %d", user, b.c())
	}
	if b.second {
		return fmt.Sprintf("the bucket of %s holds %s of %d tokens (refilled with %s at each whole second of the epoch)", user, st.tokens.FloatString(3), b.c(), b.perSecond().FloatString(3))
	}
	if b.interval {
		return fmt.Sprintf("the bucket of %s holds %s of %d tokens (its refills fall every %v from %s)", user, st.tokens.FloatString(3), b.c(), ms(b.w), offset(time.UnixMilli(st.last), base))
	}
	return fmt.Sprintf("the bucket of %s holds %s of %d tokens (last refilled at %s)", user, st.tokens.FloatString(3), b.c(), offset(time.UnixMilli(st.last), base))
}

// Clone implements [Profile].
func (b *tokenBucket) Clone() Profile {
	c := *b
	c.users = make(map[string]bucket, len(b.users))
	for u, st := range b.users {
		c.users[u] = st
	}
	return &c
}

// StateKey implements [Profile].
func (b *tokenBucket) StateKey(user string) string {
	st, ok := b.users[user]
	if !ok {
		return ""
	}
	if b.idle {
		return st.tokens.RatString() + "@" + fmt.Sprint(st.last) + "/" + fmt.Sprint(st.expires)
	}
	return st.tokens.RatString() + "@" + fmt.Sprint(st.last)
}

// tokenBucketAlgorithm describes token buckets.
func tokenBucketAlgorithm() Algorithm {
	return Algorithm{
		Name:    ProfileTokenBucket,
		Summary: "a token bucket of capacity C refilled with N tokens per W",
		Params: []ParamInfo{
			{"capacity", "limit", nil, "the capacity C (limit: follow N)"},
			{"refill", "continuous", []string{"continuous", "interval", "second"}, "continuous: N/W tokens per ms, exactly; interval: N tokens at once every whole W since the bucket was made; second: N×1s/W tokens at each whole second of the epoch (a store that keeps time in whole seconds: go-zero's TokenLimiter)"},
			{"expire", "full", []string{"full", "idle"}, "full: a bucket is forgotten when refills make it full (a key whose TTL is the time until full); idle: W*ceil(C/N) after its last write, and an interval bucket keeps its grid until then (Symfony's TokenBucket)"},
			{"query", "read", []string{"read", "write"}, "read: a query of what remains changes nothing; write: it saves the bucket as an allowed request does, without a token (a user with none gets one at the query's instant)"},
			costParam(),
		},
		New: func(p map[string]string, n int, w time.Duration) Replayable {
			return &tokenBucket{capacity: fixedParam(p["capacity"]), reading: readingOf(p, bucketLazy), interval: p["refill"] == "interval", second: p["refill"] == "second", idle: p["expire"] == "idle", writes: p["query"] == "write", debt: p[CostParam] == CostDebt, n: n, w: w.Milliseconds()}
		},
		Cost:     "the bucket refilled up to t (whatever the refill, as for one token): cost=whole, allowed when it holds at least n tokens (n > C is never allowed); cost=debt, allowed when it holds at least one, as one request is, whatever n; then tokens -= n (under cost=debt possibly below zero, a debt refills repay before the next request); refused, nothing changes; " + costQueryWrites,
		Readings: bucketReadings(),
		Candidates: func(bursts []string) []string {
			var list []string
			for _, b := range bursts {
				c := "capacity=" + b
				list = append(list, c+",refill=continuous", c+",refill=continuous,"+CostParam+"="+CostDebt, c+",refill=interval", c+",refill=interval,query=write", c+",refill=interval,expire=idle,query=write", c+",refill=second")
			}
			return list
		},
		Alike:       tokenBucketAlike,
		Anchored:    func(map[string]string) bool { return true },
		QueryWrites: func(p map[string]string) bool { return p["query"] == "write" },
		Envelope: func(p map[string]string, n int64, w time.Duration) Envelope {
			c := sizeParam(p["capacity"], n)
			if p["refill"] == "second" {
				return secondEnvelope(c, n, w)
			}
			return bucketEnvelope(c, n, w, p["refill"] == "interval", fmt.Sprintf("a token bucket of %d", c))
		},
	}
}

// The readings of a change of configuration of a token bucket, the
// model's first.
const (
	bucketLazy         = "lazy"
	bucketSettle       = "settle"
	bucketProportional = "proportional"
	bucketReset        = "reset"
	bucketFresh        = "fresh"
)

// bucketReadings are a token bucket's honest readings of a change of N or
// W at c for a user with history (docs/profiles.md, "A change of
// configuration").
func bucketReadings() []Reading {
	return []Reading{
		{Name: bucketLazy, Doc: "the stored tokens x and last refill l are read with the new rate and capacity: min(C', min(x, C') + (t − l)·N'/W') (interval: N' at each l + jW')",
			Seen: "Spring Cloud Gateway (request_rate_limiter.lua), go-zero TokenLimiter (tokenscript.lua)"},
		{Name: bucketSettle, Doc: "refilled at the old rate up to c, at most C: x_c; then min(x_c, C') refilled at the new rate from c (interval: old refills up to c, then N' at each g + jW' from the last old one g)",
			Seen: "golang.org/x/time/rate (SetLimitAt, SetBurstAt), Bucket4j (replaceConfiguration, AS_IS)"},
		{Name: bucketProportional, Doc: "settled at c as settle, then x_c·C'/C tokens",
			Seen: "Bucket4j (replaceConfiguration, PROPORTIONALLY)"},
		{Name: bucketReset, Doc: "full, C' tokens, at c, refills anchored at c",
			Seen: "Bucket4j (replaceConfiguration, RESET), sethvargo/go-limiter (Store.Set)"},
		{Name: bucketFresh, Doc: "every user is forgotten at a change: a new bucket at its next request",
			Seen: "a store keyed on the rate (python limits), a new sethvargo/go-limiter store"},
	}
}

// tokenBucketAlike keys a token bucket's decisions (see [Algorithm.Alike]).
func tokenBucketAlike(p map[string]string, n int, queries, _ bool) string {
	p = maps.Clone(p)
	delete(p, ReconfigureParam) // the readings decide alike while the configuration stays
	if !queries {
		p["query"] = "read"
	}
	switch {
	case p["refill"] == "continuous":
		// A continuous bucket refilled exactly decides alike whenever it
		// is forgotten or written, and as a GCRA of the same burst.
		return "bucket/" + sizeKey(p["capacity"], n) + costKey(p)
	case p["refill"] == "interval" && sizeKey(p["capacity"], n) == "limit" && p["expire"] == "full" && costKey(p) == "":
		// Every refill fills it: forgotten, the next request (or a query
		// that writes) opens a new window.
		return "fixed-window/first-hit/" + p["query"]
	}
	return Variant{Name: ProfileTokenBucket, Params: p}.String()
}

// secondEnvelope is what a bucket of c refilled with N×1s/W tokens at each
// whole second of the epoch may decide: within a span E, c and the refills
// of at most E/1s + 1 seconds, N×E/W + N×1s/W; a denial needs the last
// second's refill (whole tokens of it, at most c) spent since it fell.
func secondEnvelope(c, n int64, w time.Duration) Envelope {
	perSecond := n * int64(time.Second) / int64(w)
	return Envelope{
		Linear: []LinearBound{{Rate: n, Windows: c, Less: -n * int64(time.Second),
			Rule: fmt.Sprintf("at most %d + %d×(E + 1s)/%v allowed within any span E (a bucket of %d refilled at each whole second of the epoch)", c, n, w, c)}},
		Under: UnderRule{Limit: min(perSecond, c), LookbackWindows: max(1, (int64(time.Second)+int64(w)-1)/int64(w)),
			Rule: fmt.Sprintf("a denial needs the %d whole tokens of the last second's refill (less than 1s before it) spent", min(perSecond, c))},
	}
}
