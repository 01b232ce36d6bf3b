// Package cli is the rlconform command line: flags in, a suite run out.
// It lives outside package main so that tests reach all of it.
package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/rlconform/rlconform/internal/commalist"
	"github.com/rlconform/rlconform/internal/version"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/report"

	// The command finds Redis on all three rungs, the container one too.
	_ "github.com/rlconform/rlconform/redisenv/container"
	"github.com/rlconform/rlconform/suite"
)

// Exit codes of the command.
const (
	ExitConformant    = 0
	ExitNotConformant = 1
	ExitCannotRun     = 2
	// ExitInterrupted: stopped by SIGINT or SIGTERM (128 + SIGINT).
	ExitInterrupted = 130
)

const usage = `rlconform grades rate limiters against the exact sliding-window contract,
or against the profile of another algorithm (--profile).

usage:
  rlconform run   [flags]  grade a limiter: the reference on a Redis found or started,
                           or a protocol v1 server with --target URL
  rlconform identify --target URL [flags]
                           probe a limiter and name the profiles that explain its answers
  rlconform bench [flags]  drive load at a limiter: throughput, latency percentiles, errors,
                           and every decision checked against the limit (default: the reference)
  rlconform bench --from-k6 FILE... --policy N/W
                           judge the load k6 drove, from its JSON output (one file per generator)
  rlconform audit --format F --user FIELD --policy N/W FILE...
                           judge a limiter by its gateways' access logs (nginx, envoy, haproxy,
                           caddy, k6, jsonl, csv): exact, wrong, or undecided
  rlconform serve [flags]  serve a built-in limiter over protocol v1
  rlconform list [--json] [--profile P] [LEVEL|ID-PREFIX]...
                           spec ids, their level, what they need, what they prove
                           (for profile P: its rules, and what it does not grade)
  rlconform version        the version and revision of this build

run 'rlconform run -h', 'rlconform bench -h', 'rlconform audit -h' or 'rlconform serve -h' for the flags.
exit codes: 0 conformant, 1 not conformant (a spec failed: the limiter is
wrong), 2 undecided or could not run (a fault, an inconclusive spec, nothing
graded, bad flags), 130 interrupted; bench also exits 3 when slower than its
--compare baseline past --max-regression.
`

// Main runs the command with args (without the program name) and returns
// the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	// Nothing the command prints or writes shows a secret it was given.
	secrets := commandSecrets(args)
	stdout, stderr = secrets.Writer(stdout), secrets.Writer(stderr)
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitCannotRun
	}
	switch args[0] {
	case "run":
		return run(args[1:], stdout, stderr, secrets)
	case "serve":
		return serve(args[1:], stdout, stderr, secrets)
	case "identify":
		return identify(args[1:], stdout, stderr, secrets)
	case "bench":
		return runBench(args[1:], stdout, stderr, secrets)
	case "audit":
		return runAudit(args[1:], stdout, stderr)
	case "list":
		return listSpecs(args[1:], stdout, stderr)
	case "version":
		fmt.Fprint(stdout, version.Of(suite.Specs()).Long())
		return ExitConformant
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return ExitConformant
	}
	fmt.Fprintf(stderr, "rlconform: unknown command %q\n\n%s", args[0], usage)
	return ExitCannotRun
}

func listSpecs(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rlconform list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the catalogue as JSON")
	profile := fs.String("profile", model.ProfileSlidingLog, "list the rules as `PROFILE` states them, and which specs do not grade it")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: rlconform list [--json] [--profile PROFILE] [LEVEL | ID-PREFIX]...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return parseFailed(stderr, "list", err, false)
	}
	specs, err := suite.ProfileSpecs(*profile)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform list: %v\n", err)
		return ExitCannotRun
	}
	if fs.NArg() > 0 {
		var picked []suite.SpecInfo
		for _, s := range specs {
			for _, sel := range fs.Args() {
				if string(s.Level) == sel || sel == "all" || strings.HasPrefix(s.ID, sel) {
					picked = append(picked, s)
					break
				}
			}
		}
		if len(picked) == 0 {
			fmt.Fprintf(stderr, "rlconform list: no spec matches %s (give a level, or the start of spec ids)\n", strings.Join(fs.Args(), " "))
			return ExitCannotRun
		}
		specs = picked
	}
	if *asJSON {
		type entry struct {
			ID                  string   `json:"id"`
			Level               string   `json:"level"`
			Rule                string   `json:"rule"`
			Needs               []string `json:"needs"`
			NotGraded           string   `json:"not_graded,omitempty"`
			NotGradedInRealTime string   `json:"not_graded_in_real_time,omitempty"`
		}
		out := []entry{}
		for _, s := range specs {
			out = append(out, entry{s.ID, string(s.Level), s.Rule, append([]string{}, s.Needs...), s.NotGraded, s.NotGradedInRealTime})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "rlconform list: %v\n", err)
			return ExitCannotRun
		}
		return ExitConformant
	}
	profileSet := false
	fs.Visit(func(f *flag.Flag) { profileSet = profileSet || f.Name == "profile" })
	if profileSet {
		describeProfile(stdout, *profile)
	}
	table := tabwriter.NewWriter(stdout, 0, 0, 1, ' ', 0)
	defer table.Flush()
	for _, s := range specs {
		needs := strings.Join(s.Needs, ",")
		if needs == "" {
			needs = "-"
		}
		rule := s.Rule
		switch {
		case s.NotGraded != "":
			rule = "NOT GRADED: " + s.NotGraded
		case s.NotGradedInRealTime != "":
			rule += " (" + s.NotGradedInRealTime + ")"
		}
		fmt.Fprintf(table, "%s\t%s\t%s\t%s\n", s.ID, s.Level, needs, rule)
	}
	return ExitConformant
}

// Version is the version of this rlconform in one line, as every report,
// identification, bench and audit carries it: the module's version, the
// commit, and the catalogue's version (internal/version).
func Version() string { return version.Of(suite.Specs()).String() }

// reportMeta is the version a report carries: in a line, and the
// catalogue's alone.
func reportMeta() report.Meta {
	v := version.Of(suite.Specs())
	return report.Meta{Version: v.String(), Catalogue: v.Catalogue}
}

// parseFailed is the exit of a subcommand whose flags did not parse: 0 for
// -h (the usage was printed), else 2, saying err after the command's name
// when say is set (the flag package says its own errors).
func parseFailed(stderr io.Writer, cmd string, err error, say bool) int {
	if errors.Is(err, flag.ErrHelp) {
		return ExitConformant
	}
	if say {
		fmt.Fprintf(stderr, "rlconform %s: %v\n", cmd, err)
	}
	return ExitCannotRun
}

// list is a flag of comma-separated, repeatable values.
type list = commalist.List
