// Package bench drives load at a rate limiter and measures its cost and its
// exactness at once: throughput, latency percentiles from an HDR
// histogram, errors by kind, and every decision judged against the
// algorithm it claims as the run goes, in memory flat in its length
// ([Judge]; the sliding-window log by default, [Check]). It judges load
// that another tool drove and recorded the same way ([Replay]), and calls
// read from a log as they come, in bounded memory ([Stream]: rlconform
// audit). The rlconform bench command is built on it.
package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/model"
)

// Limiter is what the bench calls: one decision for userID.
type Limiter interface {
	AllowRequest(ctx context.Context, userID string) (bool, error)
}

// SentTimer is a Limiter that says when its request really left (after a
// pacing wait of its own, say): the bench times the call from then.
type SentTimer interface {
	AllowRequestSent(ctx context.Context, userID string) (bool, time.Time, error)
}

// Config says what load to drive.
type Config struct {
	// Instances are the limiter's instances sharing one store; caller k
	// calls instance k mod len(Instances).
	Instances []Limiter
	// Concurrency is the number of callers. In a closed loop each sends
	// its next request when the last one is answered; in an open loop
	// (Rate > 0) it bounds the requests in flight.
	Concurrency int
	// Rate, when positive, is an open loop: requests are due at a constant
	// Rate per second whatever the answers, and each one's latency counts
	// from when it was due, so a target that falls behind is not
	// flattered by sending less (coordinated omission).
	Rate float64
	// Duration is how long requests are sent.
	Duration time.Duration
	// Users is how many users the requests are spread over; Zipf, when
	// above 1, skews them: user k is drawn with a probability proportional
	// to (1+k)^-Zipf, so user 0 is a hot key. 0 is uniform.
	Users int
	Zipf  float64
	// Limit and Window are the limit the target enforces (N per W), what
	// the exactness check judges against.
	Limit  int
	Window time.Duration
	// Profile is the algorithm the target claims, whose rules the check
	// holds its decisions to ([Judge]); the zero Spec is the sliding log.
	Profile model.Variant
	// UserPrefix starts every user id (a fresh one per run keeps runs on a
	// shared store apart).
	UserPrefix string
	// SkipExactness, when not empty, says why the decisions are not judged
	// (a target stamped with the grader's clock, say).
	SkipExactness string
	// Seed seeds the users' draw.
	Seed uint64
	// Grace bounds how long calls still in flight at the end of Duration
	// may take; past it they are counted as timeouts. Zero: 5s.
	Grace time.Duration
	// Progress, when not nil, is called about every 250ms while the load
	// runs, from a goroutine of its own.
	Progress func(Progress)
	// Failover, when not nil, is called FailoverAt into the run (once,
	// from a goroutine of its own, on a context that ends with the run):
	// it fails the limiter's store over (redisenv.Failover) and returns
	// once the new primary is in place. The result then says what the
	// failover did to the limit ([FailoverFigure]).
	Failover   func(ctx context.Context) error
	FailoverAt time.Duration
}

// MaxRate bounds an open loop's rate: ten million requests a second is
// far past what one process can send.
const MaxRate = 10_000_000

// maxDuration bounds Duration and Grace: a week of load is far past any
// bench, and their sum never wraps.
const maxDuration = 7 * 24 * time.Hour

// Progress is a snapshot of a running bench.
type Progress struct {
	Elapsed   time.Duration
	Decisions int64
	Allowed   int64
	Errors    int64
	// Rate is decisions per second over the last snapshot's interval.
	Rate float64
}

// Validate reports a configuration that cannot run.
func (c Config) Validate() error {
	if len(c.Instances) == 0 {
		return errors.New("no limiter instance to call")
	}
	return c.ValidateLoad()
}

