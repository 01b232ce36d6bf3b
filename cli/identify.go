package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/internal/redact"
	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// identify probes a limiter and says which profiles explain its answers.
// Exit codes: 0 some profile fits, 1 none does (the limiter is none of
// the honest designs), 2 could not run or undecided (no fit, some
// profiles not judged within the budget of steps), 130 interrupted.
func identify(args []string, stdout, stderr io.Writer, secrets *redact.Secrets) int {
	f, fs := identifyFlagSet(stderr)
	if err := fs.Parse(args); err != nil {
		return parseFailed(stderr, "identify", err, false)
	}
	if err := f.validate(fs); err != nil {
		fmt.Fprintf(stderr, "rlconform identify: %v\n", err)
		return ExitCannotRun
	}
	bearer, err := f.token.read(len(f.targets), secrets)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform identify: %v\n", err)
		return ExitCannotRun
	}
	var endpoint *suite.Target
	cfg := suite.Config{Limit: f.limit, Window: f.window, RealTimeWindow: f.rtWindow, Seed: f.seed}
	if f.blackBoxes() > 0 {
		t, policy, code := f.endpointFlags.target(f.timeout, func(p adapters.Policy, rps int) error {
			c := cfg
			c.Limit, c.RealTimeWindow = p.Limit, p.Window
			if err := suite.Validate(c); err != nil {
				return err
			}
			return paceFits(p, rps, f.maxRPS == 0, 0)
		}, stderr)
		if t == nil {
			return code
		}
		endpoint, cfg.Limit, cfg.RealTimeWindow = t, policy.Limit, policy.Window
	}
	if err := suite.Validate(cfg); err != nil {
		fmt.Fprintf(stderr, "rlconform identify: %v\n", err)
		return ExitCannotRun
	}
	out, text, closeOut, err := identifyOutputs(f.json, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform identify: --json: %v\n", err)
		return ExitCannotRun
	}
	defer closeOut()
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	target, release, code := f.identifyTarget(sigCtx, endpoint, bearer, stderr)
	defer release()
	if code != ExitConformant {
		return code
	}
	length := f.lengthFlags.plan(estimated(cfg, target, true), 0, stderr)
	cfg.SpecTimeout = length.spec
	ctx, cancel := length.context(sigCtx)
	defer cancel()
	if endpoint != nil {
		if err := preflight(ctx, *endpoint, adapters.Policy{Limit: cfg.Limit, Window: cfg.RealTimeWindow}, f.identity, f.rlsSent(), stderr); err != nil {
			fmt.Fprintf(stderr, "rlconform: %v\n", err)
			return cannotRun(sigCtx)
		}
	}
	fmt.Fprintf(stderr, "rlconform: probing %s\n", target.Name)
	id, err := suite.Identify(ctx, cfg, target)
	if err != nil {
		if ctx.Err() != nil && sigCtx.Err() == nil {
			err = fmt.Errorf("%w (%v)", err, context.Cause(ctx))
		}
		fmt.Fprintf(stderr, "rlconform %v\n", err)
		return cannotRun(sigCtx)
	}
	return reportIdentification(id, text, out, stderr, secrets)
}

// identifyOutputs are where identify writes its JSON (nil for none) and
// its text: with the JSON on stdout (-), the text goes to stderr.
func identifyOutputs(jsonPath string, stdout, stderr io.Writer) (out, text io.Writer, closeOut func(), err error) {
	switch jsonPath {
	case "":
		return nil, stdout, func() {}, nil
	case "-":
		return stdout, stderr, func() {}, nil
	}
	f, err := os.Create(jsonPath)
	if err != nil {
		return nil, nil, nil, err
	}
	return f, stdout, func() { f.Close() }, nil
}

// identifyFlags are the flags of rlconform identify.
type identifyFlags struct {
	targets  list
	limit    int
	window   time.Duration
	rtWindow time.Duration
	json     string
	timeout  time.Duration
	seed     uint64
	lengthFlags
	endpointFlags
	execFlags
	token targetToken
}

