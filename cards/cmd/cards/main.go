// Command cards grades every report card (cards.go) with rlconform's own
// command line, as a user would, several cards at once, writes docs/cards.md
// (one table and a section per card: the notes in cards/notes and what the
// runs said), and compares the verdicts with cards/expected.txt: a verdict
// that changed fails with the difference, until the card is updated on
// purpose (-update). A card that differs is graded once more at once, in
// its lane beside the cards still being graded: a difference the second
// grading does not repeat is printed as flaky, not failed (secondChance).
//
//	go run ./cmd/cards                      # from cards/: all, compare, write docs/cards.md
//	go run ./cmd/cards -only redis_rate,x-time-rate -write=false
//	go run ./cmd/cards -update              # take the verdicts of this run as expected
//	go run ./cmd/cards -parallel 1          # one card at a time
//
// Most cards are graded in real time (the libraries read their own
// clock), so a grading mostly waits out windows: -parallel cards (default
// 4) are graded at once, each on its own Redis, ports and directory. A
// real-time grading judges every answer by when it was sent and received,
// so a busy machine can only leave answers undecided, never fail one.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rlconform/rlconform/cli"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/result"
)

func main() {
	only := flag.String("only", "", "grade only these cards (comma-separated names)")
	update := flag.Bool("update", false, "write this run's verdicts to the expected file instead of comparing")
	write := flag.Bool("write", true, "write the report (docs/cards.md)")
	root := flag.String("cards", ".", "the cards/ directory")
	out := flag.String("out", "", "the report to write (default: docs/cards.md beside the cards/ directory)")
	expected := flag.String("expected", "", "the expected verdicts (default: expected.txt in the cards/ directory)")
	keep := flag.String("keep", "", "keep each grading's output and JSON report in this directory")
	from := flag.String("from", "", "grade nothing: read the gradings a run kept (-keep) in this directory, and write and compare as if they had just run")
	parallel := flag.Int("parallel", 4, "how many cards are graded at once")
	realtimeIdentify := flag.String("realtime-identify", "compare", "what is done with a name identify gives in real time: compare it with expected.txt, or print it where it differs, not failing the run (CI's check: on a loaded machine fewer answers are decided in real time, and the name varies with the load)")
	failFast := flag.Bool("fail-fast", false, "stop each card's run against the sliding log, when the card's own profile is another, at its first failure (rlconform run --fail-fast): expected.txt holds only that run's outcome, so the check is whole, but the failures are not all counted, so docs/cards.md is not written (CI's check)")
	flag.Parse()
	if *realtimeIdentify != "compare" && *realtimeIdentify != "print" {
		fmt.Fprintf(os.Stderr, "cards: -realtime-identify %q: want compare or print\n", *realtimeIdentify)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, options{root: *root, only: *only, update: *update, write: *write, out: *out, expected: *expected, keep: *keep, from: *from, parallel: *parallel, failFast: *failFast,
		printRealtimeIdentify: *realtimeIdentify == "print"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "cards:", err)
	}
	os.Exit(code)
}

type options struct {
	root, only, out, expected, keep, from string
	update, write                         bool
	parallel                              int // cards graded at once
	// failFast stops the runs against the sliding log of cards graded
	// against another profile at their first failure (grader.failFast).
	failFast bool
	// printRealtimeIdentify prints what identify names in real time where
	// it differs from expected.txt, and does not compare it
	// (identifyReport.uncompared).
	printRealtimeIdentify bool
}

