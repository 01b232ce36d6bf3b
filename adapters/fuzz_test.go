package adapters

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
)

// fieldNames are the fields ParseFields reads: every error it reports
// starts with one of them.
var fieldNames = []string{"Retry-After ", "RateLimit-Policy ", "RateLimit ", "RateLimit-Remaining ", "RateLimit-Reset ", "RateLimit-Limit ",
	"X-RateLimit-Remaining ", "X-RateLimit-Reset ", "X-RateLimit-Limit "}

// Whatever a service sends, ParseFields never panics, and every number it
// sets is within its bounds: delays from 0 to 100 years, counts from 0
// to 2^53−1, a policy window of at least a second; a delta-seconds
// Retry-After it reads is the number sent.
func FuzzParseFields(f *testing.F) {
	f.Add("7", "", `"default";r=50;t=30`, `"default";q=100;w=60`, "", "", "", int64(1795089600))
	f.Add("Fri, 31 Dec 9999 23:59:59 GMT", "Mon, 23 Nov 2026 12:00:00 GMT", "", "", "0", "1795089603", "10", int64(1795089600))
	f.Add("18446744074", "", `"p";r=-1;t=999999999999999`, `"p";q=2000000000;w=1`, "-1", "9223372036854775807", "5, 5;w=1", int64(0))
	f.Add("-5", "", `("a" "b");r=1`, `"p";q=0;w=0`, "many", "253402300799", "18446744073709551617", int64(1))
	f.Fuzz(func(t *testing.T, retryAfter, date, rateLimit, policy, remaining, reset, limit string, now int64) {
		h := http.Header{}
		for k, v := range map[string]string{"Retry-After": retryAfter, "Date": date, "RateLimit": rateLimit, "RateLimit-Policy": policy,
			"X-RateLimit-Remaining": remaining, "X-RateLimit-Reset": reset, "X-RateLimit-Limit": limit} {
			if v != "" {
				h.Set(k, v)
			}
		}
		fs := ParseFields(h, time.Unix(now, 0))
		for _, d := range []struct {
			has bool
			d   time.Duration
		}{{fs.HasRetryAfter, fs.RetryAfter}, {fs.HasReset, fs.Reset}, {fs.HasPolicy, fs.PolicyWindow}} {
			if d.has && (d.d < 0 || d.d > contract.MaxWindow) {
				t.Fatalf("a delay out of bounds: %v in %+v", d.d, fs)
			}
		}
		for _, n := range []struct {
			has bool
			n   int
		}{{fs.HasRemaining, fs.Remaining}, {fs.HasPolicy, fs.PolicyLimit}} {
			if n.has && (n.n < 0 || n.n > contract.MaxLimit) {
				t.Fatalf("a count out of bounds: %d in %+v", n.n, fs)
			}
		}
		if fs.HasPolicy && fs.PolicyWindow != 0 && fs.PolicyWindow < time.Second {
			t.Fatalf("a policy window under a second: %v", fs.PolicyWindow)
		}
		if v := strings.TrimSpace(retryAfter); fs.HasRetryAfter && isDigits(v) {
			if got := strconv.FormatInt(int64(fs.RetryAfter/time.Second), 10); got != strings.TrimLeft(v, "0") && !(got == "0" && strings.Trim(v, "0") == "") {
				t.Fatalf("Retry-After %q read as %v", retryAfter, fs.RetryAfter)
			}
		}
		for _, err := range fs.Errs {
			named := false
			for _, name := range fieldNames {
				named = named || strings.HasPrefix(err.Error(), name)
			}
			if !named {
				t.Fatalf("an error that names no field: %v", err)
			}
		}
	})
}

