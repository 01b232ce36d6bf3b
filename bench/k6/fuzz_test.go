package k6

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rlconform/rlconform/bench"
)

// Whatever a k6 output holds, reading it never panics; every decision
// read lies between 1970 (less a request's four phases of at most a day)
// and 2200, sent no later than it returned; and judging what was read,
// with any clock skew the flag allows, never panics either.
func FuzzRead(f *testing.F) {
	f.Add([]byte(documented), int64(0))
	f.Add([]byte(strings.ReplaceAll(documented, "2017-05-09", "9999-05-09")), int64(time.Millisecond))
	f.Add([]byte(strings.ReplaceAll(documented, `"value":459.865729`, `"value":1e300`)), int64(bench.MaxClockSkew))
	f.Add([]byte(strings.ReplaceAll(documented, `"user":"u1"`, `"user":"u\u0031"`)), int64(-1))
	f.Add(syntheticOutput(40, 3), int64(time.Second))
	f.Fuzz(func(t *testing.T, data []byte, skew int64) {
		r := NewReader(Options{})
		if err := r.Read("fuzz", bytes.NewReader(data)); err != nil {
			return
		}
		rec, err := r.Recording()
		if err != nil {
			return
		}
		lo, hi := earliest.Add(-4*24*time.Hour).UnixNano(), latest.UnixNano()
		for _, d := range rec.Decisions {
			if d.Sent > d.Returned || int64(d.Sent) < lo || int64(d.Returned) > hi {
				t.Fatalf("a decision out of bounds: %+v", d)
			}
		}
		rp := bench.Replay{Judge: bench.Judge{Limit: 5, Window: 100 * time.Millisecond}, ClockSkew: time.Duration(skew)}
		if _, err := rp.Run(rec); err == nil && (skew < 0 || time.Duration(skew) > bench.MaxClockSkew) {
			t.Fatalf("a clock skew of %v accepted", time.Duration(skew))
		}
	})
}