// ValidateLoad is Validate without the instances: it checks the load
// before the limiter is built.
func (c Config) ValidateLoad() error {
	switch {
	case c.Concurrency < 1 || c.Concurrency > 100_000:
		return fmt.Errorf("concurrency %d: want 1 to 100000", c.Concurrency)
	case c.Rate < 0 || c.Rate > MaxRate:
		return fmt.Errorf("rate %v: want 0 (closed loop) to %d per second", c.Rate, MaxRate)
	case c.Duration <= 0 || c.Duration > maxDuration:
		return fmt.Errorf("duration %v: want more than 0, at most %v", c.Duration, maxDuration)
	case c.Grace < 0 || c.Grace > maxDuration:
		return fmt.Errorf("grace %v: want 0 (5s) to %v", c.Grace, maxDuration)
	case c.Users < 1 || c.Users > 10_000_000:
		return fmt.Errorf("users %d: want 1 to 10000000", c.Users)
	case c.Zipf != 0 && c.Zipf <= 1:
		return fmt.Errorf("zipf %v: want 0 (uniform) or more than 1", c.Zipf)
	case c.Limit < 1 || c.Window < time.Millisecond:
		return fmt.Errorf("limit %d per %v: want at least 1 per 1ms", c.Limit, c.Window)
	case c.Failover != nil && (c.FailoverAt <= 0 || c.FailoverAt >= c.Duration):
		return fmt.Errorf("failover at %v: want it within the run's duration %v", c.FailoverAt, c.Duration)
	}
	if err := contract.ValidateConfig(c.Limit, c.Window); err != nil {
		return fmt.Errorf("limit %d per %v: %w", c.Limit, c.Window, err)
	}
	if _, err := (Judge{Profile: c.Profile, Limit: c.Limit, Window: c.Window}).Rules(); err != nil {
		return err
	}
	return nil
}

// Mode is "closed-loop" or "open-loop".
func (c Config) Mode() string {
	if c.Rate > 0 {
		return "open-loop"
	}
	return "closed-loop"
}

// caller is one goroutine's share of the run, merged at the end: the
// errors it met, by kind, with the first message of each. (A recorded
// run's caller holds its decisions too, with their latencies: from due in
// an open loop, or from sent.)
type caller struct {
	decisions []Decision
	latency   []time.Duration
	errs      map[string]int
	example   map[string]string
}

// Run drives the load and returns what it measured. It returns an error
// only when the configuration is invalid (and no result) or ctx ended (an
// interrupt: with the result of what ran, Interrupted set). The target's
// errors are counted in the result, by kind, never returned.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	grace := cfg.Grace
	if grace <= 0 {
		grace = 5 * time.Second
	}
	users := make([]string, cfg.Users)
	for i := range users {
		users[i] = cfg.UserPrefix + strconv.Itoa(i)
	}
	// Calls in flight when the duration ends may finish within the grace;
	// ctx (an interrupt) ends them at once.
	callCtx, cancel := context.WithTimeoutCause(ctx, cfg.Duration+grace,
		fmt.Errorf("the call outlived the run's grace period (%v after the end): %w", grace, context.DeadlineExceeded))
	defer cancel()

	l := newLoad(cfg, users)
	var wg sync.WaitGroup
	l.start = time.Now()
	if cfg.SkipExactness == "" {
		var err error
		if l.judging, err = newJudging(cfg, l.start, users); err != nil {
			return nil, err // Validate checked the profile: not reached
		}
	}
	for k := range l.callers {
		c := newCaller()
		l.callers[k] = c
		lim := cfg.Instances[k%len(cfg.Instances)]
		timed, _ := lim.(SentTimer)
		pick := picker(cfg, uint64(k))
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.call(ctx, callCtx, c, lim, timed, pick)
		}()
	}
	failedOver := l.failover(callCtx)
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		l.progress(callCtx)
	}()
	l.send(ctx, callCtx)
	l.stop.Store(true)
	backlog := l.backlog()
	sent := time.Since(l.start)
	wg.Wait()
	cancel()
	<-progressDone
	r := l.result(time.Since(l.start), backlog, <-failedOver)
	if ctx.Err() != nil {
		r.Interrupted = true
		return r, fmt.Errorf("the bench was interrupted after %v: %w", sent.Round(time.Millisecond), context.Cause(ctx))
	}
	return r, nil
}