// identifyFlagSet is identify's flag set, parsing into the flags returned.
func identifyFlagSet(stderr io.Writer) (*identifyFlags, *flag.FlagSet) {
	f := &identifyFlags{}
	fs := flag.NewFlagSet("rlconform identify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&f.targets, "target", "base URL of a protocol v1 limiter; repeat for several instances sharing one store (or --endpoint, or --exec)")
	f.endpointFlags.register(fs)
	f.execFlags.register(fs)
	f.token.register(fs)
	fs.IntVar(&f.limit, "limit", 5, "the limit N the probes configure (or that the limiter enforces, without Configure)")
	fs.DurationVar(&f.window, "window", time.Minute, "the window W the probes configure, with clock control")
	fs.DurationVar(&f.rtWindow, "realtime-window", time.Second, "the window W without clock control")
	fs.StringVar(&f.json, "json", "", "write the identification as JSON to `FILE` (- for stdout)")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Second, "bound on each call to the target")
	f.lengthFlags.register(fs)
	fs.Uint64Var(&f.seed, "seed", 0, "seed (0: pick one)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: rlconform identify --target URL | --endpoint URL --identity ... [flags]\n\nProbes the limiter (with its clock when it has one, in real time otherwise) and says which\nprofiles and parameters explain every answer, which are ruled out and by which answer\n(profiles that decide alike as one group; a Configure that forgets every history apart).\nExit codes: 0 a profile fits, 1 none fits, 2 could not run or undecided (profiles not judged), 130 interrupted.")
		fs.PrintDefaults()
	}
	return f, fs
}

// validate reports what in the flags fs parsed cannot run: an argument, no
// limiter to probe, or flags that do not go together.
func (f *identifyFlags) validate(fs *flag.FlagSet) error {
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case len(f.targets) == 0 && f.blackBoxes() == 0 && f.command == "":
		return errors.New("give --target URL, --endpoint URL, --rls HOST:PORT or --exec CMD (rlconform serve --impl model:gcra serves one to try)")
	case len(f.targets) > 0 && f.blackBoxes() > 0:
		return errors.New("--endpoint and --target exclude each other")
	case f.timeout <= 0:
		return errors.New("--timeout must be positive")
	case f.timeout > maxCallTimeout:
		return durationIn("--timeout", f.timeout, maxCallTimeout)
	}
	if err := f.endpointFlags.check(); err != nil {
		return err
	}
	if err := f.lengthFlags.check(fs); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	return f.execFlags.check(set, len(f.targets), f.blackBoxes())
}

// identifyTarget is the limiter to probe: endpoint when --endpoint gave
// one, else the service --exec starts, else the --target URLs. release
// stops what it started, once the probing is done; bearer is the
// --target-token-file's token. A code other than
// ExitConformant says it could not, and why on stderr.
func (f *identifyFlags) identifyTarget(ctx context.Context, endpoint *suite.Target, bearer string, stderr io.Writer) (target suite.Target, release func(), code int) {
	release = func() {}
	urls := f.targets
	if f.command != "" {
		started, err := f.execFlags.start(ctx, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "rlconform identify: %v\n", err)
			return target, release, cannotRun(ctx)
		}
		release = func() { _ = started.stop() }
		urls = started.urls()
	}
	if endpoint != nil {
		return *endpoint, release, ExitConformant
	}
	target, err := targets.RemoteWith(ctx, urls, targets.RemoteOptions{Timeout: f.timeout, Token: bearer})
	if err != nil {
		fmt.Fprintf(stderr, "rlconform identify: %v\n", err)
		return target, release, cannotRun(ctx)
	}
	return target, release, ExitConformant
}

// reportIdentification writes id for people to text and, when out is set,
// as JSON to out, and is identify's exit code: whether some profile fits.
func reportIdentification(id *result.Identification, text, out, stderr io.Writer, secrets *redact.Secrets) int {
	if err := report.Identification(text, id); err != nil {
		fmt.Fprintf(stderr, "rlconform identify: %v\n", err)
		return ExitCannotRun
	}
	if out != nil {
		if err := secrets.Render(out, func(w io.Writer) error { return report.IdentificationJSON(w, id, reportMeta()) }); err != nil {
			fmt.Fprintf(stderr, "rlconform identify: --json: %v\n", err)
			return ExitCannotRun
		}
	}
	if id.Undecided() {
		fmt.Fprintf(stderr, "rlconform identify: undecided: no profile judged fits, and %s could not be judged within identify's budget of steps (slow round trips widen the searches: try again on a quieter machine)\n", strings.Join(id.Unjudged, ", "))
		return ExitCannotRun
	}
	if len(id.Fits) == 0 {
		return ExitNotConformant
	}
	return ExitConformant
}
