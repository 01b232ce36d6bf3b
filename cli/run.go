package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/internal/plural"
	"github.com/rlconform/rlconform/internal/redact"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
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
	html        string
	// fromIdentify is identify's JSON whose passing probes the run takes.
	fromIdentify string
	// rerun are the arguments a reproduce line keeps (rerunArgs).
	rerun       []string
	storeURL    string
	storePrefix string
	timeout     time.Duration
	lengthFlags
	reportDir  string
	failOnSkip bool
	failFast   bool
	rtWindow   time.Duration
	// limit and window are the configuration a limiter with Configure is
	// graded at (0: the suite's, 5 per minute).
	limit    int
	window   time.Duration
	parallel int
	profile  string
	token    targetToken
	// perCall is how long a remote target's calls took when probed (0:
	// not probed).
	perCall time.Duration
	// execNotes are what the report's notes say of --exec's lanes that
	// did not start.
	execNotes []string
	endpointFlags
	execFlags
	storeFlags
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
	fs.StringVar(&f.junit, "junit", "", "write a JUnit XML report to `FILE` (- for stdout)")
	fs.StringVar(&f.json, "json", "", "write a JSON report to `FILE` (- for stdout)")
	fs.StringVar(&f.summary, "summary", "", "write a Markdown summary to `FILE` (- for stdout; e.g. $GITHUB_STEP_SUMMARY)")
	fs.StringVar(&f.html, "html", "", htmlUsage)
	fs.StringVar(&f.storeURL, "store-url", "", "Redis URL a remote target or an endpoint writes to, so key hygiene is graded there (read only)")
	fs.StringVar(&f.storePrefix, "store-prefix", "", "key prefix of the remote target's (or the endpoint's) keys in --store-url")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Second, "bound on each call to a remote target")
	f.lengthFlags.register(fs)
	fs.DurationVar(&f.rtWindow, "realtime-window", 0, "window of the specs graded in real time (targets without clock control); left out, 1s, raised by itself when the target's round trips are too slow for it, and shortened to ten round-trip margins (a few tenths of a second on loopback) for a target that declares millisecond windows (window_granularity_ms 1)")
	fs.IntVar(&f.limit, "limit", 0, "the limit N a limiter with Configure is graded at, or that one without enforces (0: 5): its scale; an --endpoint's or --rls server's is --policy")
	fs.DurationVar(&f.window, "window", 0, "the window W a limiter with Configure and clock control is graded at (0: 1m); in real time the window is --realtime-window")
	fs.IntVar(&f.parallel, "parallel", 0, fmt.Sprintf("at most this many specs side by side in real time, up to %d (0: what the target can take, said before the run and in the report's notes; 1: one at a time): an --endpoint with identities per user, and --exec on as many lanes of its processes (0: %d, at most %d), each under a key prefix of its own; a --target URL that takes Configure runs one spec at a time", suite.MaxParallel, defaultExecLanes, maxExecLanes))
	fs.BoolVar(&f.failOnSkip, "fail-on-skip", false, "a run with a spec skipped for a capability the target does not declare, or a flag not given, is not conformant enough: exit 2 (for CI jobs that demand the whole level); skips no target of its kind can avoid (an in-process context over HTTP, an endpoint's fields) do not count")
	fs.BoolVar(&f.failFast, "fail-fast", false, "stop at the first spec that fails (not one of --expect-fail): the specs not begun are not run, those running beside it finish, and the run exits 1 with what failed")
	fs.StringVar(&f.profile, "profile", model.ProfileSlidingLog, "the algorithm to grade against, `NAME[:key=value,...]`: "+profileNames()+"; 'rlconform list --profile NAME' says what it grades")
	f.endpointFlags.register(fs)
	f.execFlags.register(fs)
	f.storeFlags.register(fs)
	f.token.register(fs)
	fs.StringVar(&f.fromIdentify, "from-identify", "", "take the specs that rlconform identify --json `FILE` (of this target, within the hour) graded as this run would, and passed, instead of grading them again")
	fs.StringVar(&f.reportDir, "report-dir", "", "directory for failure artefacts such as linearizability visualisations (default: the temp directory)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	f.rerun = rerunArgs(fs, args)
	if (f.storeURL == "") != (f.storePrefix == "") {
		return nil, errors.New("--store-url and --store-prefix go together")
	}
	if f.blackBoxes() > 0 && len(f.targets) > 0 {
		return nil, errors.New("--endpoint and --target exclude each other: a service graded by its answers, or a limiter speaking the control protocol")
	}
	if err := f.endpointFlags.check(); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if err := f.execFlags.check(set, len(f.targets), f.blackBoxes()); err != nil {
		return nil, err
	}
	if f.storeURL != "" && f.command != "" {
		return nil, errors.New("--store-url is for a remote --target or an --endpoint; with --exec the run inspects its own Redis")
	}
	if f.storeURL != "" && len(f.targets) == 0 && f.blackBoxes() == 0 {
		return nil, errors.New("--store-url is for a remote --target or an --endpoint; the reference is inspected anyway")
	}
	if (f.limit != 0 || f.window != 0) && f.blackBoxes() > 0 {
		return nil, errors.New("--limit and --window configure a limiter with Configure; an --endpoint's or --rls server's limit is its own: give --policy N/W")
	}
	if f.limit < 0 || f.window < 0 {
		return nil, errors.New("--limit and --window must be positive (0: the suite's 5 per minute)")
	}
	if f.parallel < 0 || f.parallel > suite.MaxParallel {
		return nil, fmt.Errorf("--parallel %d: want 0 (what the target can take) to %d", f.parallel, suite.MaxParallel)
	}
	if f.timeout <= 0 || f.specTimeout <= 0 || f.maxDuration <= 0 {
		return nil, errors.New("--timeout, --spec-timeout and --max-duration must be positive")
	}
	if err := durationIn("--timeout", f.timeout, maxCallTimeout); err != nil {
		return nil, err
	}
	if err := f.storeFlags.check(set["store-timeout"], len(f.targets), f.blackBoxes(), f.command, f.timeout); err != nil {
		return nil, err
	}
	if err := f.lengthFlags.check(fs); err != nil {
		return nil, err
	}
	stdouts := 0
	for _, p := range []string{f.junit, f.json, f.summary, f.html} {
		if p == "-" {
			stdouts++
		}
	}
	if stdouts > 1 {
		return nil, errors.New("only one of --junit, --json, --summary and --html may write to stdout (-)")
	}
	return f, nil
}

