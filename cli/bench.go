package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/rlconform/rlconform/bench"
	"github.com/rlconform/rlconform/internal/redact"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// ExitRegressed is rlconform bench's exit code when the run is slower than
// its --compare baseline by more than --max-regression: the limiter
// decides right, but too slowly for the gate.
const ExitRegressed = 3

// benchFlags are the flags of rlconform bench.
type benchFlags struct {
	targets       list
	concurrency   int
	rate          float64
	duration      time.Duration
	users         int
	zipf          float64
	limit         int
	window        time.Duration
	timeout       time.Duration
	seed          uint64
	json, svg     string
	html          string
	compare       string
	maxRegression float64
	progress      string
	profile       string
	requireExact  bool
	failover      string
	failoverAt    time.Duration
	token         targetToken
	endpointFlags
	execFlags
	k6Flags
}

func parseBench(args []string, stderr io.Writer) (*benchFlags, error) {
	f := &benchFlags{}
	fs := flag.NewFlagSet("rlconform bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&f.targets, "target", "base URL of a protocol v1 limiter; repeat for several instances sharing one store (default: the reference limiter on a Redis found or started)")
	fs.IntVar(&f.concurrency, "concurrency", 16, "callers: in a closed loop each sends its next request when its last is answered; with --rate, the most requests in flight")
	fs.Var((*rateFlag)(&f.rate), "rate", "an open loop: requests due at this constant `R` per second (20000 or 20000/s) whatever the answers, latency counted from when each was due (0: closed loop)")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "how long to send requests")
	fs.IntVar(&f.users, "users", 100, "how many users the requests are spread over")
	fs.Float64Var(&f.zipf, "zipf", 0, "skew the users: user k is drawn with probability ∝ (1+k)^-`S` (S > 1; user 0 is a hot key); 0: uniform")
	fs.IntVar(&f.limit, "limit", 100, "the limit N the limiter is configured with (Configure), and that the exactness check judges")
	fs.DurationVar(&f.window, "window", time.Second, "the window W, with --limit")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Second, "bound on each call to a --target or --endpoint (the built-in limiter bounds its own at 2s); also how long calls in flight at the end may take")
	fs.Uint64Var(&f.seed, "seed", 0, "seed of the users' draw (0: pick one; the report shows it)")
	fs.StringVar(&f.json, "json", "", "write the result as JSON to `FILE` (- for stdout): a baseline for --compare")
	fs.StringVar(&f.svg, "svg", "", "write a chart of latency over time and the allowed rate against the limit to `FILE` (a self-contained SVG)")
	fs.StringVar(&f.html, "html", "", "write an HTML report to `FILE` (- for stdout): one self-contained page with the figures, the chart of --svg and the evidence of any overshoot or under-admission")
	fs.StringVar(&f.compare, "compare", "", "a `BASELINE.json` written by --json: show the change in throughput and p99 against it")
	fs.Float64Var(&f.maxRegression, "max-regression", 0, "with --compare: exit 3 when throughput falls, or p99 rises, by more than `PERCENT`")
	fs.StringVar(&f.progress, "progress", "auto", "a live progress line: auto (when stderr is a terminal), always or never")
	fs.StringVar(&f.profile, "profile", model.ProfileSlidingLog, "the algorithm the limiter claims, `NAME[:key=value,...]`: the exactness check holds its decisions to that profile's bounds ("+strings.Join(model.Builtin().Names(), ", ")+", with their parameters as for run); with no --target, --endpoint or --exec it also picks the built-in limiter benched")
	fs.StringVar(&f.failover, "failover", "", "a Sentinel `URL` of the limiter's store (redis+sentinel://HOST:PORT/MASTER, docs/redis.md): its Sentinels are asked to fail the master over (SENTINEL FAILOVER) --failover-at into the run, and the result says how many requests were admitted beyond the limit after it, a figure; the verdict is on the requests before it (docs/faults.md)")
	fs.DurationVar(&f.failoverAt, "failover-at", 0, "with --failover: how far into the run (default: half of --duration)")
	fs.BoolVar(&f.requireExact, "require-exactness", false, "exit 2, with the reason, when exactness was not checked (a target stamped with our clock) or not exercised (no user was ever denied): a gate that checked nothing fails")
	f.endpointFlags.register(fs)
	f.execFlags.register(fs)
	f.token.register(fs)
	f.k6Flags.register(fs)
	if err := f.k6Flags.parse(fs, args); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if len(f.fromK6) > 0 || set["user-tag"] || set["clock-skew"] || set["request-timeout"] {
		if err := f.k6Flags.check(set); err != nil {
			return f, err
		}
		return f, statusIn(f.limitedStatus)
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case f.blackBoxes() > 0 && len(f.targets) > 0:
		return nil, errors.New("--endpoint and --target exclude each other")
	case f.blackBoxes() > 0 && (set["limit"] || set["window"]):
		return nil, errors.New("--limit and --window configure a limiter; an --endpoint's limit is its --policy (or its RateLimit-Policy field)")
	case f.json == "-" && f.html == "-":
		return nil, errors.New("only one of --json and --html may write to stdout (-)")
	case f.maxRegression < 0:
		return nil, errors.New("--max-regression must not be negative")
	case set["max-regression"] && f.compare == "":
		return nil, errors.New("--max-regression needs --compare BASELINE.json")
	case f.timeout <= 0:
		return nil, errors.New("--timeout must be positive")
	case f.timeout > maxCallTimeout || f.duration > maxBenchDuration:
		return nil, errors.Join(durationIn("--timeout", f.timeout, maxCallTimeout), durationIn("--duration", f.duration, maxBenchDuration))
	case f.progress != "auto" && f.progress != "always" && f.progress != "never":
		return nil, fmt.Errorf("--progress %q: want auto, always or never", f.progress)
	case set["failover-at"] && f.failover == "":
		return nil, errors.New("--failover-at goes with --failover URL")
	}
	if f.failover != "" {
		if !redisenv.IsSentinelURL(f.failover) {
			return nil, errors.New("--failover: want a Sentinel URL (redis+sentinel://HOST:PORT/MASTER, or redis://HOST:PORT?master_name=MASTER)")
		}
		if _, err := redisenv.ParseSentinelURL(f.failover); err != nil {
			return nil, fmt.Errorf("--failover: want a Sentinel URL (redis+sentinel://HOST:PORT/MASTER): %w", err)
		}
		if !set["failover-at"] {
			f.failoverAt = f.duration / 2
		}
	}
	if err := f.endpointFlags.check(); err != nil {
		return nil, err
	}
	if err := f.execFlags.check(set, len(f.targets), f.blackBoxes()); err != nil {
		return nil, err
	}
	return f, nil
}

