package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rlconform/rlconform/internal/redact"
	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// identify probes a limiter and says which profiles explain its answers.
// Exit codes: 0 some profile fits, 1 none does (the limiter is none of
// the honest designs), 2 could not run, 130 interrupted.
func identify(args []string, stdout, stderr io.Writer, secrets *redact.Secrets) int {
	fs := flag.NewFlagSet("rlconform identify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var urls list
	var ep endpointFlags
	var ex execFlags
	var token targetToken
	fs.Var(&urls, "target", "base URL of a protocol v1 limiter; repeat for several instances sharing one store (or --endpoint, or --exec)")
	ep.register(fs)
	ex.register(fs)
	token.register(fs)
	limit := fs.Int("limit", 5, "the limit N the probes configure (or that the limiter enforces, without Configure)")
	window := fs.Duration("window", time.Minute, "the window W the probes configure, with clock control")
	rtWindow := fs.Duration("realtime-window", time.Second, "the window W without clock control")
	jsonPath := fs.String("json", "", "write the identification as JSON to `FILE` (- for stdout)")
	timeout := fs.Duration("timeout", 5*time.Second, "bound on each call to the target")
	seed := fs.Uint64("seed", 0, "seed (0: pick one)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: rlconform identify --target URL | --endpoint URL --identity ... [flags]\n\nProbes the limiter (with its clock when it has one, in real time otherwise) and says which\nprofiles and parameters explain every answer, which are ruled out and by which answer\n(profiles that decide alike as one group; a Configure that forgets every history apart).\nExit codes: 0 a profile fits, 1 none fits, 2 could not run, 130 interrupted.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return parseFailed(stderr, "identify", err, false)
	}
	if err := checkIdentify(fs, urls, &ep, &ex, *timeout); err != nil {
		fmt.Fprintf(stderr, "rlconform identify: %v\n", err)
		return ExitCannotRun
	}
	bearer, err := token.read(len(urls), secrets)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform identify: %v\n", err)
		return ExitCannotRun
	}
	var endpoint *suite.Target
	cfg := suite.Config{Limit: *limit, Window: *window, RealTimeWindow: *rtWindow, Seed: *seed}
	if len(ep.endpoints) > 0 {
		t, policy, code := ep.target(*timeout, stderr)
		if t == nil {
			return code
		}
		endpoint, cfg.Limit, cfg.RealTimeWindow = t, policy.Limit, policy.Window
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "rlconform identify: %v\n", err)
		return ExitCannotRun
	}
	out, text, closeOut, err := identifyOutputs(*jsonPath, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform identify: --json: %v\n", err)
		return ExitCannotRun
	}
	defer closeOut()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if ex.command != "" {
		started, err := ex.start(ctx, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "rlconform identify: %v\n", err)
			return cannotRun(ctx)
		}
		defer started.stop()
		urls = started.urls()
	}
	var target suite.Target
	if endpoint != nil {
		target = *endpoint
	} else {
		t, err := targets.RemoteWith(ctx, urls, targets.RemoteOptions{Timeout: *timeout, Token: bearer})
		if err != nil {
			fmt.Fprintf(stderr, "rlconform identify: %v\n", err)
			return cannotRun(ctx)
		}
		target = t
	}
	fmt.Fprintf(stderr, "rlconform: probing %s\n", target.Name)
	id, err := suite.Identify(ctx, cfg, target)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform %v\n", err)
		return cannotRun(ctx)
	}
	if err := report.Identification(text, id); err != nil {
		fmt.Fprintf(stderr, "rlconform identify: %v\n", err)
		return ExitCannotRun
	}
	if out != nil {
		if err := secrets.Render(out, func(w io.Writer) error { return report.IdentificationJSON(w, id, report.Meta{Version: Version()}) }); err != nil {
			fmt.Fprintf(stderr, "rlconform identify: --json: %v\n", err)
			return ExitCannotRun
		}
	}
	if len(id.Fits) == 0 {
		return ExitNotConformant
	}
	return ExitConformant
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

// checkIdentify reports the flags of identify that do not go together.
func checkIdentify(fs *flag.FlagSet, urls list, ep *endpointFlags, ex *execFlags, timeout time.Duration) error {
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case len(urls) == 0 && len(ep.endpoints) == 0 && ex.command == "":
		return errors.New("give --target URL, --endpoint URL or --exec CMD (rlconform serve --impl model:gcra serves one to try)")
	case len(urls) > 0 && len(ep.endpoints) > 0:
		return errors.New("--endpoint and --target exclude each other")
	case timeout <= 0:
		return errors.New("--timeout must be positive")
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if err := ep.check(); err != nil {
		return err
	}
	return ex.check(set, len(urls), len(ep.endpoints))
}