// reportFile is one report the run was asked to write, opened before the
// run so that a bad path fails in a second, not after the whole run.
type reportFile struct {
	flag  string
	path  string
	w     io.Writer
	close func() error
	write func(io.Writer, *result.Report, report.Meta) error
}

// openReports opens every requested report (- is stdout).
func openReports(f *runFlags, stdout io.Writer) ([]reportFile, error) {
	var out []reportFile
	for _, r := range []reportFile{
		{flag: "--junit", path: f.junit, write: report.JUnit},
		{flag: "--json", path: f.json, write: report.JSON},
		{flag: "--summary", path: f.summary, write: report.Markdown},
		{flag: "--html", path: f.html, write: f.writeHTML},
	} {
		switch r.path {
		case "":
			continue
		case "-":
			r.w, r.close = stdout, func() error { return nil }
		default:
			file, err := os.Create(r.path)
			if err != nil {
				closeReports(out)
				return nil, fmt.Errorf("%s: %w", r.flag, err)
			}
			r.w, r.close = file, file.Close
		}
		out = append(out, r)
	}
	return out, nil
}

// writeReports writes rep into every report file and closes it, saying on
// stderr which one failed. No secret of the command's is written.
func writeReports(files []reportFile, rep *result.Report, secrets *redact.Secrets, stderr io.Writer) error {
	meta := reportMeta()
	for i := range files {
		r := &files[i]
		err := secrets.Render(r.w, func(w io.Writer) error { return r.write(w, rep, meta) })
		if err == nil {
			err = r.close()
		}
		r.close = func() error { return nil }
		if err != nil {
			fmt.Fprintf(stderr, "rlconform: writing %s %s: %v\n", r.flag, r.path, err)
			return err
		}
	}
	return nil
}

func closeReports(files []reportFile) {
	for _, r := range files {
		r.close()
	}
}