func run(ctx context.Context, o options) (int, error) {
	dir, err := filepath.Abs(o.root)
	if err != nil {
		return 2, err
	}
	if o.out == "" {
		o.out = filepath.Join(dir, "..", "docs", "cards.md")
	}
	if o.expected == "" {
		o.expected = filepath.Join(dir, "expected.txt")
	}
	selected := cards
	if o.only != "" {
		selected = nil
		for _, n := range strings.Split(o.only, ",") {
			c, ok := byName(n)
			if !ok {
				return 2, fmt.Errorf("no card %q", n)
			}
			selected = append(selected, c)
		}
	}
	tmp, err := os.MkdirTemp("", "rlconform-cards-")
	if err != nil {
		return 2, err
	}
	defer os.RemoveAll(tmp)
	shim := filepath.Join(tmp, "card")
	build := exec.CommandContext(ctx, "go", "build", "-o", shim, "./cmd/card")
	build.Dir, build.Stdout, build.Stderr = dir, os.Stderr, os.Stderr
	if err := build.Run(); o.from == "" && err != nil {
		return 2, fmt.Errorf("building the Go cards: %w", err)
	}
	g := &grader{ctx: ctx, shim: shim, dir: dir, tmp: tmp, keep: o.keep, from: o.from, failFast: o.failFast, printRealtimeIdentify: o.printRealtimeIdentify}
	if o.printRealtimeIdentify && o.update {
		return 2, fmt.Errorf("-realtime-identify print: -update would keep names it did not compare")
	}
	if o.failFast && o.write {
		// Its runs against the sliding log count a failure or two, where
		// the page counts them all.
		fmt.Fprintln(os.Stderr, "cards: -fail-fast: docs/cards.md is not written")
		o.write = false
	}
	if o.keep != "" {
		if err := os.MkdirAll(o.keep, 0o755); err != nil {
			return 2, err
		}
	}
	// A card that differs from what is expected is graded once more at
	// once, beside the others (secondChance then reads both gradings).
	var again func(*graded) bool
	if !o.update && o.from == "" {
		want, err := readExpected(o.expected)
		if err != nil {
			return 2, err
		}
		again = func(r *graded) bool { return len(compare(want, []*graded{r})) > 0 }
	}
	began := time.Now()
	graded, seconds, err := gradeAll(g, selected, o.parallel, again)
	if err != nil {
		return 2, err
	}
	wall, parallel := runTime(o, time.Since(began), max(1, min(o.parallel, len(graded))))
	if o.from == "" {
		fmt.Fprintf(os.Stderr, "cards: %d card(s) graded in %v, %d at a time\n", len(graded), wall.Round(time.Second), parallel)
	}
	lines := verdictLines(graded)
	code := 0
	if o.update {
		if err := updateExpected(o.expected, lines, graded); err != nil {
			return 2, err
		}
	} else if code, err = check(o, graded, g.regrader(graded, seconds, o.parallel)); err != nil {
		return 2, err
	}
	if o.write && o.only == "" {
		want, err := readExpected(o.expected) // after -update: the list as written
		if err != nil {
			return 2, err
		}
		if err := writeReport(dir, o.out, graded, wall, parallel, want); err != nil {
			return 2, err
		}
		fmt.Fprintf(os.Stderr, "cards: wrote %s\n", o.out)
	}
	return code, nil
}

// check compares the verdicts of graded with o.expected, grades a card
// that differs once more (regrade), and prints the differences that hold
// (exit 1) and what identify named in real time where it was not
// compared and differs.
func check(o options, graded []*graded, regrade func([]card) ([]*graded, error)) (int, error) {
	want, err := readExpected(o.expected)
	if err != nil {
		return 2, err
	}
	diff := compare(want, graded)
	if len(diff) > 0 && o.from == "" {
		if diff, err = secondChance(want, graded, regrade, os.Stderr); err != nil {
			return 2, err
		}
	}
	if shown := uncompared(want, graded); len(shown) > 0 {
		fmt.Fprintf(os.Stderr, "cards: -realtime-identify print: what identify named in real time differs from %s, not compared (on a loaded machine fewer answers are decided; make cards compares it):\n", o.expected)
		for _, d := range shown {
			fmt.Fprintln(os.Stderr, "  "+d)
		}
	}
	if len(diff) > 0 {
		fmt.Fprintf(os.Stderr, "cards: verdicts differ from %s (update the card's notes and run with -update if the change is meant):\n", o.expected)
		for _, d := range diff {
			fmt.Fprintln(os.Stderr, "  "+d)
		}
		return 1, nil
	}
	fmt.Fprintf(os.Stderr, "cards: %d card(s) graded, every verdict as in %s\n", len(graded), o.expected)
	return 0, nil
}

