package cli

import (
	"io"
	"testing"
	"time"

	"github.com/rlconform/rlconform/bench"
)

// The number flags of run, by name, and the bounds of what parseRun may
// accept for each (durations in ns).
var runNumberFlags = []struct {
	name      string
	least     int64
	most      int64
	parsedVia func(*runFlags) int64
}{
	{"--timeout", 1, int64(maxCallTimeout), func(f *runFlags) int64 { return int64(f.timeout) }},
	{"--spec-timeout", 1, int64(maxSpecTimeout), func(f *runFlags) int64 { return int64(f.specTimeout) }},
	{"--max-duration", 1, int64(maxRunDuration), func(f *runFlags) int64 { return int64(f.maxDuration) }},
	{"--max-rps", 0, bench.MaxRate, func(f *runFlags) int64 { return int64(f.maxRPS) }},
	{"--limited-status", 300, 599, func(f *runFlags) int64 { return int64(f.limitedStatus) }},
}

// Whatever the value of a number flag of run (a duration, --max-rps,
// --limited-status), parsing never panics and accepts only what is within
// the flag's bounds; --policy is checked when the flags are parsed too.
func FuzzRunFlags(f *testing.F) {
	for i, v := range []string{"5s", "2562047h", "-1ns", "1h0m0.000000001s", "0", "9223372036854775807ns", "10000001", "204", "1e3", "0x10"} {
		f.Add(uint8(i), v, "5/1s")
	}
	f.Add(uint8(3), "100", "1/213504d")
	f.Fuzz(func(t *testing.T, which uint8, value, policy string) {
		fl := runNumberFlags[int(which)%len(runNumberFlags)]
		args := []string{"--endpoint", "http://127.0.0.1:1/", "--identity", "header:X-User", "--policy", policy, fl.name, value}
		parsed, err := parseRun(args, io.Discard)
		if err != nil {
			return
		}
		if got := fl.parsedVia(parsed); got < fl.least || got > fl.most {
			t.Fatalf("%s %q accepted as %d: want %d to %d", fl.name, value, got, fl.least, fl.most)
		}
	})
}

// Whatever --policy and --clock-skew say, judging a k6 output never
// panics: it ends in a verdict (0 or 1) or says why it cannot (2).
func FuzzBenchFromK6Flags(f *testing.F) {
	for _, s := range [][2]string{{"5/100ms", "0s"}, {"5/100ms", "2562047h"}, {"5/100ms", "1h"}, {"1/213504d", "1ms"},
		{"9007199254740991/876000h", "59m"}, {"2000000000/1ns", "1ns"}, {"5/1ms", "-1s"}} {
		f.Add(s[0], s[1])
	}
	fixture := k6Fixture("exact-a.json.gz")
	f.Fuzz(func(t *testing.T, policy, skew string) {
		code := Main([]string{"bench", "--from-k6", fixture, "--policy", policy, "--clock-skew", skew}, io.Discard, io.Discard)
		if code != ExitConformant && code != ExitNotConformant && code != ExitCannotRun {
			t.Fatalf("--policy %q --clock-skew %q: exit %d", policy, skew, code)
		}
		if d, err := time.ParseDuration(skew); err == nil && (d < 0 || d > bench.MaxClockSkew) && code != ExitCannotRun {
			t.Fatalf("--clock-skew %v: exit %d, want 2", d, code)
		}
	})
}
