// Package cli is the rlconform command line: flags in, a suite run out.
// It lives outside package main so that tests reach all of it.
package cli

import (
	"fmt"
	"io"
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
  rlconform run   [flags]  grade a limiter: the reference on a Redis found or started,
                           or a protocol v1 server with --target URL
  rlconform serve [flags]  serve a built-in limiter over protocol v1
  rlconform list           every spec id, its level, what it needs, what it proves

run 'rlconform run -h' or 'rlconform serve -h' for the flags.
exit codes: 0 conformant, 1 not conformant, 2 could not run.
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
	case "serve":
		return serve(args[1:], stdout, stderr)
	case "list":
		return listSpecs(stdout)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return ExitConformant
	}
	fmt.Fprintf(stderr, "rlconform: unknown command %q\n\n%s", args[0], usage)
	return ExitCannotRun
}

func listSpecs(stdout io.Writer) int {
	for _, s := range suite.Specs() {
		needs := strings.Join(s.Needs, ",")
		if needs == "" {
			needs = "-"
		}
		fmt.Fprintf(stdout, "%-34s %-7s %-34s %s\n", s.ID, s.Level, needs, s.Rule)
	}
	return ExitConformant
}

// list is a flag of comma-separated, repeatable values.
type list []string

func (l *list) String() string { return strings.Join(*l, ",") }

// Set adds the comma-separated values of v.
func (l *list) Set(v string) error {
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			*l = append(*l, x)
		}
	}
	return nil
}
