package cli

import (
	"context"
	"encoding/json"
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
	"github.com/rlconform/rlconform/audit"
	"github.com/rlconform/rlconform/audit/accesslog"
	"github.com/rlconform/rlconform/bench"
	"github.com/rlconform/rlconform/bench/k6"
	"github.com/rlconform/rlconform/model"
)

// auditFlags are the flags of rlconform audit.
type auditFlags struct {
	format, logFormat, user string
	policy, profile         string
	limitedStatus           int
	clockSkew, settle       time.Duration
	settleGiven             bool
	requestTimeout          time.Duration
	tz, json, html          string
	files                   []string
}

const auditUsage = `usage: rlconform audit --format F [--log-format FMT] --user FIELD --policy N/W [flags] FILE...

Judges a limiter by the access logs of the gateways in front of it: each
FILE (gzipped or not; - for standard input) is one gateway's log. Exit 0:
every admission and every refusal is explained by some timing of the
requests; 1: the limiter is wrong (no timing explains the log), with the
requests and their log lines; 2: undecided (no refusal to judge, the
intervals too wide to tell) or could not run. docs/audit.md says what to
put in each gateway's configuration.
`

func parseAudit(args []string, stderr io.Writer) (*auditFlags, error) {
	f := &auditFlags{}
	fs := flag.NewFlagSet("rlconform audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, auditUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.format, "format", "", "the logs' `FORMAT`: "+strings.Join(accesslog.Formats, ", "))
	fs.StringVar(&f.logFormat, "log-format", "", "the format the gateway writes, as its configuration says it: nginx's log_format string, Envoy's format string or json_format (as JSON; default: Envoy's default format), HAProxy's log-format (default: the HTTP log with %hr), Caddy's time_format=... duration_format=...")
	fs.StringVar(&f.user, "user", "", "the `FIELD` that names each request's user: nginx's variable ($http_x_user, $remote_addr, $cookie_NAME), Envoy's operator or header (%REQ(X-USER)%, X-User), HAProxy's variable or capture.req.hdr(N), Caddy's path (request.headers.X-User), k6's tag, the column of jsonl and csv (default user for those)")
	fs.StringVar(&f.policy, "policy", "", "the limit the limiter enforces, `N/W` (10/1s, 100/1m, 1000/1d)")
	fs.StringVar(&f.profile, "profile", model.ProfileSlidingLog, "the algorithm the limiter claims, `NAME[:key=value,...]` ("+strings.Join(model.Builtin().Names(), ", ")+"): its admissions and refusals are judged by that profile's bounds")
	fs.IntVar(&f.limitedStatus, "limited-status", 429, "the status of the limiter's refusal (Envoy: with the RL response flag)")
	fs.DurationVar(&f.clockSkew, "clock-skew", 0, "how far any gateway's clock may be from the limiter's (at most 1h): every interval is widened by it on each side")
	fs.DurationVar(&f.settle, "settle", 0, "how far out of order a log's lines may be, and how long a request may last before its refusals are judged (at most 1h): a longer request read later makes the refusals it might explain unproven. Default: adaptive, twice the most a line was seen out of order, from 1s to 30s, and a refusal that looks unexplained waits 30s for lines read late")
	fs.DurationVar(&f.requestTimeout, "request-timeout", k6.DefaultTimeout, "--format k6: the longest a request may have taken (your script's timeout, at most 24h)")
	fs.StringVar(&f.tz, "tz", "Local", "the time `ZONE` of instants logged without one (HAProxy's %tr): Local, UTC, or a name such as Europe/Paris")
	fs.StringVar(&f.json, "json", "", "write the result as JSON to `FILE` (- for stdout)")
	fs.StringVar(&f.html, "html", "", "write an HTML report to `FILE`: one self-contained page with the verdict, the figures and the evidence of any finding as a timeline with its log lines")
	if err := parseInterleaved(fs, args, &f.files); err != nil {
		return nil, err
	}
	fs.Visit(func(fl *flag.Flag) { f.settleGiven = f.settleGiven || fl.Name == "settle" })
	if err := f.check(); err != nil {
		return nil, err
	}
	return f, nil
}

// parseInterleaved parses args into fs, the arguments that are not flags
// into files: flags may follow the files.
func parseInterleaved(fs *flag.FlagSet, args []string, files *[]string) error {
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		rest := fs.Args()
		i := 0
		for i < len(rest) && (rest[i] == "-" || !strings.HasPrefix(rest[i], "-")) {
			*files = append(*files, rest[i])
			i++
		}
		if i == len(rest) {
			return nil
		}
		args = rest[i:]
	}
}