func runBench(args []string, stdout, stderr io.Writer, secrets *redact.Secrets) int {
	f, err := parseBench(args, stderr)
	if err != nil {
		return parseFailed(stderr, "bench", err, true)
	}
	spec, err := model.ParseVariant(f.profile)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform bench: --profile: %v\n", err)
		return ExitCannotRun
	}
	var baseline *bench.Result
	if f.compare != "" {
		if baseline, err = readBaseline(f.compare); err != nil {
			fmt.Fprintf(stderr, "rlconform bench: --compare: %v\n", err)
			return ExitCannotRun
		}
	}
	if f.seed == 0 {
		f.seed = uint64(time.Now().UnixNano())
	}
	cfg := bench.Config{Concurrency: f.concurrency, Rate: f.rate, Duration: f.duration, Users: f.users, Zipf: f.zipf,
		Limit: f.limit, Window: f.window, Seed: f.seed, Grace: f.timeout,
		UserPrefix: fmt.Sprintf("bench-%x-u", time.Now().UnixNano()&0xffffffff), Profile: spec}
	if f.failover != "" {
		url := f.failover
		secrets.AddURL(url)
		cfg.Failover, cfg.FailoverAt = func(ctx context.Context) error { return redisenv.Failover(ctx, url) }, f.failoverAt
	}
	if err := cfg.ValidateLoad(); err != nil {
		fmt.Fprintf(stderr, "rlconform bench: %v\n", err)
		return ExitCannotRun
	}
	// The files are opened first: a bad path fails now, not after the load.
	files, err := openBenchFiles(f, stdout, secrets)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform bench: %v\n", err)
		return ExitCannotRun
	}
	defer files.close()
	text := stdout
	if f.json == "-" || f.html == "-" {
		text = stderr
	}
	if len(f.fromK6) > 0 {
		return fromK6(f, spec, baseline, files, text, stderr)
	}
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	token, err := f.token.read(len(f.targets), secrets)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform bench: %v\n", err)
		return ExitCannotRun
	}
	name, closeAll, code := benchInstances(sigCtx, f, spec, token, &cfg, stderr)
	defer closeAll()
	if code != ExitConformant {
		return code
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "rlconform bench: %v\n", err)
		return ExitCannotRun
	}
	mode := strings.Replace(cfg.Mode(), "-", " ", 1)
	fmt.Fprintf(stderr, "rlconform: benching %s for %v (%s, seed %d)\n", name, f.duration, mode, f.seed)
	finish := progressLine(f.progress, cfg.Duration, stderr, &cfg)
	res, err := bench.Run(sigCtx, cfg)
	finish(res)
	if res == nil {
		fmt.Fprintf(stderr, "rlconform: %v\n", err)
		return ExitCannotRun
	}
	res.Target, res.Version = name, Version()
	return reportBench(f, res, err, baseline, files, text, stderr)
}

