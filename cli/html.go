package cli

import (
	"flag"
	"io"
	"strconv"
	"strings"

	"github.com/rlconform/rlconform/bench"
	"github.com/rlconform/rlconform/internal/redact"
	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/report/htmlreport"
	"github.com/rlconform/rlconform/result"
)

// htmlUsage is the help of --html.
const htmlUsage = "write an HTML report to `FILE` (- for stdout): one self-contained page to open in a browser, with the verdict per level, every spec, and each failing or undecided spec's timeline as a chart"

// notRerun are the flags a reproduce line leaves out: where reports go,
// which specs run (the line names one), and the seed (it gives the run's).
var notRerun = map[string]bool{"junit": true, "json": true, "summary": true, "html": true, "report-dir": true,
	"id": true, "label": true, "expect-fail": true, "seed": true, "max-duration": true}

// rerunArgs are the arguments of args that say what is graded and how,
// as a shell reads them: those notRerun names are left out.
func rerunArgs(fs *flag.FlagSet, args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if a == "--" || !strings.HasPrefix(a, "-") {
			break
		}
		fl := fs.Lookup(name)
		takesValue := fl != nil && !inline && !isBool(fl)
		keep := fl != nil && !notRerun[name]
		if keep {
			out = append(out, shellQuote(a))
		}
		if takesValue && i+1 < len(args) {
			i++
			if keep {
				out = append(out, shellQuote(args[i]))
			}
		}
	}
	return out
}

func isBool(fl *flag.Flag) bool {
	b, ok := fl.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// shellQuote is s as one word of a POSIX shell: as is when it is plain,
// else in single quotes.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,@%+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// reproduce is the command that grades the same target again with seed:
// the report adds a spec's --id.
func (f *runFlags) reproduce(seed uint64) string {
	return strings.Join(append(append([]string{"rlconform", "run"}, f.rerun...), "--seed", strconv.FormatUint(seed, 10)), " ")
}

// writeHTML is the --html report of a run, with the line that
// reproduces each spec.
func (f *runFlags) writeHTML(w io.Writer, rep *result.Report, meta report.Meta) error {
	meta.Reproduce = f.reproduce(rep.Seed)
	return htmlreport.Run(w, rep, meta)
}

// benchHTML writes the --html page of a bench. Its chart is embedded as
// a data: URL, which the page's redaction cannot read: the chart is
// redacted first.
func benchHTML(res *bench.Result, secrets *redact.Secrets) func(io.Writer) error {
	return func(w io.Writer) error {
		page, err := htmlreport.BenchPageOf(res)
		if err != nil {
			return err
		}
		for i := range page.Charts {
			page.Charts[i].SVG = []byte(secrets.Text(string(page.Charts[i].SVG)))
		}
		return htmlreport.Bench(w, page)
	}
}
