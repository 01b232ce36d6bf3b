package cli

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/mutants"
)

// A reproduce line keeps what says what is graded and how, as a shell
// reads it, and leaves out where reports go, which specs ran and the
// seed (it gives the run's and the spec's).
func TestRerunArgs(t *testing.T) {
	f := &runFlags{}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Var(&f.targets, "target", "")
	fs.StringVar(&f.json, "json", "", "")
	fs.StringVar(&f.html, "html", "", "")
	fs.Uint64Var(&f.seed, "seed", 0, "")
	fs.Var(&f.ids, "id", "")
	fs.BoolVar(&f.failOnSkip, "fail-on-skip", false, "")
	f.execFlags.register(fs)
	args := []string{"--target=http://h:1/?k=v", "--json", "r.json", "-seed", "5", "--fail-on-skip", "--id", "core/", "--exec", "node server.js", "--html=r.html", "--instances", "2"}
	require.NoError(t, fs.Parse(args))
	f.rerun = rerunArgs(fs, args)
	assert.Equal(t, "rlconform run '--target=http://h:1/?k=v' --fail-on-skip --exec 'node server.js' --instances 2 --seed 9", f.reproduce(9))
	assert.Equal(t, `'it'\''s'`, shellQuote("it's"))
	assert.Equal(t, "''", shellQuote(""))
}

// Only one report may go to stdout, the HTML one too.
func TestHTMLOnStdoutAlone(t *testing.T) {
	code, _, errOut := rlconform(t, "run", "--html", "-", "--json", "-")
	assert.Equal(t, ExitCannotRun, code)
	assert.Contains(t, errOut, "only one of --junit, --json, --summary and --html may write to stdout")
	code, _, errOut = rlconform(t, "bench", "--html", "-", "--json", "-")
	assert.Equal(t, ExitCannotRun, code)
	assert.Contains(t, errOut, "only one of --json and --html may write to stdout")
}

// bench --html writes the page of a bench that overshoots: its verdict,
// its chart embedded, and the worst window's calls as a chart, a mark
// each.
func TestBenchWritesAnHTMLPage(t *testing.T) {
	page := filepath.Join(t.TempDir(), "bench.html")
	code, out, errOut := 0, "", ""
	for attempt := 0; attempt < 5 && code != ExitNotConformant; attempt++ {
		lim, err := mutants.NonAtomic(mutants.Store{Redis: store.Client, Prefix: fmt.Sprintf("rlc-bench-html:%d:", time.Now().UnixNano()),
			MaxRequests: 5, Window: 200 * time.Millisecond})
		require.NoError(t, err)
		srv, err := adapters.NewServer(lim, nil)
		require.NoError(t, err)
		code, out, errOut = rlconform(t, append(short, "--target", srv.URL, "--users", "1", "--html", page)...)
		srv.Close()
	}
	require.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)
	raw, err := os.ReadFile(page)
	require.NoError(t, err)
	html := string(raw)
	assert.Contains(t, html, "NOT EXACT under load")
	assert.Contains(t, html, `<img class="bench-chart" src="data:image/svg&#43;xml;base64,`)
	assert.Contains(t, html, "Overshoot: the worst window")
	allowed := regexp.MustCompile(`worst window: user "[^"]+" had (\d+) allowed`).FindStringSubmatch(out)
	require.Len(t, allowed, 2, out)
	assert.Equal(t, allowed[1], fmt.Sprint(strings.Count(html, `<g class="mark allowed"`)), "a mark per call of the worst window")
}