// ParsePolicy never panics; what it accepts is within the contract's
// bounds and reads back the same from its String.
func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{"10/1s", "100/1m", "1000/1d", "5/500ms", "3/1h30m", "0/1s", "1/213504d", "1/36500d", "2000000000/1s",
		"9007199254740991/876000h", "1/2562047h", "-1/1s", "+5/1s", "5/-1s", "5/0.5d", "5/1e3s", "5/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePolicy(s)
		if err != nil {
			return
		}
		if p.Limit < 1 || p.Limit > contract.MaxLimit || p.Window < time.Millisecond || p.Window > contract.MaxWindow {
			t.Fatalf("%q accepted as %v: out of bounds", s, p)
		}
		back, err := ParsePolicy(p.String())
		if err != nil || back != p {
			t.Fatalf("%q is %v, whose String %q reads back as %v, %v", s, p, p.String(), back, err)
		}
	})
}

// Whatever the rate and the arrivals, the pacer never lets more than its
// bound go in any one second (on a fake clock: no time passes).
func FuzzPacer(f *testing.F) {
	f.Add(uint16(5), []byte{0, 0, 0, 0, 0, 0, 0, 200, 3, 0, 0, 0, 255, 255})
	f.Add(uint16(1), []byte{1, 2, 3, 250, 250, 250, 250})
	f.Add(uint16(3000), make([]byte, 4000))
	f.Add(uint16(2), []byte{0, 0, 0, 0, 1, 0, 0, 255, 255, 255, 254, 0, 0, 0})
	f.Fuzz(func(t *testing.T, perSecond uint16, gaps []byte) {
		// At most 4096 requests: enough to fill any second many times over
		// at the rates small enough to be interesting, and quick to
		// minimize.
		gaps = gaps[:min(len(gaps), 4096)]
		rate := max(1, int(perSecond))
		clock := fakeclock.New(time.Date(2026, 1, 2, 3, 4, 5, 999_999_999, time.UTC))
		p := newPacer(rate, clock.Now)
		var due []time.Time
		at := clock.Now()
		for i, g := range gaps {
			// A gap of 0 to 255 ms, with the byte before it as µs.
			at = at.Add(time.Duration(g)*time.Millisecond + time.Duration(gaps[max(0, i-1)])*time.Microsecond)
			due = append(due, at)
		}
		went := paced(p, clock, due)
		if most := mostInOneSecond(went); most > rate {
			t.Fatalf("%d in one second, over the bound of %d", most, rate)
		}
	})
}

// Whatever a service's body holds, the json fields never panic, every
// number they set is within its bounds (delays from 0 to 100 years,
// counts from 0 to 2^53−1), and every error names its source.
func FuzzJSONFields(f *testing.F) {
	for _, s := range []string{envoyOK, envoyOver, `{"r":99999999999999999999,"t":1e400,"l":{"unit":"DAY"}}`,
		`{"statuses":[{"limitRemaining":"7","durationUntilReset":"3153600000.999999999s","currentLimit":{"requestsPerUnit":1,"unit":"YEAR"}}]}`,
		`{"statuses":[{"limitRemaining":-0,"durationUntilReset":-0.0,"currentLimit":-1}]}`, `[[[[[[]]]]]]`, `"s"`, `{"statuses":7}`} {
		f.Add(s, true)
	}
	p := &jsonPointers{remaining: []string{"statuses", "0", "limitRemaining"}, reset: []string{"statuses", "0", "durationUntilReset"},
		limit: []string{"statuses", "0", "currentLimit"}}
	f.Fuzz(func(t *testing.T, body string, seen bool) {
		fs, _ := parseJSONFields(p, http.Header{}, []byte(body), false, seen, time.Now())
		if fs.HasReset && (fs.Reset < 0 || fs.Reset > contract.MaxWindow) || fs.HasPolicy && (fs.PolicyWindow < 0 || fs.PolicyWindow > contract.MaxWindow) {
			t.Fatalf("a delay out of bounds in %+v", fs)
		}
		if fs.HasRemaining && (fs.Remaining < 0 || fs.Remaining > contract.MaxLimit) || fs.HasPolicy && (fs.PolicyLimit < 0 || fs.PolicyLimit > contract.MaxLimit) {
			t.Fatalf("a count out of bounds in %+v", fs)
		}
		for _, err := range fs.Errs {
			if !strings.HasPrefix(err.Error(), "json ") {
				t.Fatalf("an error that names no field: %v", err)
			}
		}
	})
}
