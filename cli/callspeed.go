package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/internal/stall"
)

// speedProbes is how many calls the speed probe times, one at a time.
const speedProbes = 5

// timeCalls times speedProbes calls of the remote target at url, one at a
// time, on a user of their own: a remaining call when the target declares
// it, an allow otherwise. A call that fails ends the probe early: the run
// reports the target's errors where a spec meets them.
func timeCalls(ctx context.Context, url string, opts adapters.ClientOptions, remaining bool) []time.Duration {
	c := adapters.NewClient(url, opts)
	user := fmt.Sprintf("rlconform-speed-%d", time.Now().UnixNano())
	times := make([]time.Duration, 0, speedProbes)
	for range speedProbes {
		began := time.Now()
		var err error
		if remaining {
			_, err = c.GetRemainingRequests(ctx, user)
		} else {
			_, err = c.AllowRequest(ctx, user)
		}
		if err != nil {
			break
		}
		times = append(times, time.Since(began))
	}
	return times
}

// aboutMillis is "about d" to the millisecond, or "under 1ms" (where
// rounding said "about 0s").
func aboutMillis(d time.Duration) string {
	if d < time.Millisecond {
		return "under 1ms"
	}
	return "about " + d.Round(time.Millisecond).String()
}

// callSpeed is how long a remote target's calls take, from the probe's
// times: their median, so that a call that stalled on its connection
// (about a second among quick ones) does not pass for the target's speed.
// It says the speed, and names the stalls with what to do about them.
func callSpeed(times []time.Duration, stderr io.Writer) time.Duration {
	if len(times) == 0 {
		return 0
	}
	median := stall.Median(times)
	fmt.Fprintf(stderr, "rlconform: the target answers in %s a call (the median of %d)\n", aboutMillis(median), len(times))
	if stalled := stall.Describe(times); stalled != "" {
		fmt.Fprintf(stderr, "rlconform: warning: %s; %s. Calls that stall take a second each: specs may run out of time (inconclusive, never failed)\n", stalled, stall.Hint)
	}
	return median
}
