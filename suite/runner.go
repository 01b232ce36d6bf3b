package suite

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	mrand "math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/redisenv"
)

// Config tunes a run. The zero value runs every spec with the defaults.
type Config struct {
	// Redis is the store given to targets that need one. When nil, the run
	// obtains one as redisenv.Obtain does, and closes it at the end.
	Redis *redisenv.Redis
	// Level is the highest level to run (default Robust: every spec).
	Level Level
	// IDs, when not empty, selects specs by id, or by a prefix ending in "/".
	IDs []string
	// Labels, when not empty, selects specs that carry any of these labels
	// (a level, or needs-<capability>).
	Labels []string
	// ExpectFail lists specs the target knowingly fails: their failures do
	// not fail the run, and their passing does (the list is out of date).
	ExpectFail []string
	// StorePrefix, when set, is the prefix under which a target writes in
	// Redis (a remote target's own); every spec inspects keys under it, and
	// the suite never writes or deletes there.
	StorePrefix string
	// Seed makes randomised specs reproducible; 0 picks one, shown in the report.
	Seed uint64
	// Limit and Window are the configuration specs start with (default 5
	// per minute). With a fake clock the window is long in real terms on
	// purpose: Redis TTLs run on real time and must not expire mid-spec.
	Limit  int
	Window time.Duration
	// RealTimeWindow is the window of the real-time specs, which grade
	// expiry on targets without clock control by waiting (default 1s).
	RealTimeWindow time.Duration
	// SpecTimeout bounds each spec (default 60s): a hanging target fails
	// the spec instead of hanging the run.
	SpecTimeout time.Duration
	// ReportDir receives artefacts of failures (linearizability
	// visualisations); default the system's temp directory.
	ReportDir string
	// Progress, when set, is called after each spec.
	Progress func(Result)
}

func (c Config) withDefaults() Config {
	if c.Level == "" {
		c.Level = Robust
	}
	if c.Seed == 0 {
		c.Seed = mrand.Uint64()
	}
	if c.Limit == 0 {
		c.Limit = 5
	}
	if c.Window == 0 {
		c.Window = time.Minute
	}
	if c.RealTimeWindow == 0 {
		c.RealTimeWindow = time.Second
	}
	if c.SpecTimeout == 0 {
		c.SpecTimeout = time.Minute
	}
	return c
}

// Status is the outcome of one spec.
type Status string

// The statuses. Only Passed counts as a pass.
const (
	Passed       Status = "pass"
	Failed       Status = "FAIL"
	Skipped      Status = "skip"
	Inconclusive Status = "inconclusive"
)

// Result is the outcome of one spec on one target.
type Result struct {
	ID       string
	Level    Level
	Rule     string
	Status   Status
	Message  string // why it failed or was skipped
	Duration time.Duration
	// ExpectedFailure: the spec is in Config.ExpectFail.
	ExpectedFailure bool
}

// start is the fake clock's reading when a spec starts: 2026-01-01T00:00Z,
// a multiple of every window a spec uses, so epoch-aligned windows are easy
// to reason about.
var start = time.UnixMilli(1_767_225_600_000)

// runner runs specs of one run; it owns the Redis it obtained.
type runner struct {
	cfg      Config
	redis    *redisenv.Redis
	ownRedis bool
	runID    string
	count    int
}

func newRunner(ctx context.Context, cfg Config, targets ...Target) (*runner, error) {
	cfg = cfg.withDefaults()
	id := make([]byte, 3)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("suite: run id: %w", err)
	}
	r := &runner{cfg: cfg, redis: cfg.Redis, runID: hex.EncodeToString(id)}
	needsRedis := false
	for _, t := range targets {
		needsRedis = needsRedis || t.NeedsRedis
	}
	if needsRedis && r.redis == nil {
		red, err := redisenv.Obtain(ctx)
		if err != nil {
			return nil, fmt.Errorf("suite: %w", err)
		}
		r.redis, r.ownRedis = red, true
	}
	return r, nil
}

func (r *runner) close() error {
	if r.ownRedis {
		return r.redis.Close()
	}
	return nil
}

// selected lists the specs of the run's level and ids.
func (r *runner) selected() []spec {
	var out []spec
	for _, s := range catalogue() {
		if r.cfg.Level.includes(s.level) && s.matches(r.cfg.IDs) && s.hasLabel(r.cfg.Labels) {
			out = append(out, s)
		}
	}
	return out
}

