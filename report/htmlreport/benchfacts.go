package htmlreport

import (
	"fmt"
	"strings"
	"time"

	"github.com/rlconform/rlconform/bench"
	"github.com/rlconform/rlconform/internal/plural"
	"github.com/rlconform/rlconform/result"
)

// benchVerdict is what res proves: exact under load, wrong, or nothing
// either way (not checked, not exercised, or calls that failed).
func benchVerdict(res *bench.Result) (result.Outcome, string) {
	ex := res.Exactness
	switch {
	case res.Failed():
		var what []string
		if ex.Overshoot > 0 {
			what = append(what, fmt.Sprintf("%s allowed past the limit of %d per %v", plural.Count(ex.Overshoot, "request"), res.Limit, res.Window))
		}
		if ex.UnderAdmitted > 0 {
			what = append(what, fmt.Sprintf("%s denied that the profile admits whatever the timing", plural.Count(ex.UnderAdmitted, "request")))
		}
		return result.NotConformant, "NOT EXACT under load: " + strings.Join(what, "; ")
	case ex == nil:
		return result.Undecided, "exactness NOT CHECKED: " + res.NotChecked
	case res.ErrorCount() > 0:
		return result.Undecided, fmt.Sprintf("UNDECIDED: %s failed, so the figures are of a faulty run", plural.Count(res.ErrorCount(), "call"))
	case ex.UsersAtLimit == 0:
		return result.Undecided, "exactness NOT EXERCISED: no user was ever denied, so the limit was never put to the test"
	case res.Interrupted:
		return result.Undecided, fmt.Sprintf("INTERRUPTED after %v: exact in what ran", res.Elapsed.Round(time.Millisecond))
	}
	return result.Conformant, fmt.Sprintf("EXACT under load: no overshoot and no under-admission in %s of %s at the limit",
		plural.Count(ex.Decisions, "decision"), plural.Count(ex.UsersAtLimit, "user"))
}

// benchFacts are the figures of res.
func benchFacts(res *bench.Result) []Fact {
	load := fmt.Sprintf("%s, %s, for %v", res.Mode, plural.Count(res.Concurrency, "caller"), res.Duration)
	if res.Mode == "open-loop" {
		load = fmt.Sprintf("open loop at %.0f/s, at most %d in flight, for %v", res.Rate, res.Concurrency, res.Duration)
	}
	if res.Source != "" {
		load = res.Source
	}
	pct := 0.0
	if res.Decisions > 0 {
		pct = 100 * float64(res.Allowed) / float64(res.Decisions)
	}
	l := res.Latency
	facts := []Fact{
		{Label: "target", Value: res.Target, Mono: true},
		{Label: "load", Value: load},
		{Label: "users", Value: fmt.Sprintf("%d (limit %d per %v each)", res.Users, res.Limit, res.Window)},
		{Label: "profile", Value: res.Profile, Mono: true},
		{Label: "throughput", Value: fmt.Sprintf("%.0f decisions/s (%d in %v)", res.Throughput, res.Decisions, res.Elapsed.Round(time.Millisecond))},
		{Label: "latency", Value: fmt.Sprintf("p50 %v, p90 %v, p99 %v, p99.9 %v, max %v", bench.RoundLatency(l.P50), bench.RoundLatency(l.P90),
			bench.RoundLatency(l.P99), bench.RoundLatency(l.P999), bench.RoundLatency(l.Max))},
		{Label: "decisions", Value: fmt.Sprintf("%d allowed (%.1f%%), %d denied", res.Allowed, pct, res.Denied)},
		{Label: "errors", Value: fmt.Sprint(res.ErrorCount())},
		{Label: "seed", Value: fmt.Sprint(res.Seed), Mono: true},
	}
	if res.Version != "" {
		facts = append(facts, Fact{Label: "rlconform", Value: res.Version, Mono: true})
	}
	return facts
}

// chartText is the text alternative of the bench's chart: what each
// panel shows, and its extremes.
func chartText(res *bench.Result) string {
	busiest, worstP99 := 0, time.Duration(0)
	for _, b := range res.Series {
		busiest, worstP99 = max(busiest, b.Busiest), max(worstP99, b.P99)
	}
	over := "never above it"
	if busiest > res.Limit {
		over = "above it: an overshoot"
	}
	return fmt.Sprintf("Three panels over the seconds of the run, in %s: the p50, p99 and maximum latency of each (log scale; the worst p99 is %v); "+
		"decisions and allowed requests per second (%.0f decisions a second on average); and the most allowed requests of one user surely within a window, "+
		"against the limit %d: at most %d, %s.", plural.Count(len(res.Series), "bucket"), bench.RoundLatency(worstP99), res.Throughput, res.Limit, busiest, over)
}