func run(args []string, stdout, stderr io.Writer, secrets *redact.Secrets) int {
	f, err := parseRun(args, stderr)
	if err != nil {
		return parseFailed(stderr, "run", err, true)
	}
	lvl, err := result.ParseLevel(f.level)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform run: %v\n", err)
		return ExitCannotRun
	}
	// With a report on stdout, everything people read goes to stderr.
	text := stdout
	if f.junit == "-" || f.json == "-" || f.summary == "-" || f.html == "-" {
		text = stderr
	}
	reports, err := openReports(f, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform run: %v\n", err)
		return ExitCannotRun
	}
	defer closeReports(reports)
	// From here on every exit writes the reports: one that could not grade
	// says why in each (CI reads an empty JUnit file as broken).
	name, notes := f.shown()
	couldNotRun := func(code int, format string, args ...any) int {
		why := fmt.Sprintf(format, args...)
		fmt.Fprintln(stderr, why)
		if code == ExitInterrupted {
			why = "interrupted before grading began: " + why
		}
		rep := &result.Report{Target: name, Level: lvl, Profile: f.profile, Seed: f.seed, Aborted: why, Notes: notes}
		if err := writeReports(reports, rep, secrets, stderr); err != nil {
			return ExitCannotRun
		}
		return code
	}
	token, err := f.token.read(len(f.targets), secrets)
	if err != nil {
		return couldNotRun(ExitCannotRun, "rlconform run: %v", err)
	}
	cfg := suite.Config{Level: lvl, Seed: f.seed, IDs: f.ids, Labels: f.labels, ExpectFail: f.expectFail, Limit: f.limit, Window: f.window,
		ReportDir: f.reportDir, StorePrefix: f.storePrefix, SpecTimeout: f.specTimeout, RealTimeWindow: f.rtWindow, Profile: f.profile, Parallel: f.parallel,
		FailFast: f.failFast}
	var endpoint *suite.Target
	if f.blackBoxes() > 0 {
		// The selection first, so that what the policy adds is the policy's.
		if err := suite.Validate(cfg); err != nil {
			return couldNotRun(ExitCannotRun, "rlconform run: %v", err)
		}
		var said strings.Builder
		t, code := f.endpoint(&cfg, &said)
		if t == nil {
			return couldNotRun(code, "%s", strings.TrimRight(said.String(), "\n"))
		}
		endpoint = t
		io.WriteString(stderr, said.String())
	}
	if err := suite.Validate(cfg); err != nil {
		return couldNotRun(ExitCannotRun, "rlconform run: %v", err)
	}
	if notes, err = f.prior(&cfg, notes, stderr); err != nil {
		return couldNotRun(ExitCannotRun, "rlconform run: %v", err)
	}

	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	total, done := suite.Count(cfg), 0
	cfg.Progress = func(r result.Result) {
		done++
		fmt.Fprintf(stderr, "[%2d/%d] %-13s %s\n", done, total, r.Status, r.ID)
	}
	target, release, err := f.graded(sigCtx, endpoint, &cfg, token, stderr)
	defer release()
	if err != nil {
		return couldNotRun(cannotRun(sigCtx), "rlconform: %v", err)
	}
	f.storeFlags.apply(&cfg, target)
	length := f.lengthFlags.plan(estimated(cfg, *target, false), f.perCall, stderr)
	cfg.SpecTimeout = length.spec
	ctx, cancel := length.context(sigCtx)
	defer cancel()
	fmt.Fprintf(stderr, "rlconform: grading %s, %s\n", target.Name, plural.Count(total, "spec"))
	rep, err := suite.Check(ctx, cfg, *target)
	if err != nil {
		return couldNotRun(cannotRun(sigCtx), "rlconform: %v", err)
	}
	rep.Notes = append(append(rep.Notes, notes...), f.execNotes...)
	return f.finish(sigCtx, rep, text, reports, secrets, stderr)
}

// prior reads --from-identify, when given, into cfg.Prior, and returns
// notes with what the run takes from it, or why not.
func (f *runFlags) prior(cfg *suite.Config, notes []string, stderr io.Writer) ([]string, error) {
	if f.fromIdentify == "" {
		return notes, nil
	}
	prior, why, err := readPrior(f.fromIdentify, Version(), time.Now())
	if err != nil {
		return notes, err
	}
	if why != "" {
		fmt.Fprintln(stderr, "rlconform:", why)
		notes = append(notes, why)
	}
	cfg.Prior = prior
	return notes, nil
}

// finish prints the graded run's report to text, writes the reports, and
// returns the exit code: interrupted (130) when sigCtx was, else the
// verdict's.
func (f *runFlags) finish(sigCtx context.Context, rep *result.Report, text io.Writer, reports []reportFile, secrets *redact.Secrets, stderr io.Writer) int {
	switch {
	case rep.StoppedAt != "":
		fmt.Fprintf(stderr, "rlconform: --fail-fast: stopped at the first failure, %s; the specs not begun were not run\n", rep.StoppedAt)
	case rep.Aborted != "":
		fmt.Fprintf(stderr, "rlconform: the run could not go on: %s\n", rep.Aborted)
	}
	report.Failures(text, rep)
	fmt.Fprintln(text)
	report.Text(text, rep)
	if err := writeReports(reports, rep, secrets, stderr); err != nil {
		return ExitCannotRun
	}
	if sigCtx.Err() != nil {
		fmt.Fprintln(stderr, "rlconform: interrupted")
		return ExitInterrupted
	}
	return f.exitCode(rep, stderr)
}