// missing says why target cannot run s, or "" when it can.
func (r *runner) missing(t Target, s *spec) string {
	c := t.Capabilities
	for _, n := range s.needs {
		var why string
		switch n {
		case needClock:
			if !c.Clock {
				why = "needs clock control, which the target does not declare (graded in real time)"
			}
		case needConfigure:
			if !c.Configure {
				why = "needs Configure, which the target does not declare"
			}
		case needRemaining:
			if !c.Remaining {
				why = "needs GetRemainingRequests, which the target does not declare"
			}
		case needReset:
			if !c.Reset {
				why = "needs Reset, which the target does not declare"
			}
		case needShared:
			if !c.SharedStore {
				why = "needs several instances on one store (give --target more than once, or declare SharedStore)"
			}
		case needInspect:
			if !c.StoreInspection || r.redis == nil {
				why = "needs to read the target's keys (give --store-url and --store-prefix, or declare StoreInspection)"
			}
		case needRealTime:
			if c.Clock {
				why = "the target has clock control: the fake-clock specs grade this exactly, without waiting"
			}
		case needOwnRedis:
			if !t.NeedsRedis || r.redis == nil || r.redis.Server == nil {
				why = "needs a Redis this run started, to stop it (not with REDIS_URL, nor for a remote target)"
			}
		}
		if why != "" {
			return why
		}
	}
	return ""
}