// runTime is how long the run took and how many cards it graded at once:
// took and parallel for a run that graded, kept (-keep) in run.txt; for
// a run read back (-from), what that file says (zero when it is absent).
func runTime(o options, took time.Duration, parallel int) (time.Duration, int) {
	if o.from != "" {
		var ms int64
		if b, err := os.ReadFile(filepath.Join(o.from, "run.txt")); err == nil {
			fmt.Sscanf(string(b), "%d %d", &ms, &parallel)
		}
		return time.Duration(ms) * time.Millisecond, parallel
	}
	if o.keep != "" {
		os.WriteFile(filepath.Join(o.keep, "run.txt"), []byte(fmt.Sprintf("%d %d\n", took.Milliseconds(), parallel)), 0o644)
	}
	return took, parallel
}

// grader runs rlconform on one card; gradeAll gives each card graded at
// once a copy of its own.
type grader struct {
	ctx                  context.Context
	shim, dir, tmp, keep string
	from                 string // read kept gradings instead
	// failFast runs the sliding log of a card graded against another
	// profile with --fail-fast: only its outcome is compared.
	failFast bool
	// printRealtimeIdentify: what identify names in real time is not
	// compared, and printed where it differs (options).
	printRealtimeIdentify bool
	card                  string        // the card being graded
	again                 string        // "-again" in a second grading's kept names, so that the first's stay
	n                     int           // its gradings so far
	took, total           time.Duration // the last grading's time, the card's
}

// graded is what the runs of one card said.
type graded struct {
	card     card
	version  string
	identify identifyReport
	runs     []runReport // the card's own profile, then the sliding log
	scaled   []scaledGrading
	took     time.Duration
}

// scaledGrading is a card graded at one of its further scales
// (card.Scales): identify, and a run of its own profile.
type scaledGrading struct {
	scale    string // N/W
	identify identifyReport
	run      runReport
}

// at is how an expected.txt line and the page name a grading at scale.
func at(what, scale string) string { return what + " at " + scale }

// identifyReport is as much of identify's JSON as the cards read.
type identifyReport struct {
	Outcome string          `json:"outcome"`
	Mode    string          `json:"mode"` // "real-time", or "fake-clock"
	Fits    []identifiedFit `json:"fits"`
	Burst   int             `json:"burst"`
	// Configure is what identify found the limiter's Configure does,
	// apart from its algorithm (nil when it found nothing to say).
	Configure *struct {
		Does string `json:"does"`
	} `json:"configure"`
	exit int
	text string
	// uncompared: a name given in real time, printed where it differs
	// from what is expected, never a difference (-realtime-identify print).
	uncompared bool
}

// identifiedFit is one profile identify found, as the cards read it.
type identifiedFit struct {
	Profile string `json:"profile"`
	// Name is the profile with the parameters no probe decided as "?"
	// (count-denied=?): what identify found, no more (empty in the
	// reports of versions before it).
	Name          string   `json:"name"`
	Description   string   `json:"description"`
	SameDecisions []string `json:"same_decisions"`
	// The qualifiers of the fit: how GetRemainingRequests answered
	// otherwise, and that the answers after a change of configuration
	// were not judged (no reading of the profile gives them).
	RemainingDiffers string `json:"remaining_differs"`
	ChangeUnjudged   bool   `json:"change_unjudged"`
}

// shown is the fit as a verdict names it: its Name, else its Profile.
func (f identifiedFit) shown() string {
	if f.Name != "" {
		return f.Name
	}
	return f.Profile
}

// name is the identification in a line.
func (r identifyReport) name() string {
	var fits []string
	for _, f := range r.Fits {
		fits = append(fits, f.shown())
	}
	if len(fits) == 0 {
		return r.Outcome
	}
	return r.Outcome + " " + strings.Join(fits, " | ")
}

