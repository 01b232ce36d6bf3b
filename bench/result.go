package bench

import (
	"github.com/rlconform/rlconform/model"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/plural"
)

// Result is what one bench measured.
type Result struct {
	// Target names what was benched, Version the rlconform that did (both
	// set by the caller of Run, for the report).
	Target      string        `json:"target,omitempty"`
	Version     string        `json:"version,omitempty"`
	Mode        string        `json:"mode"` // closed-loop or open-loop
	Concurrency int           `json:"concurrency"`
	Rate        float64       `json:"rate,omitempty"`
	Duration    time.Duration `json:"duration_ns"`
	Users       int           `json:"users"`
	Zipf        float64       `json:"zipf,omitempty"`
	Limit       int           `json:"limit"`
	Window      time.Duration `json:"window_ns"`
	// Profile is the profile the decisions are judged against.
	Profile string `json:"profile,omitempty"`
	Seed    uint64 `json:"seed"`

	// Decisions are the calls answered; Allowed and Denied split them.
	Decisions int `json:"decisions"`
	Allowed   int `json:"allowed"`
	Denied    int `json:"denied"`
	// Errors counts the calls that failed, by kind (timeout, store,
	// connection, status, other, and interrupted for those an interrupt
	// cut short); ErrorExamples has the first message of each kind.
	Errors        map[string]int    `json:"errors"`
	ErrorExamples map[string]string `json:"error_examples,omitempty"`
	// Backlog counts the open loop's requests that were due but never
	// sent: every caller was busy until the end.
	Backlog int `json:"backlog,omitempty"`
	// Interrupted: the run was stopped before its end (its figures are of
	// what ran).
	Interrupted bool `json:"interrupted,omitempty"`
	// Elapsed runs from the first request to the last answer.
	Elapsed time.Duration `json:"elapsed_ns"`
	// Throughput is answered decisions per second of Elapsed.
	Throughput float64 `json:"throughput"`
	// Latency is over every call, answered or failed (a call that timed
	// out cost its caller the timeout): from when it was sent, or in an
	// open loop from when it was due.
	Latency Percentiles `json:"latency"`
	// HotKey is the user with the most calls, and how its latency compares
	// with the others' (nil with one user).
	HotKey *HotKey `json:"hot_key,omitempty"`
	// Series is the run cut into buckets of equal length, for the chart.
	Series []Bucket `json:"series"`
	// Exactness is the check of every decision against Profile with Limit
	// per Window; nil when it was not checked, NotChecked says why.
	Exactness  *Exactness `json:"exactness,omitempty"`
	NotChecked string     `json:"exactness_not_checked,omitempty"`
	// Source says what recorded a replayed run ([Replay]; Mode is then
	// "recorded"), and Skew what it assumed of the generators' clocks.
	Source string `json:"source,omitempty"`
	Skew   *Skew  `json:"clock_skew,omitempty"`

	// Failover is what a failover of the limiter's store during the run
	// did to the limit (nil without one: bench --failover).
	Failover *FailoverFigure `json:"failover,omitempty"`

	decisions []Decision
	userIDs   func(int32) string
}

// FailoverFigure is what a failover of the limiter's store did to the
// limit. Redis replicates asynchronously: a write the primary
// acknowledged just before it was demoted may never reach the replica
// promoted, and a limiter on it then admits more than N. Beyond counts
// them: the requests the exactness check proves past the limit over the
// whole run, less those it proves among the requests sent before the
// failover was asked for (Before, the check of those alone, is the
// verdict on the limiter: [Result.Failed]).
type FailoverFigure struct {
	// Requested is when SENTINEL FAILOVER was sent, Promoted when the
	// Sentinels named the new primary (0 when the failover failed: Error
	// says why), from the run's start.
	Requested time.Duration `json:"requested_ns"`
	Promoted  time.Duration `json:"promoted_ns,omitempty"`
	Error     string        `json:"error,omitempty"`
	// Beyond and UnderAdmitted are the overshoot and the under-admissions
	// the check proves over the run beyond those it proves before the
	// failover: the failover's doing, or its store-failure policy's.
	Beyond        int        `json:"admitted_beyond_limit"`
	UnderAdmitted int        `json:"under_admitted_after"`
	Before        *Exactness `json:"before,omitempty"`
	// Failed counts the calls sent from Requested on that failed (the
	// store failing over): part of the figure, not a faulty run.
	Failed int `json:"failed_calls_after"`
}

