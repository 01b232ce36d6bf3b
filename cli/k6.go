package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/bench"
	"github.com/rlconform/rlconform/bench/k6"
	"github.com/rlconform/rlconform/internal/plural"
	"github.com/rlconform/rlconform/model"
)

// k6Flags are bench's flags that judge a run k6 drove (--from-k6).
type k6Flags struct {
	fromK6         pathList
	userTag        string
	clockSkew      time.Duration
	requestTimeout time.Duration
}

func (f *k6Flags) register(fs *flag.FlagSet) {
	fs.Var(&f.fromK6, "from-k6", "judge the load k6 drove instead of driving any: its JSON output (k6 run --out json=`FILE`, gzipped or not), one file per generator; the files may follow the flag (--from-k6 a.json b.json.gz); needs --policy")
	fs.StringVar(&f.userTag, "user-tag", "user", "with --from-k6: the tag of each request that names its user (the identity it sent); a request without the tag is read from its metadata of that name, if it has it (said on stderr)")
	fs.DurationVar(&f.requestTimeout, "request-timeout", k6.DefaultTimeout, "with --from-k6: the longest a request may have taken, your script's k6 timeout (at most 24h): a request whose phases are not to be trusted (a negative one, a write that failed) is widened to it")
	fs.DurationVar(&f.clockSkew, "clock-skew", 0, "with --from-k6: how far any generator's clock may be from the limiter's (your NTP's bound, at most 1h): every request's interval is widened by it on each side")
}

// parse parses args into fs; with --from-k6, the arguments that follow
// it are more files, and flags may come after them.
func (f *k6Flags) parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	for len(f.fromK6) > 0 && fs.NArg() > 0 {
		rest := fs.Args()
		i := 0
		for i < len(rest) && !strings.HasPrefix(rest[i], "-") {
			f.fromK6 = append(f.fromK6, rest[i])
			i++
		}
		if i == len(rest) {
			break
		}
		if err := fs.Parse(rest[i:]); err != nil {
			return err
		}
	}
	return nil
}

// k6Excludes are the flags of a load bench drives, which a k6 run judged
// does not take.
var k6Excludes = []string{"target", "endpoint", "exec", "instances", "exec-ready", "concurrency", "rate", "duration", "users", "zipf",
	"limit", "window", "timeout", "seed", "identity", "method", "header", "body", "max-rps", "progress"}

// check reports flags that do not go with --from-k6, or that need it.
func (f *k6Flags) check(set map[string]bool) error {
	switch {
	case len(f.fromK6) == 0:
		return errors.New("--user-tag, --clock-skew and --request-timeout go with --from-k6")
	case f.requestTimeout <= 0 || f.requestTimeout > 24*time.Hour:
		return fmt.Errorf("--request-timeout %v: want more than 0, at most 24h", f.requestTimeout)
	case !set["policy"]:
		return errors.New("--from-k6 needs --policy N/W: the limit the service enforces (10/1s, 100/1m)")
	case f.userTag == "":
		return errors.New("--user-tag must not be empty")
	case f.clockSkew < 0:
		return errors.New("--clock-skew must not be negative")
	case f.clockSkew > bench.MaxClockSkew:
		return fmt.Errorf("--clock-skew %v: more than %v, far past any clock that keeps time (NTP keeps them within milliseconds)", f.clockSkew, bench.MaxClockSkew)
	}
	for _, name := range k6Excludes {
		if set[name] {
			return fmt.Errorf("--%s drives load; --from-k6 judges the load k6 drove (its --policy, --profile, --limited-status, --user-tag, --clock-skew and --request-timeout say how)", name)
		}
	}
	return nil
}