// reportBench prints the table of res, writes its files, says every
// finding and returns the exit code: interrupted (130) as for run, else
// the gravest: wrong (1), faulty (2), slower (3). err is why the run
// ended early, if it did.
func reportBench(f *benchFlags, res *bench.Result, err error, baseline *bench.Result, files *benchFiles, text, stderr io.Writer) int {
	fmt.Fprintf(text, "target      %s\n", res.Target)
	res.Text(text)
	var regressed []string
	if baseline != nil {
		c := bench.Compare(res, baseline)
		fmt.Fprintf(text, "compared    with %s: throughput %+.1f%% (%.0f → %.0f/s), p99 %+.1f%% (%v → %v)\n", f.compare,
			c.Throughput, baseline.Throughput, res.Throughput, c.P99, bench.RoundLatency(baseline.Latency.P99), bench.RoundLatency(res.Latency.P99))
		if diff := bench.Differences(res, baseline); len(diff) > 0 {
			fmt.Fprintf(stderr, "rlconform: warning: the baseline was not taken under the same load (%s): the change measures that too\n", strings.Join(diff, "; "))
		}
		if f.maxRegression > 0 {
			regressed = c.Regressed(f.maxRegression)
		}
	}
	if err := files.write(res); err != nil {
		fmt.Fprintf(stderr, "rlconform: %v\n", err)
		return ExitCannotRun
	}
	failed := res.Failed()
	if failed {
		fmt.Fprintln(stderr, "rlconform: the limiter is not exact under load")
	}
	faulty := res.ErrorCount()
	if fo := res.Failover; fo != nil && fo.Error == "" {
		faulty -= fo.Failed // the failover's doing: its figure
	}
	if faulty > 0 {
		fmt.Fprintf(stderr, "rlconform: %d calls failed (%s): the figures are of a faulty run\n", res.ErrorCount(), strings.Join(errorKinds(res), ", "))
	}
	proved := unexercised(res)
	if f.requireExact && proved != "" && !failed {
		fmt.Fprintf(stderr, "rlconform: --require-exactness: %s\n", proved)
	}
	if len(regressed) > 0 {
		fmt.Fprintf(stderr, "rlconform: slower than the baseline past --max-regression %g%%: %s\n", f.maxRegression, strings.Join(regressed, ", "))
	}
	switch {
	case res.Interrupted:
		fmt.Fprintf(stderr, "rlconform: %v\n", err)
		return ExitInterrupted
	case failed:
		return ExitNotConformant
	case faulty > 0:
		return ExitCannotRun
	case f.requireExact && proved != "":
		return ExitCannotRun
	case len(regressed) > 0:
		return ExitRegressed
	}
	return ExitConformant
}

// unexercised says why a run's exactness proves nothing: not checked, or
// no user was ever denied ("" when it was checked and exercised).
func unexercised(res *bench.Result) string {
	switch {
	case res.Exactness == nil:
		return "exactness was not checked: " + res.NotChecked
	case res.Exactness.UsersAtLimit == 0:
		return "exactness was not exercised: no user was ever denied, so the limit was never put to the test (fewer users, a lower limit or more load would)"
	}
	return ""
}