// Percentiles of a latency distribution, from an HDR histogram (3
// significant digits).
type Percentiles struct {
	P50  time.Duration `json:"p50_ns"`
	P90  time.Duration `json:"p90_ns"`
	P99  time.Duration `json:"p99_ns"`
	P999 time.Duration `json:"p99_9_ns"`
	Max  time.Duration `json:"max_ns"`
}

// HotKey is the busiest user of a run.
type HotKey struct {
	User int32 `json:"user"`
	// Share is its part of every call, 0 to 1.
	Share float64 `json:"share"`
	// P99 is its calls' p99; OthersP99 the other users'.
	P99       time.Duration `json:"p99_ns"`
	OthersP99 time.Duration `json:"others_p99_ns"`
}

// Bucket is one slice of the run's time.
type Bucket struct {
	At        time.Duration `json:"at_ns"` // its start, from the run's start
	Decisions int           `json:"decisions"`
	Allowed   int           `json:"allowed"`
	Errors    int           `json:"errors"`
	// Users is how many users sent in it: the sustained ceiling of allowed
	// requests is Users × Limit / Window.
	Users int `json:"users"`
	// Busiest is the most allowed requests of one user that surely lay in
	// the window ending with the bucket (sent after its start, answered
	// before its end, by the real-time rule): a limiter that keeps to the limit never
	// shows more than Limit.
	Busiest int           `json:"busiest_window"`
	P50     time.Duration `json:"p50_ns"`
	P99     time.Duration `json:"p99_ns"`
	Max     time.Duration `json:"max_ns"`
}

// UserID is the id the run gave user u.
func (r *Result) UserID(u int32) string {
	if r.userIDs == nil {
		return fmt.Sprintf("#%d", u)
	}
	return r.userIDs(u)
}

// Failed reports whether the check proved the limiter wrong under the load:
// an overshoot or an under-admission.
//
// With a failover, only the requests sent before it are the verdict's:
// what came after is the failover's figure.
func (r *Result) Failed() bool {
	if f := r.Failover; f != nil && f.Before != nil {
		return !f.Before.Exact()
	}
	return r.Exactness != nil && !r.Exactness.Exact()
}

// newResult is the result of a run of cfg that lasted elapsed, with the
// errors its callers counted: what every run says before its decisions
// are added up.
func newResult(cfg Config, callers []*caller, elapsed time.Duration, backlog int64) *Result {
	r := &Result{Profile: Judge{Profile: cfg.Profile}.profileName(), Mode: cfg.Mode(), Concurrency: cfg.Concurrency, Rate: cfg.Rate, Duration: cfg.Duration,
		Users: cfg.Users, Zipf: cfg.Zipf, Limit: cfg.Limit, Window: cfg.Window, Seed: cfg.Seed,
		Errors: map[string]int{}, ErrorExamples: map[string]string{}, Backlog: int(backlog), Elapsed: elapsed}
	prefix := cfg.UserPrefix
	r.userIDs = func(u int32) string { return fmt.Sprintf("%s%d", prefix, u) }
	for _, c := range callers {
		for kind, k := range c.errs {
			r.Errors[kind] += k
			if _, ok := r.ErrorExamples[kind]; !ok {
				r.ErrorExamples[kind] = c.example[kind]
			}
		}
	}
	return r
}

// collect adds up a recorded run's decisions (with their latencies),
// which it holds whole: the figures, and the check of every decision
// against the profile (Replay searches the clock skew on them after).
func collect(cfg Config, c *caller, start time.Time, elapsed time.Duration) *Result {
	r := newResult(cfg, []*caller{c}, elapsed, 0)
	t := newTally(cfg)
	for i, d := range c.decisions {
		t.add(d, c.latency[i])
	}
	t.fill(r, elapsed)
	began := time.Now()
	r.decisions = byUser(c.decisions)
	c.decisions, c.latency = nil, nil // r.decisions has them: less to hold during the check
	rules, err := Judge{Profile: cfg.Profile, Limit: cfg.Limit, Window: cfg.Window, Start: start}.rules()
	if err != nil {
		r.NotChecked = err.Error() // the recording's profile was validated: not reached
		return r
	}
	ex := rules.check(r.decisions, elapsed, scope{})
	ex.Took = time.Since(began)
	r.Exactness = &ex
	r.nameWorst()
	return r
}

// nameWorst sets the user ids of the exactness check's evidence.
func (r *Result) nameWorst() {
	if r.Exactness == nil {
		return
	}
	if w := r.Exactness.Worst; w != nil {
		w.UserID = r.UserID(w.User)
	}
	if u := r.Exactness.WorstUnder; u != nil {
		u.UserID = r.UserID(u.User)
	}
}