// runResult is as much of a spec's result as the cards read.
type runResult struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Failure *struct {
		ExplainedBy []string `json:"explained_by"`
	} `json:"failure"`
}

// runReport is as much of run's JSON as the cards read.
type runReport struct {
	// Version is the rlconform that graded (its report's).
	Version string      `json:"version"`
	Profile string      `json:"profile"`
	Outcome string      `json:"outcome"`
	Verdict string      `json:"verdict"`
	Results []runResult `json:"results"`
	// Limit and WindowMs are the scale it graded at (0 in the reports of
	// versions before rlconform said it).
	Limit    int     `json:"limit"`
	WindowMs float64 `json:"window_ms"`
	exit     int
	text     string
	took     time.Duration
}

// window is the window the run graded at.
func (r runReport) window() time.Duration {
	return time.Duration(r.WindowMs * float64(time.Millisecond))
}

// with is the ids of the results of status s.
func (r runReport) with(s string) []string {
	var ids []string
	for _, res := range r.Results {
		if res.Status == s {
			ids = append(ids, res.ID)
		}
	}
	return ids
}

// message is what went wrong in a result: the line after its rule's.
func (r runReport) message(id string) string {
	for _, res := range r.Results {
		if res.ID == id {
			lines := strings.Split(res.Message, "\n")
			if len(lines) > 1 && strings.HasPrefix(lines[0], id+":") {
				return strings.TrimSpace(lines[1])
			}
			return strings.TrimSpace(lines[0])
		}
	}
	return ""
}

func (g *grader) grade(c card) (*graded, error) {
	began := time.Now()
	g.card, g.n, g.total = c.Name, 0, 0
	r := &graded{card: c, version: c.version(g.dir)}
	target, inspect, stop := []string{"--from"}, []string(nil), func() {}
	if g.from == "" {
		var err error
		if target, inspect, stop, err = g.target(c); err != nil {
			return nil, err
		}
	}
	defer stop()
	// The runs take what identify's probes passed as they would grade it
	// (the sliding log's run: the probes are graded under it).
	var prior []string
	r.identify.Outcome = "not run"
	if !c.NoIdentify {
		var err error
		if prior, err = g.identifyCard(c, target, nil, &r.identify); err != nil {
			return nil, err
		}
	}
	for _, profile := range []string{c.Profile, "sliding-log"} {
		var rep runReport
		args := append([]string{"run", "--level", "all", "--profile", profile, "--report-dir", g.tmp}, target...)
		args = append(args, prior...)
		if c.Exec != "" {
			// The cards are graded several at once: lanes of processes
			// within each would share the same cores, and were measured
			// to miss catches so (four --exec cards at once, four lanes
			// each: symfony's boundary-burst-epoch and same-millisecond
			// burst), for no time saved (14 such cards in 6m35s).
			args = append(args, "--parallel", "1")
		}
		args = append(append(args, inspect...), c.RunFlags...)
		if g.failFast && profile != c.Profile {
			args = append(args, "--fail-fast")
		}
		if c.IDs != "" {
			args = append(args, "--id", c.IDs)
		}
		if err := g.cli(args, &rep, &rep.exit, &rep.text); err != nil {
			return nil, err
		}
		rep.took = g.took
		r.runs = append(r.runs, rep)
		if profile == c.Profile && profile == "sliding-log" {
			break
		}
	}
	for _, scale := range c.Scales {
		sg, err := g.gradeScale(c, scale, target, inspect)
		if err != nil {
			return nil, err
		}
		r.scaled = append(r.scaled, sg)
	}
	r.took = time.Since(began)
	if g.from != "" {
		r.took = g.total
	}
	return r, nil
}