// exitCode is the exit of a run that graded: its verdict's, and 2 for
// --fail-on-skip when a spec was skipped by choice.
func (f *runFlags) exitCode(rep *result.Report, stderr io.Writer) int {
	switch v := rep.Verdict(); v.Outcome {
	case result.Conformant:
		if f.failOnSkip {
			if why := skippedByChoice(rep); len(why) > 0 {
				fmt.Fprintf(stderr, "rlconform: --fail-on-skip: %d spec(s) were skipped for a capability the target does not declare or a flag not given, so the level was not graded in full:\n  %s\n",
					len(why), strings.Join(why, "\n  "))
				return ExitCannotRun
			}
		}
		return ExitConformant
	case result.NotConformant:
		return ExitNotConformant
	}
	return ExitCannotRun
}

// gradable says why the run cannot grade an endpoint of policy p sent at
// most rps requests a second: a configuration out of the catalogue's
// range (cfg with the policy's limit and window), or a pace that cannot
// exceed the limit in a window or within --max-duration.
func (f *runFlags) gradable(cfg suite.Config) func(p adapters.Policy, rps int) error {
	return func(p adapters.Policy, rps int) error {
		cfg.Limit, cfg.RealTimeWindow = p.Limit, p.Window
		if err := suite.Validate(cfg); err != nil {
			return err
		}
		var bound time.Duration // left out, the run's bound follows the policy
		if f.maxSet {
			bound = f.maxDuration
		}
		return paceFits(p, rps, f.maxRPS == 0, bound)
	}
}

// shown is the name of the target graded, its secrets redacted, and the
// note that says which were.
func (f *runFlags) shown() (string, []string) {
	name := "reference"
	switch {
	case f.command != "":
		name = f.command
	case len(f.targets) > 0:
		name = redact.URL(f.targets[0])
	case len(f.rls) > 0:
		name = "rls " + f.rls[0]
	case len(f.endpoints) > 0:
		name = redact.URL(f.endpoints[0])
	}
	if note := removedNote(append(slices.Clone(f.targets), f.endpoints...)); note != "" {
		return name, []string{note}
	}
	return name, nil
}

// endpoint is the --endpoint target, its policy the configuration graded
// (in real time); nil when it cannot be graded, which said says why,
// with the exit code.
func (f *runFlags) endpoint(cfg *suite.Config, said io.Writer) (*suite.Target, int) {
	t, policy, code := f.endpointFlags.target(f.timeout, f.gradable(*cfg), said)
	if t == nil || code != ExitConformant {
		return nil, code
	}
	cfg.Limit, cfg.RealTimeWindow = policy.Limit, policy.Window
	if t.SharedLimit {
		// Each spec first waits out what the ones before it left; the
		// estimate, said before the run, counts it.
		fmt.Fprintln(said, "rlconform: --identity none: one limit shared by every request: specs that need several users are skipped, and each of the others first waits for the limit to be fresh (a window after the last request, two for a profile other than the sliding log)")
	}
	return t, ExitConformant
}

// graded is the target graded: the --endpoint (nil when none), after
// its pre-flight check (an error when the identity does not reach it),
// or else the limiter; release is never nil.
func (f *runFlags) graded(ctx context.Context, endpoint *suite.Target, cfg *suite.Config, token string, stderr io.Writer) (*suite.Target, func(), error) {
	if endpoint != nil {
		policy := adapters.Policy{Limit: cfg.Limit, Window: cfg.RealTimeWindow}
		if err := preflight(ctx, *endpoint, policy, f.identity, f.rlsSent(), stderr); err != nil {
			return endpoint, func() {}, err
		}
		release, err := f.inspect(ctx, cfg, endpoint)
		return endpoint, release, err
	}
	t, release, err := f.limiter(ctx, cfg, token, stderr)
	return &t, release, err
}

// limiter is the limiter graded when no --endpoint is: the reference's
// profile, the --exec service (started here) or the --target instances;
// release stops and closes what it started, and is never nil.
func (f *runFlags) limiter(ctx context.Context, cfg *suite.Config, token string, stderr io.Writer) (suite.Target, func(), error) {
	release := func() {}
	if f.command == "" && len(f.targets) == 0 {
		target, err := targets.ReferenceProfile(model.MustVariant(f.profile))
		return target, release, err
	}
	var started *execed
	var err error
	lanes := 1
	if f.command != "" {
		if started, err = f.execFlags.start(ctx, stderr); err != nil {
			return suite.Target{}, release, err
		}
		release = func() { started.stop() }
		lanes = f.execLanes(ctx, *cfg, started, token, stderr)
		f.targets = started.urls()
	}
	t, closeStore, err := f.remote(ctx, cfg, token, started, lanes, stderr)
	if err != nil {
		return suite.Target{}, release, err
	}
	stop := release
	return t, func() { closeStore(); stop() }, nil
}