// benchInstances builds the limiter's instances into cfg (configured to
// its limit, or to an --endpoint's policy) and returns the target's name,
// a func that releases what they hold (the --exec service, a Redis
// obtained here, each instance's own), and ExitConformant, or the exit
// code of why it could not, said on stderr.
func benchInstances(ctx context.Context, f *benchFlags, spec model.Variant, token string, cfg *bench.Config, stderr io.Writer) (string, func(), int) {
	closeAll := func() {}
	var target suite.Target
	// No clock of ours: a limiter stamped with the caller's clock sees
	// concurrent calls arrive out of order (its time steps back, and the
	// contract then lets it admit more); it decides on its own clock, or
	// the store's.
	env := suite.Env{KeyPrefix: "rlconform-bench:" + cfg.UserPrefix, MaxRequests: cfg.Limit, Window: cfg.Window}
	configure := true
	if f.command != "" {
		started, err := f.execFlags.start(ctx, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "rlconform: %v\n", err)
			return "", closeAll, cannotRun(ctx)
		}
		closeAll = func() { started.stop() }
		f.targets = started.urls()
	}
	switch {
	case f.blackBoxes() > 0:
		if f.maxRPS == 0 {
			f.maxRPS = -1 // the load sets the pace
		}
		t, policy, code := f.endpointFlags.target(f.timeout, nil, stderr)
		if t == nil {
			return "", closeAll, code
		}
		if err := preflight(ctx, *t, policy, f.identity, f.rlsSent(), stderr); err != nil {
			fmt.Fprintf(stderr, "rlconform: %v\n", err)
			return "", closeAll, cannotRun(ctx)
		}
		target, configure = *t, false
		cfg.Limit, cfg.Window = policy.Limit, policy.Window
		if t.SharedLimit {
			// Every request spends one limit: one user, for the check.
			cfg.Users = 1
		}
	case len(f.targets) > 0:
		probeCtx, cancel := context.WithTimeout(ctx, 3*f.timeout)
		t, err := targets.RemoteWith(probeCtx, f.targets, targets.RemoteOptions{Timeout: f.timeout, Token: token})
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "rlconform: %v\n", err)
			return "", closeAll, cannotRun(ctx)
		}
		target = t
		if t.Capabilities.Clock && cfg.SkipExactness == "" {
			cfg.SkipExactness = "the target takes \"now\" from each request's clock header, and concurrent requests reach it out of order: its time steps back, and the contract then lets it admit more than N in real time; serve it on its own clock (rlconform serve -clock=false, or your server's equivalent) to check it"
		}
	default:
		t, err := targets.ReferenceProfile(spec)
		if err != nil {
			fmt.Fprintf(stderr, "rlconform bench: %v\n", err)
			return "", closeAll, ExitCannotRun
		}
		target = t
	}
	if target.NeedsRedis {
		red, err := redisenv.Obtain(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "rlconform: %v\n", err)
			return "", closeAll, cannotRun(ctx)
		}
		prev := closeAll
		closeAll = func() { red.Close(); prev() }
		env.Redis, env.RedisURL = red.Client, red.URL
		fmt.Fprintf(stderr, "rlconform: Redis from %s at %s\n", red.Source, red.Addr)
	}
	n := max(1, len(target.Addresses))
	for i := 0; i < n; i++ {
		env.Instance = i
		lim, closeInstance, err := target.New(ctx, env)
		if err != nil {
			fmt.Fprintf(stderr, "rlconform: %s: %v\n", target.Name, err)
			return "", closeAll, cannotRun(ctx)
		}
		if closeInstance != nil {
			prev := closeAll
			closeAll = func() { closeInstance(); prev() }
		}
		if configure {
			cctx, cancel := context.WithTimeout(ctx, f.timeout)
			err := lim.Configure(cctx, cfg.Limit, cfg.Window)
			cancel()
			if err != nil {
				fmt.Fprintf(stderr, "rlconform: configuring %s to %d per %v: %v\n", target.Name, cfg.Limit, cfg.Window, err)
				return "", closeAll, cannotRun(ctx)
			}
		}
		cfg.Instances = append(cfg.Instances, lim)
	}
	return target.Name, closeAll, ExitConformant
}