// figureFailover sets what a failover did to the limit, from the checks
// of the whole run and of the calls before it, and the calls that failed
// after it was asked (failedAfter).
func (r *Result) figureFailover(failedAfter int) {
	f := r.Failover
	if f == nil || f.Before == nil || r.Exactness == nil {
		return
	}
	ex, before := r.Exactness, f.Before
	f.Beyond, f.UnderAdmitted = max(0, ex.Overshoot-before.Overshoot), max(0, ex.UnderAdmitted-before.UnderAdmitted)
	f.Failed = failedAfter
	if w := before.Worst; w != nil {
		w.UserID = r.UserID(w.User)
	}
	if u := before.WorstUnder; u != nil {
		u.UserID = r.UserID(u.User)
	}
}

// errorKind names the kind of a call's error for the tally.
func errorKind(err error) string {
	var (
		ne net.Error
		ae *adapters.Error
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "connection"
	case errors.Is(err, contract.ErrStore):
		return "store"
	case errors.As(err, &ae) && ae.Status != 0:
		return "status"
	}
	return "other"
}

// WriteJSON writes r as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ReadJSON reads a result that WriteJSON wrote (a baseline to compare with).
func ReadJSON(rd io.Reader) (*Result, error) {
	var r Result
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return nil, err
	}
	if r.Throughput <= 0 || r.Latency.P99 <= 0 {
		return nil, errors.New("it holds no throughput or p99: not a result of rlconform bench --json")
	}
	return &r, nil
}

// Text writes the final table.
func (r *Result) Text(w io.Writer) {
	mode := "closed loop, " + plural.Count(r.Concurrency, "caller")
	if r.Mode == "open-loop" {
		mode = fmt.Sprintf("open loop at %.0f/s (latency from when each request was due), at most %d in flight", r.Rate, r.Concurrency)
	}
	users := plural.Count(r.Users, "user") + ", uniform"
	if r.Users == 1 {
		users = "1 user"
	}
	if r.Zipf > 1 {
		users = fmt.Sprintf("%d users, Zipf s=%g (user 0 hottest)", r.Users, r.Zipf)
	}
	if r.Mode == "recorded" {
		fmt.Fprintf(w, "load        %s over %v; %s; limit %d per %v\n", r.Source, r.Duration.Round(time.Millisecond), plural.Count(r.Users, "user"), r.Limit, r.Window)
	} else {
		fmt.Fprintf(w, "load        %s for %v; %s; limit %d per %v\n", mode, r.Duration, users, r.Limit, r.Window)
	}
	fmt.Fprintf(w, "profile     %s: the decisions are judged by its rules\n", r.judged())
	fmt.Fprintf(w, "throughput  %.0f decisions/s (%d in %v)\n", r.Throughput, r.Decisions, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "latency     p50 %v  p90 %v  p99 %v  p99.9 %v  max %v\n",
		RoundLatency(r.Latency.P50), RoundLatency(r.Latency.P90), RoundLatency(r.Latency.P99), RoundLatency(r.Latency.P999), RoundLatency(r.Latency.Max))
	pct := 0.0
	if r.Decisions > 0 {
		pct = 100 * float64(r.Allowed) / float64(r.Decisions)
	}
	fmt.Fprintf(w, "decisions   %d allowed (%.1f%%), %d denied\n", r.Allowed, pct, r.Denied)
	if h := r.HotKey; h != nil && r.Zipf > 1 {
		fmt.Fprintf(w, "hot key     user %q took %.1f%% of the calls: p99 %v against %v for the others\n",
			r.UserID(h.User), 100*h.Share, RoundLatency(h.P99), RoundLatency(h.OthersP99))
	}
	fmt.Fprintf(w, "errors      %s\n", r.errorLine())
	if r.Backlog > 0 {
		fmt.Fprintf(w, "backlog     %s due but never sent: the target could not keep up with %.0f/s\n", plural.Count(r.Backlog, "request"), r.Rate)
	}
	if r.Interrupted {
		fmt.Fprintf(w, "INTERRUPTED after %v: the figures are of what ran\n", r.Elapsed.Round(time.Millisecond))
	}
	if f := r.Failover; f != nil && f.Before != nil {
		// The verdict is on the requests before the failover; what came
		// after is its figure, the whole run's worst window with it.
		fmt.Fprintf(w, "before the failover (sent by +%v):\n", f.Requested.Round(time.Millisecond))
		r.exactnessText(w, f.Before)
		r.failoverText(w)
		if r.Exactness != nil && f.Beyond+f.UnderAdmitted > 0 {
			fmt.Fprintf(w, "the whole run, the failover's doing included:\n")
			r.exactnessText(w, r.Exactness)
		}
	} else {
		r.exactnessText(w, r.Exactness)
		r.failoverText(w)
	}
	r.skewText(w)
}