// execLanes starts the lanes of --exec processes that the specs side by
// side can use (--parallel, else defaultExecLanes; at most maxExecLanes)
// and returns how many lanes there are: 1 when the service keeps time on
// a clock the grader sets (nothing to wait out), takes no Configure (one
// set serves every spec), or the run has too few specs, so that no
// process is started for nothing.
func (f *runFlags) execLanes(ctx context.Context, cfg suite.Config, started *execed, token string, stderr io.Writer) int {
	want := cmp.Or(f.parallel, defaultExecLanes)
	if want > maxExecLanes {
		fmt.Fprintf(stderr, "rlconform: --exec: --parallel %d: at most %d lanes of processes (each --instances %d of them)\n", want, maxExecLanes, f.instances)
		want = maxExecLanes
	}
	if want < 2 {
		return 1
	}
	probeCtx, cancel := context.WithTimeout(ctx, 3*f.timeout)
	probe, err := targets.RemoteWith(probeCtx, started.urls(), targets.RemoteOptions{Timeout: f.timeout, Token: token})
	cancel()
	if err != nil || !probe.Capabilities.Configure {
		return 1 // what failed is said once the run probes it
	}
	probe.Lanes = want
	if want = estimated(cfg, probe, false).Lanes; want < 2 {
		return 1
	}
	lanes, notes := started.addLanes(ctx, want, stderr)
	f.execNotes = notes
	return lanes
}

// remote probes the --target (or --exec) instances, in lanes of equal
// size (Target.Lanes), says how fast they answer, and sets cfg to inspect
// their store; release closes what it opened.
func (f *runFlags) remote(ctx context.Context, cfg *suite.Config, token string, started *execed, lanes int, stderr io.Writer) (suite.Target, func(), error) {
	probeCtx, cancel := context.WithTimeout(ctx, 3*f.timeout)
	target, err := targets.RemoteWith(probeCtx, f.targets, targets.RemoteOptions{Timeout: f.timeout, Token: token, Lanes: lanes})
	cancel()
	if err != nil {
		return suite.Target{}, nil, err
	}
	probeCtx, cancel = context.WithTimeout(ctx, speedProbes*f.timeout)
	times := timeCalls(probeCtx, f.targets[0], adapters.ClientOptions{Timeout: f.timeout, Token: token}, target.Capabilities.Remaining)
	cancel()
	f.perCall = callSpeed(times, stderr)
	if started != nil {
		// The run owns the service's Redis: it inspects the keys, and
		// may stop it (robust/store-outage).
		cfg.Redis, cfg.StorePrefix = started.redis, started.prefix
		target.NeedsRedis, target.Capabilities.StoreInspection = true, true
		target.Name = fmt.Sprintf("%s (--exec, %d instance(s))", f.command, f.instances)
	}
	release, err := f.inspect(ctx, cfg, &target)
	if err != nil {
		return suite.Target{}, nil, err
	}
	return target, release, nil
}

// inspect opens --store-url, when given, for the run to read t's keys
// (key hygiene; never written): t then declares store inspection. The
// Redis of a remote target or of an endpoint alike: the spec judges the
// keys that appear under --store-prefix while it runs. release closes
// it, and is never nil.
func (f *runFlags) inspect(ctx context.Context, cfg *suite.Config, t *suite.Target) (func(), error) {
	if f.storeURL == "" {
		return func() {}, nil
	}
	store, err := redisenv.FromURL(ctx, f.storeURL)
	if err != nil {
		return func() {}, fmt.Errorf("--store-url: %w", err)
	}
	cfg.Redis = store
	t.Capabilities.StoreInspection = true
	return func() { store.Close() }, nil
}

// skippedByChoice lists the skipped specs that the target or the run
// could have had graded (a capability to declare, a flag to give), with
// their reasons; structural skips (no target of this kind can) are not.
func skippedByChoice(rep *result.Report) []string {
	var out []string
	for _, r := range rep.Results {
		if r.Status == result.Skipped && !r.Structural {
			out = append(out, r.ID+": "+r.Message)
		}
	}
	return out
}

// cannotRun is the exit code of a run that could not start: interrupted
// (130) when the context was cancelled, else 2.
func cannotRun(ctx context.Context) int {
	if ctx.Err() != nil {
		return ExitInterrupted
	}
	return ExitCannotRun
}