// progressLine shows a live line on stderr while the bench runs (a bar of
// the duration, decisions/s, allowed and errors), when mode and the
// terminal allow; the returned func ends it on the run's result (nil: the
// run could not start), whether or not a progress snapshot came before.
func progressLine(mode string, d time.Duration, stderr io.Writer, cfg *bench.Config) func(*bench.Result) {
	file, isFile := underlying(stderr).(*os.File)
	terminal := false
	if isFile {
		if st, err := file.Stat(); err == nil {
			terminal = st.Mode()&os.ModeCharDevice != 0
		}
	}
	if mode == "never" || (mode == "auto" && !terminal) {
		return func(*bench.Result) {}
	}
	var line atomic.Value
	line.Store("starting")
	opts := []mpb.ContainerOption{mpb.WithOutput(stderr), mpb.WithWidth(30), mpb.WithRefreshRate(250 * time.Millisecond)}
	if !terminal {
		opts = append(opts, mpb.WithAutoRefresh()) // --progress always: draw it anyway
	}
	p := mpb.New(opts...)
	bar := p.New(d.Milliseconds(), mpb.BarStyle(),
		mpb.PrependDecorators(decor.Name("bench "), decor.Elapsed(decor.ET_STYLE_GO, decor.WCSyncSpace)),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return line.Load().(string) })))
	cfg.Progress = func(s bench.Progress) {
		line.Store(fmt.Sprintf("%8.0f decisions/s  %d decided, %d allowed, %d errors", s.Rate, s.Decisions, s.Allowed, s.Errors))
		bar.SetCurrent(min(d, s.Elapsed).Milliseconds())
	}
	return func(res *bench.Result) {
		if res != nil {
			errs := 0
			for _, n := range res.Errors {
				errs += n
			}
			line.Store(fmt.Sprintf("%8.0f decisions/s  %d decided, %d allowed, %d errors", res.Throughput, res.Decisions, res.Allowed, errs))
		}
		// A bar with a total completes when it reaches it (SetTotal(-1,
		// true) completes only bars made without one: Wait then hung).
		bar.SetCurrent(d.Milliseconds())
		// The table must never wait on the bar: give it a moment to draw
		// its last state.
		waited := make(chan struct{})
		go func() { p.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-time.After(2 * time.Second):
			bar.Abort(false)
		}
	}
}

// rateFlag is a rate per second: "20000" or "20000/s".
type rateFlag float64

func (r *rateFlag) String() string { return strconv.FormatFloat(float64(*r), 'f', -1, 64) }

// Set reads R or R/s.
func (r *rateFlag) Set(v string) error {
	x, err := strconv.ParseFloat(strings.TrimSuffix(v, "/s"), 64)
	if err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return fmt.Errorf("%q: want a number of requests per second, such as 20000 or 20000/s", v)
	}
	*r = rateFlag(x)
	return nil
}

func readBaseline(path string) (*bench.Result, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	r, err := bench.ReadJSON(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// benchFiles are the --json and --svg files, opened before the run.
type benchFiles struct {
	json, svg io.Writer
	html      io.Writer
	closers   []*os.File
	paths     map[io.Writer]string
	secrets   *redact.Secrets // never written
}

func openBenchFiles(f *benchFlags, stdout io.Writer, secrets *redact.Secrets) (*benchFiles, error) {
	files := &benchFiles{paths: map[io.Writer]string{}, secrets: secrets}
	open := func(flagName, path string) (io.Writer, error) {
		switch path {
		case "":
			return nil, nil
		case "-":
			return stdout, nil
		}
		file, err := os.Create(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flagName, err)
		}
		files.closers = append(files.closers, file)
		files.paths[file] = flagName + " " + path
		return file, nil
	}
	var err error
	if files.json, err = open("--json", f.json); err != nil {
		files.close()
		return nil, err
	}
	if files.svg, err = open("--svg", f.svg); err != nil {
		files.close()
		return nil, err
	}
	if files.html, err = open("--html", f.html); err != nil {
		files.close()
		return nil, err
	}
	return files, nil
}

// write writes the result to the files and closes them.
func (b *benchFiles) write(res *bench.Result) error {
	for _, w := range []struct {
		to    io.Writer
		write func(io.Writer) error
	}{{b.json, res.WriteJSON}, {b.svg, res.WriteSVG}, {b.html, benchHTML(res, b.secrets)}} {
		if w.to == nil {
			continue
		}
		if err := b.secrets.Render(w.to, w.write); err != nil {
			return fmt.Errorf("writing %s: %w", b.paths[w.to], err)
		}
	}
	for _, file := range b.closers {
		if err := file.Close(); err != nil {
			return fmt.Errorf("writing %s: %w", b.paths[file], err)
		}
	}
	b.closers = nil
	return nil
}

func (b *benchFiles) close() {
	for _, file := range b.closers {
		file.Close()
	}
}

// errorKinds says how many calls failed of each kind, in the kinds' order.
func errorKinds(r *bench.Result) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		out = append(out, fmt.Sprintf("%d %s", r.Errors[k], k))
	}
	return out
}