// identifyCard runs identify on card c, named to rlconform by target,
// with extra flags, into r, and returns the flags that give a run what
// its probes passed (none when reading kept gradings).
func (g *grader) identifyCard(c card, target, extra []string, r *identifyReport) ([]string, error) {
	args := append(append(append([]string{"identify"}, target...), c.RunFlags...), extra...)
	if err := g.cli(args, r, &r.exit, &r.text); err != nil {
		return nil, err
	}
	r.uncompared = g.printRealtimeIdentify && r.Mode == string(result.RealTime)
	if g.from != "" {
		return nil, nil
	}
	path := filepath.Join(g.tmp, "identify.json")
	if err := os.Rename(filepath.Join(g.tmp, "report.json"), path); err != nil {
		return nil, fmt.Errorf("identify's report: %w", err)
	}
	return []string{"--from-identify", path}, nil
}

// gradeScale grades card c, named to rlconform by target, at scale
// (N/W): identify, then a run of its own profile given what identify's
// probes passed.
func (g *grader) gradeScale(c card, scale string, target, inspect []string) (scaledGrading, error) {
	sg := scaledGrading{scale: scale}
	n, w, ok := strings.Cut(scale, "/")
	if !ok {
		return sg, fmt.Errorf("card %s: scale %q: want N/W", c.Name, scale)
	}
	flags := []string{"--limit", n, "--window", w}
	prior, err := g.identifyCard(c, target, flags, &sg.identify)
	if err != nil {
		return sg, err
	}
	args := append(append([]string{"run", "--level", "all", "--profile", c.Profile, "--report-dir", g.tmp}, target...), prior...)
	if c.Exec != "" {
		args = append(args, "--parallel", "1")
	}
	args = append(append(append(args, inspect...), c.RunFlags...), flags...)
	if err := g.cli(args, &sg.run, &sg.run.exit, &sg.run.text); err != nil {
		return sg, err
	}
	sg.run.took = g.took
	return sg, nil
}

// fileExists reports whether path names a file.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// cli runs rlconform's entry point with args and --json, and decodes the
// report into v.
func (g *grader) cli(args []string, v any, exit *int, text *string) error {
	g.n++
	name := fmt.Sprintf("%s%s-%d-%s", g.card, g.again, g.n, args[0])
	if g.from != "" {
		// A card graded twice kept both: the second is what the run took.
		if again := fmt.Sprintf("%s-again-%d-%s", g.card, g.n, args[0]); fileExists(filepath.Join(g.from, again+".json")) {
			name = again
		}
		b, err := os.ReadFile(filepath.Join(g.from, name+".json"))
		if err != nil {
			return fmt.Errorf("a kept grading: %w", err)
		}
		ms, _ := os.ReadFile(filepath.Join(g.from, name+".ms"))
		n, _ := strconv.Atoi(strings.TrimSpace(string(ms)))
		g.took = time.Duration(n) * time.Millisecond
		g.total += g.took
		return json.Unmarshal(b, v)
	}
	path := filepath.Join(g.tmp, "report.json")
	os.Remove(path)
	args = append(args, "--json", path)
	var out, errOut bytes.Buffer
	began := time.Now()
	*exit = cli.Main(args, &out, &errOut)
	g.took = time.Since(began)
	*text = out.String()
	b, err := os.ReadFile(path)
	if g.keep != "" {
		base := filepath.Join(g.keep, name)
		os.WriteFile(base+".txt", []byte("rlconform "+strings.Join(args, " ")+"\n"+out.String()+errOut.String()), 0o644)
		os.WriteFile(base+".json", b, 0o644)
		os.WriteFile(base+".ms", []byte(strconv.FormatInt(g.took.Milliseconds(), 10)), 0o644)
	}
	if err != nil || len(b) == 0 {
		return fmt.Errorf("rlconform %s: exit %d, no report: %s", strings.Join(args, " "), *exit, errOut.String())
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("rlconform %s: the report: %w", strings.Join(args, " "), err)
	}
	return nil
}