// load is what a running bench's goroutines share: its callers, the open
// loop's queue, the counts the progress reports, and what the decisions
// add up to, as they come (tally and judging, under mu): the run holds
// none of its decisions, so its memory does not grow with its length.
type load struct {
	cfg     Config
	users   []string
	callers []*caller
	mu      sync.Mutex
	tally   *tally
	judging *judging // nil when the exactness is not checked
	// failedAfter counts the calls sent from the failover on that failed.
	failedAfter int
	// due is the open loop's queue: when each request is due (nil in a
	// closed loop).
	due   chan time.Duration
	start time.Time
	// stop says the sending is over.
	stop                    atomic.Bool
	done, allowed, errCount atomic.Int64
}

// newLoad prepares the run of cfg: room for its callers, and the open
// loop's queue.
func newLoad(cfg Config, users []string) *load {
	l := &load{cfg: cfg, users: users, callers: make([]*caller, cfg.Concurrency), tally: newTally(cfg)}
	if cfg.Rate > 0 {
		l.due = make(chan time.Duration, min(1<<20, int(cfg.Rate)+1))
	}
	return l
}

// newCaller returns a caller that has met no error.
func newCaller() *caller {
	return &caller{errs: map[string]int{}, example: map[string]string{}}
}

// call is caller c's loop: it sends requests to lim (timed from when
// they were sent, by timed when lim is a SentTimer) for the users pick
// draws, one at a time, until the sending is over: in an open loop one
// per due instant it takes from the queue.
func (l *load) call(ctx, callCtx context.Context, c *caller, lim Limiter, timed SentTimer, pick func() int) {
	for !l.stop.Load() {
		if l.due == nil && time.Since(l.start) >= l.cfg.Duration {
			return // the main goroutine may be late to say so
		}
		var dueAt time.Duration
		if l.due != nil {
			var ok bool
			select {
			case dueAt, ok = <-l.due:
			case <-callCtx.Done():
			}
			if !ok {
				return
			}
			// A request taken from the queue is sent, even if the end
			// came meanwhile: what is left is the backlog.
		}
		d, err := l.decide(callCtx, lim, timed, pick())
		from := d.Sent
		if l.due != nil {
			from = dueAt
		}
		l.record(ctx, c, d, err, from)
	}
}

// decide sends one request for user u to lim and returns its decision:
// sent when the call began, or when timed says the request left.
func (l *load) decide(callCtx context.Context, lim Limiter, timed SentTimer, u int) (Decision, error) {
	before := time.Since(l.start)
	var (
		ok   bool
		err  error
		sent = before
	)
	if timed != nil {
		var at time.Time
		ok, at, err = timed.AllowRequestSent(callCtx, l.users[u])
		if err == nil {
			sent = at.Sub(l.start)
		}
	} else {
		ok, err = lim.AllowRequest(callCtx, l.users[u])
	}
	d := Decision{User: int32(u), Sent: sent, Returned: time.Since(l.start)}
	switch {
	case err != nil:
		// An interrupted call may have taken effect too.
		d.Outcome = Errored
	case ok:
		d.Outcome = Allowed
	default:
		d.Outcome = Denied
	}
	return d, err
}

// record adds decision d up, with its latency counted from from, and
// counts it: an error (err) by its kind in caller c, "interrupted" once
// ctx ended.
func (l *load) record(ctx context.Context, c *caller, d Decision, err error, from time.Duration) {
	switch d.Outcome {
	case Errored:
		kind := "interrupted"
		if ctx.Err() == nil {
			kind = errorKind(err)
		}
		c.errs[kind]++
		if _, seen := c.example[kind]; !seen {
			c.example[kind] = err.Error()
		}
		l.errCount.Add(1)
	case Allowed:
		l.allowed.Add(1)
	}
	l.mu.Lock()
	l.tally.add(d, d.Returned-from)
	if l.judging != nil {
		l.judging.add(d)
	}
	if d.Outcome == Errored && l.cfg.Failover != nil && d.Sent >= l.cfg.FailoverAt {
		l.failedAfter++
	}
	l.mu.Unlock()
	l.done.Add(1)
}

// result is what the run measured: it lasted elapsed, left backlog
// requests never sent, and met failover (nil: none).
func (l *load) result(elapsed time.Duration, backlog int64, failover *FailoverFigure) *Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := newResult(l.cfg, l.callers, elapsed, backlog)
	r.Failover = failover
	l.tally.fill(r, elapsed)
	switch {
	case l.cfg.SkipExactness != "":
		r.NotChecked = l.cfg.SkipExactness
	default:
		l.judging.finish(r)
		r.nameWorst()
		r.figureFailover(l.failedAfter)
	}
	return r
}