// stillAlive asks a target whose spec just failed whether it still answers,
// within 10s; an error means the run cannot go on.
func (r *runner) stillAlive(ctx context.Context, t Target, res Result) error {
	if t.Alive == nil || res.Status != Failed {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := t.Alive(ctx); err != nil {
		return fmt.Errorf("suite: %s stopped answering during %s, the run cannot go on: %w", t.Name, res.ID, err)
	}
	return nil
}

// runSpec runs one spec on a fresh instance of target and never panics.
func (r *runner) runSpec(ctx context.Context, t Target, s *spec) (res Result) {
	r.count++
	began := time.Now()
	res = Result{ID: s.id, Level: s.level, Rule: s.rule, ExpectedFailure: slices.Contains(r.cfg.ExpectFail, s.id)}
	defer func() {
		res.Duration = time.Since(began)
		if r.cfg.Progress != nil {
			r.cfg.Progress(res)
		}
	}()
	if why := r.missing(t, s); why != "" {
		res.Status, res.Message = Skipped, why
		return res
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.SpecTimeout)
	defer cancel()

	h := r.newH(ctx, t, s)
	done := make(chan Result, 1)
	go func() { done <- h.execute() }()
	select {
	case out := <-done:
		res.Status, res.Message = out.Status, out.Message
	case <-ctx.Done():
		res.Status = Failed
		res.Message = h.report(fmt.Sprintf("%s: did not finish within %v: an operation hung (every call must honour its context)", s.title(), r.cfg.SpecTimeout))
	}
	if err := h.close(); err != nil && res.Status == Passed {
		res.Status, res.Message = Failed, fmt.Sprintf("closing the instances: %v", err)
	}
	if r.cfg.StorePrefix == "" {
		r.cleanKeys(h.env.KeyPrefix)
	}
	return res
}

func (r *runner) newH(ctx context.Context, t Target, s *spec) *H {
	tag := fmt.Sprintf("%s-%02d:", r.runID, r.count)
	env := Env{
		Clock:       fakeclock.Real{},
		KeyPrefix:   "rlc:" + tag,
		MaxRequests: r.cfg.Limit,
		Window:      r.cfg.Window,
	}
	h := &H{ctx: ctx, spec: s, target: t, run: r, tag: tag, start: time.Now()}
	if t.Capabilities.Clock {
		h.fake = fakeclock.New(start)
		env.Clock, h.start = h.fake, start
	}
	if (t.NeedsRedis || t.Capabilities.StoreInspection) && r.redis != nil {
		env.Redis = r.redis.Client
	}
	if r.cfg.StorePrefix != "" {
		env.KeyPrefix = r.cfg.StorePrefix
	}
	h.env = env
	h.model, _ = model.New(env.MaxRequests, env.Window)
	sum := fnv.New64a()
	sum.Write([]byte(s.id))
	h.seed = r.cfg.Seed
	h.rng = mrand.New(mrand.NewPCG(r.cfg.Seed, sum.Sum64()))
	h.g = gomega.NewGomega(func(message string, _ ...int) {
		panic(failure{h.report(message)})
	})
	return h
}

// execute runs the body, turning the panics of Failf, Skipf, and of the
// target itself, into a result.
func (h *H) execute() (res Result) {
	defer func() {
		switch v := recover().(type) {
		case nil:
			res.Status = Passed
		case failure:
			res.Status, res.Message = Failed, h.spec.title()+"\n  "+v.msg
			if h.spec.hint != "" {
				res.Message += "  hint: " + h.spec.hint + "\n"
			}
		case skipped:
			res.Status, res.Message = Skipped, v.reason
		case inconclusive:
			res.Status, res.Message = Inconclusive, h.spec.title()+"\n  "+v.msg
		default:
			res.Status = Failed
			res.Message = h.report(fmt.Sprintf("%s\n  panic: %v\n%s", h.spec.title(), v, debug.Stack()))
		}
	}()
	if _, err := h.instance(0); err != nil {
		h.Failf("%v", err)
	}
	h.spec.run(h)
	return res
}

// inconclusive ends a spec that could not decide (a check that timed out).
type inconclusive struct{ msg string }

// cleanKeys deletes the spec's keys: only under its own prefix, never a
// FLUSHDB, so a shared Redis is left as found.
func (r *runner) cleanKeys(prefix string) {
	if r.redis == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	keys, _ := scanKeys(ctx, r.redis.Client, globEscape(prefix)+"*")
	for _, k := range keys {
		r.redis.Client.Del(ctx, k) // one by one: keys may live in different cluster slots
	}
}

// Report is the outcome of a run on one target.
type Report struct {
	Target  string
	Seed    uint64
	Level   Level
	Results []Result
}

// Count returns how many results have status st.
func (rep *Report) Count(st Status) int {
	n := 0
	for _, r := range rep.Results {
		if r.Status == st {
			n++
		}
	}
	return n
}

// Err is nil when the target is conformant at the report's level: no spec
// failed or was inconclusive, and at least one passed. Otherwise it says why.
func (rep *Report) Err() error {
	var errs []error
	for _, r := range rep.Results {
		switch {
		case r.ExpectedFailure && r.Status == Passed:
			errs = append(errs, fmt.Errorf("%s: passed, but is listed as an expected failure", r.ID))
		case r.ExpectedFailure && r.Status == Failed:
		case r.Status == Failed || r.Status == Inconclusive:
			errs = append(errs, fmt.Errorf("%s: %s", r.ID, r.Status))
		}
	}
	if len(rep.Results) > 0 && rep.Count(Skipped) == len(rep.Results) {
		errs = append(errs, errors.New("every spec was skipped: nothing was graded"))
	}
	if len(rep.Results) == 0 {
		errs = append(errs, errors.New("no spec selected: nothing was graded"))
	}
	return errors.Join(errs...)
}

// Table renders the results as a plain-text table of spec ids.
func (rep *Report) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (level %s, seed %d)\n", rep.Target, rep.Level, rep.Seed)
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "  %-13s %-34s %6dms", r.Status, r.ID, r.Duration.Milliseconds())
		switch {
		case r.ExpectedFailure && r.Status == Failed:
			b.WriteString("  (expected failure)")
		case r.ExpectedFailure && r.Status == Passed:
			b.WriteString("  (listed as an expected failure: remove it from the list)")
		case r.Status == Skipped:
			fmt.Fprintf(&b, "  %s", r.Message)
		}
		b.WriteByte('\n')
	}
	for _, l := range levels {
		if !rep.Level.includes(l) {
			continue
		}
		fmt.Fprintf(&b, "  %s: %s\n", l, rep.levelVerdict(l))
	}
	return b.String()
}

func (rep *Report) levelVerdict(l Level) string {
	var pass, fail, skip int
	for _, r := range rep.Results {
		if r.Level != l {
			continue
		}
		switch {
		case r.Status == Skipped:
			skip++
		case r.Status == Passed && !r.ExpectedFailure, r.Status == Failed && r.ExpectedFailure:
			pass++ // as expected
		default:
			fail++
		}
	}
	verdict := "conformant"
	if fail > 0 {
		verdict = "NOT conformant"
	} else if pass == 0 {
		verdict = "not graded"
	}
	return fmt.Sprintf("%s (%d passed, %d failed, %d skipped)", verdict, pass, fail, skip)
}