// failoverText says what a failover did to the limit.
func (r *Result) failoverText(w io.Writer) {
	f := r.Failover
	if f == nil {
		return
	}
	if f.Error != "" {
		fmt.Fprintf(w, "failover    asked at +%v, failed: %s\n", f.Requested.Round(time.Millisecond), f.Error)
	} else {
		fmt.Fprintf(w, "failover    asked at +%v, the new primary named at +%v\n", f.Requested.Round(time.Millisecond), f.Promoted.Round(time.Millisecond))
	}
	if f.Before == nil {
		return
	}
	fmt.Fprintf(w, "            admitted beyond the limit after it: %s; refused within the limit after it: %s; failed after it: %s (the failover's figure, or its store-failure policy's while the store failed: not a verdict, which is on the %s sent before it)\n",
		plural.Count(f.Beyond, "request"), plural.Count(f.UnderAdmitted, "request"), plural.Count(f.Failed, "call"), plural.Count(f.Before.Decisions, "decision"))
}

func (r *Result) errorLine() string {
	if len(r.Errors) == 0 {
		return "none"
	}
	kinds := make([]string, 0, len(r.Errors))
	for k := range r.Errors {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%d %s (first: %s)", r.Errors[k], k, r.ErrorExamples[k]))
	}
	return strings.Join(parts, "; ")
}

// ErrorCount is how many calls failed, of every kind.
func (r *Result) ErrorCount() int {
	n := 0
	for _, k := range r.Errors {
		n += k
	}
	return n
}

// exactnessText says what the check found in ex (nil: not checked).
func (r *Result) exactnessText(w io.Writer, checked *Exactness) {
	fmt.Fprintf(w, "exactness   ")
	if checked == nil {
		fmt.Fprintf(w, "not checked: %s\n", r.NotChecked)
		return
	}
	ex := *checked
	switch {
	case ex.Exact() && ex.UsersAtLimit == 0:
		fmt.Fprintf(w, "NOT EXERCISED: no user was ever denied, so the limit was never put to the test (fewer users, a lower limit or more load would)\n")
	case ex.Exact():
		fmt.Fprintf(w, "exact: no overshoot and no under-admission in %s of %s at the limit%s, judged as %s (checked in %v)\n",
			plural.Count(ex.Decisions, "decision"), plural.Count(ex.UsersAtLimit, "user"), failedNote(ex), r.judged(), RoundLatency(ex.Took))
	}
	if ex.Overshoot > 0 {
		wd := ex.Worst
		fmt.Fprintf(w, "OVERSHOOT: %s allowed past the limit of %d per %v, judged as %s\n", plural.Count(ex.Overshoot, "request"), r.Limit, r.Window, r.judged())
		fmt.Fprintf(w, "            worst window: user %q had %d allowed between +%v (first sent) and +%v (last answered), %v apart, where the profile admits at most %d whatever their instants\n",
			wd.UserID, wd.Allowed, wd.From.Round(time.Microsecond), wd.To.Round(time.Microsecond), (wd.To - wd.From).Round(time.Microsecond), wd.Bound)
		if wd.Rule != "" {
			fmt.Fprintf(w, "            the bound: %s\n", wd.Rule)
		}
		timeline(w, r, wd.Calls)
	}
	if ex.UnderAdmitted > 0 {
		u := ex.WorstUnder
		if ex.Overshoot == 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "            UNDER-ADMISSION: %s denied that %s of %d per %v admits whatever the timing\n", plural.Count(ex.UnderAdmitted, "request"), r.judged(), r.Limit, r.Window)
		fmt.Fprintf(w, "            worst: user %q denied at +%v..+%v with at most %d allowed (or failed) requests that could count\n",
			u.UserID, u.Call.Sent.Round(time.Microsecond), u.Call.Returned.Round(time.Microsecond), u.Counted)
		if u.Rule != "" {
			fmt.Fprintf(w, "            the rule: %s\n", u.Rule)
		}
		timeline(w, r, append(slices.Clone(u.Nearby), u.Call))
	}
}

// judged is the profile the decisions were judged against.
func (r *Result) judged() string {
	if r.Exactness != nil && r.Exactness.Profile != "" {
		return r.Exactness.Profile
	}
	if r.Profile != "" {
		return r.Profile
	}
	return model.ProfileSlidingLog
}