func (f *auditFlags) check() error {
	switch {
	case f.format == "":
		return fmt.Errorf("--format is needed: one of %s", strings.Join(accesslog.Formats, ", "))
	case f.policy == "":
		return errors.New("--policy N/W is needed: the limit the limiter enforces (10/1s, 100/1m)")
	case len(f.files) == 0:
		return errors.New("no log to read: give the files (- for standard input)")
	case f.clockSkew < 0 || f.clockSkew > bench.MaxClockSkew:
		return fmt.Errorf("--clock-skew %v: want 0 to %v", f.clockSkew, bench.MaxClockSkew)
	case f.settle < 0 || f.settle > time.Hour || f.settleGiven && f.settle == 0:
		return fmt.Errorf("--settle %v: want more than 0, at most 1h", f.settle)
	case f.requestTimeout <= 0 || f.requestTimeout > 24*time.Hour:
		return fmt.Errorf("--request-timeout %v: want more than 0, at most 24h", f.requestTimeout)
	case slices.Index(f.files, "-") >= 0 && slices.Index(f.files[slices.Index(f.files, "-")+1:], "-") >= 0:
		return errors.New("standard input (-) may be read once")
	}
	if f.user == "" {
		switch f.format {
		case "k6", "jsonl", "csv":
			f.user = "user"
		default:
			return fmt.Errorf("--user is needed with --format %s: the field that names each request's user (docs/audit.md)", f.format)
		}
	}
	return statusIn(f.limitedStatus)
}

func runAudit(args []string, stdout, stderr io.Writer) int {
	f, err := parseAudit(args, stderr)
	if err != nil {
		return parseFailed(stderr, "audit", err, true)
	}
	cfg, err := f.config()
	if err != nil {
		fmt.Fprintf(stderr, "rlconform audit: %v\n", err)
		return ExitCannotRun
	}
	var page io.WriteCloser
	if f.html != "" {
		if page, err = os.Create(f.html); err != nil {
			fmt.Fprintf(stderr, "rlconform audit: --html: %v\n", err)
			return ExitCannotRun
		}
		defer page.Close()
	}
	var out io.WriteCloser
	if f.json != "" && f.json != "-" {
		// Opened first: a bad path fails now, not after the reading.
		if out, err = os.Create(f.json); err != nil {
			fmt.Fprintf(stderr, "rlconform audit: --json: %v\n", err)
			return ExitCannotRun
		}
		defer out.Close()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := audit.Run(ctx, cfg, audit.Files(f.files...))
	if res == nil {
		fmt.Fprintf(stderr, "rlconform audit: %v\n", err)
		return ExitCannotRun
	}
	res.Version = Version()
	text := stdout
	if f.json == "-" {
		text, out = stderr, nopCloser{stdout}
	}
	res.Text(text)
	if out != nil {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			fmt.Fprintf(stderr, "rlconform audit: --json: %v\n", err)
			return ExitCannotRun
		}
	}
	if page != nil {
		if err := writeAuditHTML(page, res); err != nil {
			fmt.Fprintf(stderr, "rlconform audit: --html: %v\n", err)
			return ExitCannotRun
		}
		if err := page.Close(); err != nil {
			fmt.Fprintf(stderr, "rlconform audit: --html: %v\n", err)
			return ExitCannotRun
		}
	}
	if res.Interrupted {
		return ExitInterrupted
	}
	return res.Verdict.Code
}

// config is the audit the flags describe.
func (f *auditFlags) config() (audit.Config, error) {
	policy, err := adapters.ParsePolicy(f.policy)
	if err != nil {
		return audit.Config{}, fmt.Errorf("--policy: %w", err)
	}
	spec, err := model.ParseVariant(f.profile)
	if err != nil {
		return audit.Config{}, fmt.Errorf("--profile: %w", err)
	}
	loc, err := time.LoadLocation(f.tz)
	if err != nil {
		return audit.Config{}, fmt.Errorf("--tz: %w", err)
	}
	return audit.Config{
		Format:    f.format,
		Log:       accesslog.Options{LogFormat: f.logFormat, User: f.user, LimitedStatus: f.limitedStatus, Location: loc, Timeout: f.requestTimeout},
		Judge:     bench.Judge{Profile: spec, Limit: policy.Limit, Window: policy.Window},
		ClockSkew: f.clockSkew,
		Settle:    f.settle,
	}, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