// fromK6 judges k6's outputs and reports as bench does.
func fromK6(f *benchFlags, spec model.Variant, baseline *bench.Result, files *benchFiles, text, stderr io.Writer) int {
	policy, err := adapters.ParsePolicy(f.policy)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform bench: --policy: %v\n", err)
		return ExitCannotRun
	}
	r := k6.NewReader(k6.Options{UserTag: f.userTag, LimitedStatus: f.limitedStatus, Timeout: f.requestTimeout})
	began := time.Now()
	for _, path := range f.fromK6 {
		if err := r.ReadFile(path); err != nil {
			fmt.Fprintf(stderr, "rlconform bench: --from-k6: %v\n", err)
			return ExitCannotRun
		}
	}
	took := time.Since(began)
	st := r.Stats()
	rec, err := r.Recording()
	if err != nil {
		fmt.Fprintf(stderr, "rlconform bench: --from-k6: %v\n", err)
		return ExitCannotRun
	}
	fmt.Fprintf(stderr, "rlconform: read %d requests of %s (%d lines) in %v: %.0f decisions/s\n",
		st.Requests, plural.Count(st.Generators, "generator"), st.Lines, took.Round(time.Millisecond), float64(st.Decisions)/max(took, time.Microsecond).Seconds())
	if st.Untagged > 0 {
		fmt.Fprintf(stderr, "rlconform: warning: %d requests carry no %q tag and are not judged (the script's other requests?); tag every request to the limited service with the identity it sends\n", st.Untagged, f.userTag)
	}
	k6Notes(stderr, st, f.userTag, f.requestTimeout)
	res, err := bench.Replay{Judge: bench.Judge{Profile: spec, Limit: policy.Limit, Window: policy.Window}, ClockSkew: f.clockSkew}.Run(rec)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform bench: %v\n", err)
		return ExitCannotRun
	}
	res.Target, res.Version = "k6 run ("+strings.Join(f.fromK6, ", ")+")", Version()
	if res.Failed() && res.Skew != nil && res.Skew.Explained {
		fmt.Fprintf(stderr, "rlconform: an exact limiter, seen through generators whose clocks were off by up to %v, would look like this; the bound declared is %v (--clock-skew)\n", res.Skew.Smallest, res.Skew.Assumed)
	}
	return reportBench(f, res, nil, baseline, files, text, stderr)
}

// k6Notes says on stderr what was read other than as expected: requests
// not judged, users read from metadata, intervals widened, lines skipped,
// outputs cut short.
func k6Notes(stderr io.Writer, st k6.Stats, userTag string, timeout time.Duration) {
	if st.Incomplete > 0 {
		fmt.Fprintf(stderr, "rlconform: warning: %d requests lack their http_req_duration or http_req_blocked point and are not judged\n", st.Incomplete)
	}
	if st.FromMetadata > 0 {
		fmt.Fprintf(stderr, "rlconform: %d requests name their user in their metadata (%q), not in a tag: read from there\n", st.FromMetadata, userTag)
	}
	if st.NegativePhase > 0 {
		fmt.Fprintf(stderr, "rlconform: warning: %d requests have a negative phase (the generator's clock stepped back during them): each one's interval is widened to the request timeout, %v (--request-timeout)\n", st.NegativePhase, timeout)
	}
	if st.FailedWrite > 0 {
		fmt.Fprintf(stderr, "rlconform: warning: %d requests were answered while k6 was still writing them (no sending, no waiting: their duration falls short): each one's interval is widened to the request timeout, %v (--request-timeout)\n", st.FailedWrite, timeout)
	}
	if st.TooLong > 0 {
		fmt.Fprintf(stderr, "rlconform: warning: %d lines longer than 64 KiB are skipped\n", st.TooLong)
	}
	for _, c := range st.Cuts {
		fmt.Fprintf(stderr, "rlconform: warning: %s\n", c)
	}
}

// pathList is a repeatable flag of paths (which may hold commas).
type pathList []string

func (l *pathList) String() string { return strings.Join(*l, " ") }

// Set adds one path.
func (l *pathList) Set(v string) error {
	if v == "" {
		return errors.New("empty path")
	}
	*l = append(*l, v)
	return nil
}