// failover fails the store over FailoverAt into the run, when the config
// says how (Config.Failover), and sends what happened on the channel it
// returns once done (nil when there is none, or ctx ended first).
func (l *load) failover(ctx context.Context) <-chan *FailoverFigure {
	out := make(chan *FailoverFigure, 1)
	if l.cfg.Failover == nil {
		out <- nil
		return out
	}
	go func() {
		select {
		case <-ctx.Done():
			out <- nil
			return
		case <-time.After(l.cfg.FailoverAt - time.Since(l.start)):
		}
		f := &FailoverFigure{Requested: time.Since(l.start)}
		if err := l.cfg.Failover(ctx); err != nil {
			f.Error = err.Error()
		} else {
			f.Promoted = time.Since(l.start)
		}
		out <- f
	}()
	return out
}

// progress calls cfg.Progress (when set) about every 250ms with the
// counts so far, until the sending is over or callCtx ends.
func (l *load) progress(callCtx context.Context) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	last, lastAt := int64(0), time.Duration(0)
	for {
		select {
		case <-tick.C:
		case <-callCtx.Done():
			return
		}
		el := time.Since(l.start)
		if l.stop.Load() {
			return
		}
		n := l.done.Load()
		if l.cfg.Progress != nil {
			l.cfg.Progress(Progress{Elapsed: el, Decisions: n, Allowed: l.allowed.Load(), Errors: l.errCount.Load(),
				Rate: float64(n-last) / (el - lastAt).Seconds()})
		}
		last, lastAt = n, el
	}
}

// send lasts as long as the sending: in an open loop it queues the due
// requests, then gives the callers a moment to take the last ones; in a
// closed loop it waits for cfg.Duration. An interrupt (ctx) ends it
// early.
func (l *load) send(ctx, callCtx context.Context) {
	if l.due != nil {
		dispatch(callCtx, l.cfg, l.start, l.due)
		drain(callCtx, l.cfg, l.due)
		return
	}
	select {
	case <-time.After(l.cfg.Duration):
	case <-ctx.Done():
	}
}

// backlog closes the open loop's queue and counts the requests still in
// it: they were never sent, as the target fell behind (0 in a closed
// loop).
func (l *load) backlog() int64 {
	if l.due == nil {
		return 0
	}
	close(l.due)
	var n int64
	for range l.due {
		n++
	}
	return n
}

// drain gives the callers a moment to take the open loop's last due
// requests from the queue: a request due just before the end is sent, not
// counted in the backlog, when the target keeps up.
func drain(ctx context.Context, cfg Config, due chan time.Duration) {
	slack := 2*time.Duration(float64(time.Second)/cfg.Rate) + 10*time.Millisecond
	deadline := time.NewTimer(slack)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for len(due) > 0 {
		select {
		case <-tick.C:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// dispatch queues a due instant for every request of the open loop, at
// cfg.Rate per second, until cfg.Duration has passed. When the callers are
// all busy the queue fills and dispatch waits: requests then wait in it,
// and their latency counts from when they were due.
func dispatch(ctx context.Context, cfg Config, start time.Time, due chan<- time.Duration) {
	interval := time.Duration(float64(time.Second) / cfg.Rate)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	next := time.Duration(0)
	for {
		now := time.Since(start)
		for ; next <= now && next < cfg.Duration; next += interval {
			select {
			case due <- next:
			case <-ctx.Done():
				return
			}
		}
		if next >= cfg.Duration {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}

// picker returns a draw of user indexes for caller k: uniform, or Zipf.
func picker(cfg Config, k uint64) func() int {
	r := rand.New(rand.NewPCG(cfg.Seed, k))
	if cfg.Zipf > 1 && cfg.Users > 1 {
		z := rand.NewZipf(r, cfg.Zipf, 1, uint64(cfg.Users-1))
		return func() int { return int(z.Uint64()) }
	}
	return func() int { return r.IntN(cfg.Users) }
}

// latencyHistogram records from 1µs to 10 minutes in ns, 3 significant
// digits.
func latencyHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(10*time.Minute), 3)
}