// timeline prints calls (at most 12: the first 6 and the last 6).
func timeline(w io.Writer, r *Result, calls []Decision) {
	slices.SortStableFunc(calls, func(a, b Decision) int { return int(a.Sent - b.Sent) })
	began := "the bench began"
	if r.Mode == "recorded" {
		began = "the run's first instant"
	}
	fmt.Fprintf(w, "            timeline (ms since %s; sent..answered):\n", began)
	for i, c := range calls {
		if len(calls) > 12 && i == 6 {
			fmt.Fprintf(w, "              ... %d more\n", len(calls)-12)
		}
		if len(calls) > 12 && i >= 6 && i < len(calls)-6 {
			continue
		}
		fmt.Fprintf(w, "              +%.3f..+%.3f  AllowRequest(%q) = %s\n",
			float64(c.Sent)/1e6, float64(c.Returned)/1e6, r.UserID(c.User), c.Outcome)
	}
}

func failedNote(ex Exactness) string {
	if ex.Failed == 0 {
		return ""
	}
	return fmt.Sprintf(", %s counted as possibly allowed", plural.Count(ex.Failed, "failed call"))
}

// MarshalText names the outcome in JSON.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText reads a name MarshalText wrote.
func (o *Outcome) UnmarshalText(b []byte) error {
	for _, c := range []Outcome{Allowed, Denied, Errored, Other} {
		if c.String() == string(b) {
			*o = c
			return nil
		}
	}
	return fmt.Errorf("outcome %q: want allowed, denied, error or other", b)
}

// String names the outcome.
func (o Outcome) String() string {
	switch o {
	case Allowed:
		return "allowed"
	case Denied:
		return "denied"
	case Other:
		return "other"
	}
	return "error"
}

// RoundLatency rounds d for reading: to the ms past a second, to 10µs
// past a millisecond, else to the µs.
func RoundLatency(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// Comparison is a run set against a baseline.
type Comparison struct {
	// Throughput and P99 are the relative changes, in percent: -5 is 5%
	// fewer decisions per second; +20 a p99 20% longer.
	Throughput float64 `json:"throughput_change_percent"`
	P99        float64 `json:"p99_change_percent"`
}

// Compare sets r against base.
func Compare(r, base *Result) Comparison {
	return Comparison{
		Throughput: 100 * (r.Throughput - base.Throughput) / base.Throughput,
		P99:        100 * float64(r.Latency.P99-base.Latency.P99) / float64(base.Latency.P99),
	}
}

// Regressed reports what regressed by more than maxPercent: fewer
// decisions per second, or a longer p99.
func (c Comparison) Regressed(maxPercent float64) []string {
	var out []string
	if -c.Throughput > maxPercent {
		out = append(out, fmt.Sprintf("throughput fell %.1f%%", -c.Throughput))
	}
	if c.P99 > maxPercent {
		out = append(out, fmt.Sprintf("p99 rose %.1f%%", c.P99))
	}
	return out
}

// histogram is an HDR histogram of latencies in ns.
type histogram struct{ h *hdrhistogram.Histogram }

func newHistogram() *histogram { return &histogram{latencyHistogram()} }

func (h *histogram) record(d time.Duration) {
	// Past the top (10 minutes) is recorded at the top.
	if h.h.RecordValue(max(1, int64(d))) != nil {
		h.h.RecordValue(h.h.HighestTrackableValue())
	}
}

func (h *histogram) percentiles() Percentiles {
	q := func(p float64) time.Duration { return time.Duration(h.h.ValueAtQuantile(p)) }
	return Percentiles{P50: q(50), P90: q(90), P99: q(99), P999: q(99.9), Max: time.Duration(h.h.Max())}
}

// Differences lists what differs between the loads of r and base (mode,
// callers, rate, users, skew, limit, window, duration): a change against a
// baseline measures those too. The target may differ: comparing main's
// build with a pull request's is the point.
func Differences(r, base *Result) []string {
	var out []string
	diff := func(what string, a, b any) {
		if a != b {
			out = append(out, fmt.Sprintf("%s %v, baseline %v", what, a, b))
		}
	}
	diff("mode", r.Mode, base.Mode)
	diff("concurrency", r.Concurrency, base.Concurrency)
	diff("rate", r.Rate, base.Rate)
	diff("users", r.Users, base.Users)
	diff("zipf", r.Zipf, base.Zipf)
	diff("limit", r.Limit, base.Limit)
	diff("window", r.Window, base.Window)
	diff("duration", r.Duration, base.Duration)
	return out
}
