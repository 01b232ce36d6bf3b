// Package cli is the rlconform command line: flags in, a suite run out.
// It lives outside package main so that tests reach all of it.
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

	"github.com/rlconform/rlconform/suite"
)

// Exit codes of the command.
const (
	ExitConformant    = 0
	ExitNotConformant = 1
	ExitCannotRun     = 2
)

const usage = `rlconform grades rate limiters against the exact sliding-window contract.

usage:
  rlconform run  [flags]   grade a limiter (default: the reference, on a Redis found or started)
  rlconform list           every spec id, its level, what it needs, what it proves

run 'rlconform run -h' for the flags.
`

// Main runs the command with args (without the program name) and returns
// the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitCannotRun
	}
	switch args[0] {
	case "run":
		return run(args[1:], stdout, stderr)
	case "list":
		return list(stdout)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return ExitConformant
	}
	fmt.Fprintf(stderr, "rlconform: unknown command %q\n\n%s", args[0], usage)
	return ExitCannotRun
}

func list(stdout io.Writer) int {
	for _, s := range suite.Specs() {
		needs := strings.Join(s.Needs, ",")
		if needs == "" {
			needs = "-"
		}
		fmt.Fprintf(stdout, "%-34s %-7s %-40s %s\n", s.ID, s.Level, needs, s.Rule)
	}
	return ExitConformant
}

// idList is a flag of comma-separated, repeatable spec ids.
type idList []string

func (l *idList) String() string { return strings.Join(*l, ",") }
func (l *idList) Set(v string) error {
	for _, id := range strings.Split(v, ",") {
		if id = strings.TrimSpace(id); id != "" {
			*l = append(*l, id)
		}
	}
	return nil
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rlconform run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	level := fs.String("level", "all", "highest level to grade: core, strict, robust or all")
	seed := fs.Uint64("seed", 0, "seed for the randomised specs (0: pick one; the report shows it)")
	var ids idList
	fs.Var(&ids, "id", "only these spec ids, or prefixes ending in / (comma-separated, repeatable)")
	if err := fs.Parse(args); err != nil {
		return ExitCannotRun
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "rlconform run: unexpected argument %q\n", fs.Arg(0))
		return ExitCannotRun
	}
	lvl, err := suite.ParseLevel(*level)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform run: %v\n", err)
		return ExitCannotRun
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	cfg := suite.Config{Level: lvl, Seed: *seed, IDs: ids,
		Progress: func(r suite.Result) { fmt.Fprintf(stderr, "  %-13s %s\n", r.Status, r.ID) }}
	rep, err := suite.Check(ctx, cfg, suite.ReferenceTarget())
	if err != nil {
		fmt.Fprintf(stderr, "rlconform: %v\n", err)
		return ExitCannotRun
	}
	for _, r := range rep.Results {
		if r.Status == suite.Failed || r.Status == suite.Inconclusive {
			fmt.Fprintf(stdout, "\n%s\n", r.Message)
		}
	}
	fmt.Fprintf(stdout, "\n%s", rep.Table())
	if err := rep.Err(); err != nil {
		var lines []string
		for _, e := range unwrapAll(err) {
			lines = append(lines, e.Error())
		}
		fmt.Fprintf(stdout, "NOT CONFORMANT: %s\n", strings.Join(lines, "; "))
		return ExitNotConformant
	}
	fmt.Fprintln(stdout, "CONFORMANT")
	return ExitConformant
}

func unwrapAll(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{errors.Unwrap(err)}
}
