// Package stall tells connection stalls from a slow target in call times.
//
// A target whose listen backlog is too small (Python's http.server
// listens with a backlog of 5), or a proxy that opens a connection per
// request, answers most calls in milliseconds and a few in about 1 s (or
// 3 s): the time a lost SYN waits for its first (second) retransmission.
// Such a target is not slow, and the grader must not say it is, nor aim
// its real-time margins by those few calls. One rule, used by the run's
// out-of-time message, the real-time margin probe and the command line's
// speed probe.
package stall

import (
	"fmt"
	"slices"
	"time"
)

// After is how long a call takes to be a stall when the median call is
// quick (under QuickMedian): about the 1 s a lost SYN waits for its first
// retransmission.
const (
	After       = 900 * time.Millisecond
	QuickMedian = 50 * time.Millisecond
)

// Hint is what to do about connection stalls.
const Hint = "raise the listen backlog (listen(…, 128); Python's socketserver: request_queue_size = 128) or keep connections alive (HTTP/1.1 keep-alive, a pooled client in a proxy)"

// Split divides a sample of call times into the calls that stalled and
// the others. Calls stall only among quick ones: when the sample's median
// is QuickMedian or more, nothing stalled (the target is slow), and quick
// is the whole sample. The order of each part is the sample's.
func Split(times []time.Duration) (quick, stalled []time.Duration) {
	if len(times) == 0 || Median(times) >= QuickMedian {
		return times, nil
	}
	for _, t := range times {
		if t >= After {
			stalled = append(stalled, t)
		} else {
			quick = append(quick, t)
		}
	}
	return quick, stalled
}

// Median is the median of times (0 for none); times is not reordered.
func Median(times []time.Duration) time.Duration {
	if len(times) == 0 {
		return 0
	}
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}

// Took says how long n stalls took, from the shortest, the longest and
// their sum: "about 1s", or "1s to 3s" when they differ by half a second
// or more.
func Took(n int, least, most, summed time.Duration) string {
	if n == 0 {
		return ""
	}
	if most-least >= 500*time.Millisecond {
		return fmt.Sprintf("%v to %v", least.Round(100*time.Millisecond), most.Round(100*time.Millisecond))
	}
	return fmt.Sprintf("about %v", (summed / time.Duration(n)).Round(100*time.Millisecond))
}

// Describe says, for a sample Split found stalls in, how many of its
// calls stalled and how long, beside the median call: "" when none did.
func Describe(times []time.Duration) string {
	_, stalled := Split(times)
	if len(stalled) == 0 {
		return ""
	}
	summed := time.Duration(0)
	for _, t := range stalled {
		summed += t
	}
	return fmt.Sprintf("%d of %d calls stalled %s while the median call took %v: connection stalls (a listen backlog too small, or a proxy opening a connection per request), not the limiter's speed",
		len(stalled), len(times), Took(len(stalled), slices.Min(stalled), slices.Max(stalled), summed), Median(times).Round(100*time.Microsecond))
}
