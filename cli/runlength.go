package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/rlconform/rlconform/grade"
	"github.com/rlconform/rlconform/suite"
)

// The bounds of a spec and of a run when the flags leave them to the
// command and the target has clock control (or needs less).
const (
	defaultSpecTimeout = time.Minute
	defaultMaxDuration = 15 * time.Minute
)

// lengthFlags are --spec-timeout and --max-duration, shared by run and
// identify: given, they are the bounds; left out, the bounds follow what
// the specs that will run need, in real time with the window.
type lengthFlags struct {
	specTimeout, maxDuration time.Duration
	specSet, maxSet          bool
}

func (f *lengthFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.specTimeout, "spec-timeout", defaultSpecTimeout, "bound on each spec (default: 1m, or in real time what a spec needs with the window: four windows and more, said before the run): a call in flight for a tenth of it hung (a failure); a spec that runs out of time with every call answered is undecided (exit 2)")
	fs.DurationVar(&f.maxDuration, "max-duration", defaultMaxDuration, "bound on the whole run (in real time, by default, the spec timeout for each spec that will run, said before the run): past it, the run stops with what finished (exit 2)")
}

// check records which of the flags fs parsed were given, and says why
// one is out of range.
func (f *lengthFlags) check(fs *flag.FlagSet) error {
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "spec-timeout":
			f.specSet = true
		case "max-duration":
			f.maxSet = true
		}
	})
	if err := durationIn("--spec-timeout", f.specTimeout, maxSpecTimeout); err != nil {
		return err
	}
	return durationIn("--max-duration", f.maxDuration, maxRunDuration)
}

// budget is a run's bound on each spec and on the whole, and what the
// estimate said of the run (for the message of a run cut short).
type budget struct {
	spec, run time.Duration
	est       grade.Estimate
}

// busiestCalls is about how many calls the largest specs make one after
// another (strict/differential's schedules, strict/config-range's sweep):
// at a target's time a call, they bound how long such a spec takes.
const busiestCalls = 3000

// plan sets the bounds of a run whose specs est estimates on a target
// whose calls take perCall (0: not measured): the flags when given, else
// what est and the busiest specs' calls at that speed need (at least the
// defaults), so that a far target (a limiter in another region) is graded
// in full. In real time it says before the run how many specs will run,
// about how long they take and the bounds, and warns of a given bound
// below what the window or the speed needs.
func (f *lengthFlags) plan(est grade.Estimate, perCall time.Duration, stderr io.Writer) budget {
	b := budget{spec: f.specTimeout, run: f.maxDuration, est: est}
	calls := busiestCalls * perCall * 3 / 2 // half again: a far target's jitter
	if !f.specSet {
		b.spec = min(max(defaultSpecTimeout, roundUpSecond(est.SpecTimeout+calls)), maxSpecTimeout)
		if b.spec > defaultSpecTimeout && calls > est.SpecTimeout {
			fmt.Fprintf(stderr, "rlconform: at %s a call, the largest specs take about %v: --spec-timeout %v (for this speed)\n",
				aboutMillis(perCall), roundUpSecond(busiestCalls*perCall), b.spec)
		}
	} else if busiest := busiestCalls * perCall; busiest > b.spec {
		fmt.Fprintf(stderr, "rlconform: warning: the largest specs make about %d calls (%v at this speed), more than --spec-timeout %v: they will end inconclusive (too slow), never failed; raise --spec-timeout, or leave it out\n",
			busiestCalls, busiest.Round(time.Second), b.spec)
	}
	if !f.maxSet {
		b.run = min(max(defaultMaxDuration, time.Duration(est.Run)*b.spec), maxRunDuration)
	}
	if !est.RealTime {
		return b
	}
	source := func(given bool) string {
		if given {
			return "given"
		}
		return "for this window"
	}
	windows := est.Window.String()
	if est.Shortened {
		windows += " or shorter (the target declares millisecond windows: ten round-trip margins once they are measured, the time below shrinking with them)"
	}
	together := ""
	if est.Lanes > 1 {
		together = fmt.Sprintf(", up to %d side by side after the first", est.Lanes)
	}
	fmt.Fprintf(stderr, "rlconform: in real time on windows of %s: %d spec(s) will run (%d skipped)%s, about %v in all; --spec-timeout %v (%s), --max-duration %v (%s)\n",
		windows, est.Run, est.Skipped, together, roundUpSecond(est.Typical), b.spec, source(f.specSet), b.run, source(f.maxSet))
	if f.specSet && b.spec < est.SpecTimeout {
		fmt.Fprintf(stderr, "rlconform: warning: --spec-timeout %v is less than the %v a spec may need on windows of %v: a spec that runs out of time ends the run undecided (exit 2), the window the cause, not the target; raise --spec-timeout, or leave it out\n",
			b.spec, roundUpSecond(est.SpecTimeout), est.Window)
	}
	if f.maxSet && b.run < est.Typical {
		fmt.Fprintf(stderr, "rlconform: warning: --max-duration %v is less than the about %v the specs take on windows of %v: the run will stop before they finish (exit 2); raise --max-duration, or leave it out\n",
			b.run, roundUpSecond(est.Typical), est.Window)
	}
	return b
}

// context is ctx bounded by the run's bound, its cause naming the flag
// to raise.
func (b budget) context(ctx context.Context) (context.Context, context.CancelFunc) {
	cause := fmt.Errorf("the run took longer than --max-duration %v: raise --max-duration", b.run)
	if b.est.RealTime {
		cause = fmt.Errorf("the run took longer than --max-duration %v: raise --max-duration (on windows of %v its %d spec(s) take about %v, each up to %v)",
			b.run, b.est.Window, b.est.Run, roundUpSecond(b.est.Typical), roundUpSecond(b.est.SpecTimeout))
	}
	return context.WithTimeoutCause(ctx, b.run, cause)
}

// roundUpSecond is d rounded up to a whole second.
func roundUpSecond(d time.Duration) time.Duration {
	if r := d % time.Second; r != 0 {
		return d - r + time.Second
	}
	return d
}

// estimated is suite.Estimate's (or, for identify, EstimateIdentify's)
// estimate of cfg on t; an invalid cfg, already refused, estimates nothing.
func estimated(cfg suite.Config, t suite.Target, probes bool) grade.Estimate {
	estimate := suite.Estimate
	if probes {
		estimate = suite.EstimateIdentify
	}
	est, err := estimate(cfg, t)
	if err != nil {
		return grade.Estimate{}
	}
	return est
}
