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
// Remaining is the whole tokens in the bucket at t.
type tokenBucket struct {
	capacity int // 0: follow N
	interval bool
	idle     bool // expire=idle
	writes   bool // query=write
	n        int
	w        int64
	users    map[string]bucket
}

type bucket struct {
	tokens *big.Rat // continuous: may be a fraction; never changed in place
	last   int64    // continuous: the last refill; interval: the anchor
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
	if b.interval {
		return fmt.Sprintf("a token bucket of %d refilled with %d tokens at once every %v", b.c(), b.n, ms(b.w))
	}
	return fmt.Sprintf("a token bucket of %d refilled continuously at %d per %v", b.c(), b.n, ms(b.w))
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

// save keeps st as the user's bucket, written at t.
func (b *tokenBucket) save(t int64, user string, st bucket) {
	if b.idle {
		st.expires = t + b.w*ceilDiv(b.c(), int64(b.n))
	}
	if b.users == nil {
		b.users = map[string]bucket{}
	}
	b.users[user] = st
}

var one = big.NewRat(1, 1)

// Allow implements [Profile].
func (b *tokenBucket) Allow(now time.Time, user string) (bool, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return false, err
	}
	st, _ := b.at(now.UnixMilli(), user)
	if st.tokens.Cmp(one) < 0 {
		return false, nil
	}
	st.tokens = new(big.Rat).Sub(st.tokens, one)
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
	return int(new(big.Int).Quo(st.tokens.Num(), st.tokens.Denom()).Int64()), nil
}

// RetryAfter implements [Profile].
func (b *tokenBucket) RetryAfter(now time.Time, user string) time.Duration {
	t := now.UnixMilli()
	st, _ := b.at(t, user)
	if st.tokens.Cmp(one) >= 0 {
		return 0
	}
	if b.interval {
		return ms(st.last + b.w - t)
	}
	// (1 - tokens) * W / N ms, rounded up.
	d := new(big.Rat).Sub(one, st.tokens)
	return ms(ceilRat(d.Mul(d, big.NewRat(b.w, int64(b.n)))))
}

// Lifetime implements [Profile]: until the bucket is full again, or with
// expire=idle until it is forgotten.
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
	if b.interval {
		k := ceilRat(missing.Quo(missing, big.NewRat(int64(b.n), 1)))
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

// Configure implements [Profile]: tokens are kept; later refills use the
// new rate and capacity.
func (b *tokenBucket) Configure(_ time.Time, n int, w time.Duration) error {
	if err := contract.ValidateConfig(n, w); err != nil {
		return err
	}
	b.n, b.w = n, w.Milliseconds()
	return nil
}

// Explain implements [Profile].
func (b *tokenBucket) Explain(now, base time.Time, user string) string {
	st, ok := b.at(now.UnixMilli(), user)
	if !ok {
		return fmt.Sprintf("%s has a full bucket of %d", user, b.c())
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
			{"refill", "continuous", []string{"continuous", "interval"}, "continuous: N/W tokens per ms, exactly; interval: N tokens at once every whole W since the bucket was made"},
			{"expire", "full", []string{"full", "idle"}, "full: a bucket is forgotten when refills make it full (a key whose TTL is the time until full); idle: W*ceil(C/N) after its last write, and an interval bucket keeps its grid until then (Symfony's TokenBucket)"},
			{"query", "read", []string{"read", "write"}, "read: a query of what remains changes nothing; write: it saves the bucket as an allowed request does, without a token (a user with none gets one at the query's instant)"},
		},
		New: func(p map[string]string, n int, w time.Duration) Replayable {
			return &tokenBucket{capacity: fixedParam(p["capacity"]), interval: p["refill"] == "interval", idle: p["expire"] == "idle", writes: p["query"] == "write", n: n, w: w.Milliseconds()}
		},
		SettledLimitChange: true,
		Candidates: func(bursts []string) []string {
			var list []string
			for _, b := range bursts {
				c := "capacity=" + b
				list = append(list, c+",refill=continuous", c+",refill=interval", c+",refill=interval,query=write", c+",refill=interval,expire=idle,query=write")
			}
			return list
		},
		Alike:       tokenBucketAlike,
		QueryWrites: func(p map[string]string) bool { return p["query"] == "write" },
		Envelope: func(p map[string]string, n int64, w time.Duration) Envelope {
			c := sizeParam(p["capacity"], n)
			return bucketEnvelope(c, n, w, p["refill"] == "interval", fmt.Sprintf("a token bucket of %d", c))
		},
	}
}

// tokenBucketAlike keys a token bucket's decisions (see [Algorithm.Alike]).
func tokenBucketAlike(p map[string]string, n int, queries, _ bool) string {
	p = maps.Clone(p)
	if !queries {
		p["query"] = "read"
	}
	switch {
	case p["refill"] == "continuous":
		// A continuous bucket refilled exactly decides alike whenever it
		// is forgotten or written, and as a GCRA of the same burst.
		return "bucket/" + sizeKey(p["capacity"], n)
	case sizeKey(p["capacity"], n) == "limit" && p["expire"] == "full":
		// Every refill fills it: forgotten, the next request (or a query
		// that writes) opens a new window.
		return "fixed-window/first-hit/" + p["query"]
	}
	return Variant{Name: ProfileTokenBucket, Params: p}.String()
}
