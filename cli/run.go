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
	"time"

	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/suite"
)

// runFlags are the flags of rlconform run.
type runFlags struct {
	targets     list
	level       string
	ids, labels list
	expectFail  list
	seed        uint64
	junit, json string
	summary     string
	storeURL    string
	storePrefix string
	timeout     time.Duration
	reportDir   string
}

func parseRun(args []string, stderr io.Writer) (*runFlags, error) {
	f := &runFlags{}
	fs := flag.NewFlagSet("rlconform run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&f.targets, "target", "base URL of a protocol v1 limiter; repeat for several instances sharing one store (default: the reference limiter)")
	fs.StringVar(&f.level, "level", "all", "highest level to grade: core, strict, robust or all")
	fs.Var(&f.ids, "id", "only these spec ids, or prefixes ending in / (comma-separated, repeatable)")
	fs.Var(&f.labels, "label", "only specs with any of these labels: a level or needs-<capability> (comma-separated, repeatable)")
	fs.Var(&f.expectFail, "expect-fail", "spec ids the limiter knowingly fails: only unexpected results fail the run (comma-separated, repeatable)")
	fs.Uint64Var(&f.seed, "seed", 0, "seed for the randomised specs, to reproduce a run (0: pick one; the report shows it)")
	fs.StringVar(&f.junit, "junit", "", "write a JUnit XML report to `FILE`")
	fs.StringVar(&f.json, "json", "", "write a JSON report to `FILE`")
	fs.StringVar(&f.summary, "summary", "", "write a Markdown summary to `FILE` (e.g. $GITHUB_STEP_SUMMARY)")
	fs.StringVar(&f.storeURL, "store-url", "", "Redis URL a remote target writes to, so key hygiene is graded there (read only)")
	fs.StringVar(&f.storePrefix, "store-prefix", "", "key prefix of the remote target's keys in --store-url")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Second, "bound on each call to a remote target")
	fs.StringVar(&f.reportDir, "report-dir", "", "directory for failure artefacts such as linearizability visualisations (default: the temp directory)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if (f.storeURL == "") != (f.storePrefix == "") {
		return nil, errors.New("--store-url and --store-prefix go together")
	}
	if f.storeURL != "" && len(f.targets) == 0 {
		return nil, errors.New("--store-url is for a remote --target; the reference is inspected anyway")
	}
	if f.timeout <= 0 {
		return nil, errors.New("--timeout must be positive")
	}
	return f, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	f, err := parseRun(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return ExitConformant
	}
	if err != nil {
		fmt.Fprintf(stderr, "rlconform run: %v\n", err)
		return ExitCannotRun
	}
	lvl, err := suite.ParseLevel(f.level)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform run: %v\n", err)
		return ExitCannotRun
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	cfg := suite.Config{Level: lvl, Seed: f.seed, IDs: f.ids, Labels: f.labels, ExpectFail: f.expectFail,
		ReportDir: f.reportDir, StorePrefix: f.storePrefix}
	total, done := 0, 0
	cfg.Progress = func(r suite.Result) {
		done++
		fmt.Fprintf(stderr, "[%2d/%d] %-13s %s\n", done, total, r.Status, r.ID)
	}
	target := suite.ReferenceTarget()
	if len(f.targets) > 0 {
		probeCtx, cancel := context.WithTimeout(ctx, 3*f.timeout)
		target, err = suite.RemoteTarget(probeCtx, f.targets, f.timeout)
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "rlconform: %v\n", err)
			return ExitCannotRun
		}
		if f.storeURL != "" {
			store, err := redisenv.FromURL(ctx, f.storeURL)
			if err != nil {
				fmt.Fprintf(stderr, "rlconform: --store-url: %v\n", err)
				return ExitCannotRun
			}
			defer store.Close()
			cfg.Redis = store
			target.Capabilities.StoreInspection = true
		}
	}
	total = suite.Count(cfg)
	if total == 0 {
		fmt.Fprintln(stderr, "rlconform: no spec matches --level, --id and --label")
		return ExitCannotRun
	}
	fmt.Fprintf(stderr, "rlconform: grading %s, %d specs\n", target.Name, total)
	rep, err := suite.Check(ctx, cfg, target)
	if err != nil {
		if rep != nil && len(rep.Results) > 0 {
			fmt.Fprintf(stdout, "\n%s\n", strings.TrimRight(rep.Results[len(rep.Results)-1].Message, "\n"))
		}
		fmt.Fprintf(stderr, "rlconform: %v\n", err)
		return ExitCannotRun
	}
	for _, r := range rep.Results {
		if (r.Status == suite.Failed || r.Status == suite.Inconclusive) && !r.ExpectedFailure {
			fmt.Fprintf(stdout, "\n%s\n", strings.TrimRight(r.Message, "\n"))
		}
	}
	fmt.Fprintf(stdout, "\n%s", rep.Table())
	if err := writeReports(f, rep); err != nil {
		fmt.Fprintf(stderr, "rlconform: %v\n", err)
		return ExitCannotRun
	}
	if err := rep.Err(); err != nil {
		fmt.Fprintf(stdout, "NOT CONFORMANT: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
		return ExitNotConformant
	}
	fmt.Fprintln(stdout, "CONFORMANT")
	return ExitConformant
}

func writeReports(f *runFlags, rep *suite.Report) error {
	for _, out := range []struct {
		path  string
		write func(io.Writer, *suite.Report) error
	}{{f.junit, report.JUnit}, {f.json, report.JSON}, {f.summary, report.Markdown}} {
		if out.path == "" {
			continue
		}
		file, err := os.Create(out.path)
		if err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
		err = out.write(file, rep)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", out.path, err)
		}
	}
	return nil
}