// target starts what the card needs and returns the flags that name it
// to rlconform, those that let a run read its keys (an endpoint card that
// inspects its store), and how to stop it.
func (g *grader) target(c card) (flags, inspect []string, stop func(), err error) {
	switch {
	case c.Exec != "":
		cmd := strings.NewReplacer("{card}", g.shim, "{dir}", g.dir).Replace(c.Exec)
		args := []string{"--exec", cmd}
		if c.Instances > 1 {
			args = append(args, "--instances", strconv.Itoa(c.Instances))
		}
		return args, nil, func() {}, nil
	case c.Memory != "" || c.Serve != "":
		port, err := freePort()
		if err != nil {
			return nil, nil, nil, err
		}
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		argv := []string{g.shim, c.Memory}
		if c.Serve != "" {
			argv = []string{"sh", "-c", strings.ReplaceAll(c.Serve, "{dir}", g.dir)}
		}
		stop, err := g.process(argv, []string{fmt.Sprintf("PORT=%d", port)}, base+"/rlc/v1/capabilities")
		if err != nil {
			return nil, nil, nil, err
		}
		return []string{"--target", base}, nil, stop, nil
	case c.Endpoint != nil:
		return g.endpoint(c)
	}
	return nil, nil, func() {}, nil // the built-in reference
}

// endpoint starts an endpoint card on a Redis of its own.
func (g *grader) endpoint(c card) (flags, inspect []string, stop func(), err error) {
	red, err := redisenv.Start(g.ctx)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("a Redis for the endpoint: %w", err)
	}
	window := c.Window
	if window == 0 {
		window = time.Second
	}
	const prefix = "rlc-card:"
	url, stopService, err := c.Endpoint(g, red.URL, prefix, window)
	if err != nil {
		red.Close()
		return nil, nil, nil, err
	}
	identity := []string{"--identity", "header:X-User"}
	if c.Identity != nil {
		identity = c.Identity
	}
	limit := c.Limit
	if limit == 0 {
		limit = 5
	}
	flags = []string{"--endpoint", url, "--policy", fmt.Sprintf("%d/%v", limit, window)}
	if c.RLS {
		flags[0] = "--rls"
	}
	for _, f := range identity {
		flags = append(flags, strings.ReplaceAll(f, "{dir}", g.dir))
	}
	if c.InspectStore {
		inspect = []string{"--store-url", red.URL, "--store-prefix", prefix}
	}
	return flags, inspect, func() {
		stopService()
		red.Close()
	}, nil
}

// process starts argv with env added, waits until url answers, and
// returns how to stop it (its whole process group).
func (g *grader) process(argv []string, env []string, url string) (func(), error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", strings.Join(argv, " "), err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	stop := func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	if err := waitReady(url, exited, 30*time.Second); err != nil {
		stop()
		return nil, fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, out.String())
	}
	return stop, nil
}

// waitReady polls url until it answers 200 (tcp://HOST:PORT: until it
// takes a connection, for a gRPC server with no HTTP), the process exits,
// or the bound passes.
func waitReady(url string, exited <-chan struct{}, bound time.Duration) error {
	ready := answers200(url)
	if addr, ok := strings.CutPrefix(url, "tcp://"); ok {
		ready = listening(addr)
	}
	deadline := time.After(bound)
	last := errors.New("no answer yet")
	for {
		select {
		case <-exited:
			return errors.New("it exited")
		case <-deadline:
			return fmt.Errorf("%s not ready within %v: %v", url, bound, last)
		case <-time.After(20 * time.Millisecond):
		}
		if last = ready(); last == nil {
			return nil
		}
	}
}

// answers200 is a check that url answers a GET with 200.
func answers200(url string) func() error {
	client := &http.Client{Timeout: time.Second}
	return func() error {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		// The middlewares refuse a request that names no client.
		req.Header.Set("X-User", "rlconform-cards-ready")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
}

// listening is a check that addr takes a TCP connection.
func listening(addr string) func() error {
	return func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// debVersion is the installed version of a Debian package.
func debVersion(pkg string) string {
	out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", pkg).Output()
	if err != nil {
		return "not installed"
	}
	return strings.TrimSpace(string(out))
}

// binaryVersion is the first line a command prints about its version.
func binaryVersion(argv ...string) string {
	out, _ := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

// sorted returns s sorted, for stable output.
func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
