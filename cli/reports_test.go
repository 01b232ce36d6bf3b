package cli

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/internal/testaddr"
)

// TestReportsOnEveryExit: whatever the exit code (0, 1, 2, 130), --junit,
// --json and --summary are valid reports that say what happened; a run
// that could not grade has a JUnit <error> and a JSON "error" saying why.
func TestReportsOnEveryExit(t *testing.T) {
	broken := serveFixedWindow(t)

	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	for _, tt := range []struct {
		name      string
		args      []string
		code      int
		outcome   string
		error     string // in the JSON "error" and the JUnit <error>; "" for none
		interrupt bool
	}{
		{"conformant", []string{"--id", "core/allow-within-limit"}, ExitConformant, "conformant", "", false},
		{"not conformant", []string{"--target", broken.URL, "--id", "strict/boundary-burst-epoch"}, ExitNotConformant, "not-conformant", "", false},
		{"unreachable", []string{"--target", "http://" + testaddr.Refused(t)}, ExitCannotRun, "undecided", "refused", false},
		{"exec fails", []string{"--exec", "echo broken >&2; exit 3"}, ExitCannotRun, "undecided", "exited (exit status 3)", false},
		{"interrupted", []string{"--exec", "touch " + started + "; sleep 60", "--exec-ready", "1m"}, ExitInterrupted, "undecided", "interrupted", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			junit, js, md := filepath.Join(dir, tt.name+".xml"), filepath.Join(dir, tt.name+".json"), filepath.Join(dir, tt.name+".md")
			if tt.interrupt {
				go func() {
					for range 200 {
						if _, err := os.Stat(started); err == nil {
							syscall.Kill(os.Getpid(), syscall.SIGINT)
							return
						}
						time.Sleep(50 * time.Millisecond)
					}
				}()
			}
			code, out, errOut := rlconform(t, append([]string{"run", "--junit", junit, "--json", js, "--summary", md}, tt.args...)...)
			require.Equal(t, tt.code, code, "%s\n%s", out, errOut)

			var report struct {
				Outcome string `json:"outcome"`
				Error   string `json:"error"`
			}
			raw, err := os.ReadFile(js)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(raw, &report), "the JSON report is valid:\n%s", raw)
			assert.Equal(t, tt.outcome, report.Outcome)

			raw, err = os.ReadFile(junit)
			require.NoError(t, err)
			var suites struct {
				Errors int `xml:"errors,attr"`
				Cases  []struct {
					Error *struct {
						Message string `xml:"message,attr"`
					} `xml:"error"`
				} `xml:"testsuite>testcase"`
			}
			require.NoError(t, xml.Unmarshal(raw, &suites), "the JUnit report is valid:\n%s", raw)
			require.NotEmpty(t, suites.Cases, "the JUnit report has a testcase:\n%s", raw)

			summary, err := os.ReadFile(md)
			require.NoError(t, err)
			assert.Contains(t, string(summary), "## rlconform:")

			if tt.error == "" {
				assert.Empty(t, report.Error)
				assert.Zero(t, suites.Errors)
				return
			}
			assert.Contains(t, report.Error, tt.error)
			assert.Equal(t, 1, suites.Errors, "%s", raw)
			last := suites.Cases[len(suites.Cases)-1]
			require.NotNil(t, last.Error, "%s", raw)
			assert.Contains(t, last.Error.Message, tt.error)
			assert.True(t, strings.Contains(string(summary), tt.error), "the summary says why:\n%s", summary)
		})
	}
}

// A level that graded nothing reads alike in every report: the text's
// level line and verdict, the JSON verdict and levels_not_graded, the
// Markdown heading and verdict, JUnit's verdict property; the exit code
// is that of what was graded.
func TestLevelsThatGradedNothingInEveryReport(t *testing.T) {
	t.Parallel() // its own server: nothing shared
	dir := t.TempDir()
	junit, js, md := filepath.Join(dir, "r.xml"), filepath.Join(dir, "r.json"), filepath.Join(dir, "r.md")
	code, out, errOut := rlconform(t, "run", "--target", serveModel(t, true), "--level", "all", "--label", "needs-endpoint,needs-in-process,core",
		"--junit", junit, "--json", js, "--summary", md)
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	verdict := "CONFORMANT on the specs selected (labels needs-endpoint, needs-in-process, core) (nothing graded at strict, robust):"
	assert.Contains(t, out, verdict)
	assert.Contains(t, out, "strict: nothing graded (0 passed, 0 failed, 2 skipped, 0 undecided)")

	var report struct {
		Verdict   string   `json:"verdict"`
		NotGraded []string `json:"levels_not_graded"`
	}
	data, err := os.ReadFile(js)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &report))
	assert.Contains(t, report.Verdict, verdict)
	assert.Equal(t, []string{"strict", "robust"}, report.NotGraded)

	data, err = os.ReadFile(md)
	require.NoError(t, err)
	assert.Contains(t, string(data), "at level `all` (nothing graded at `strict`, `robust`)\n")
	assert.Contains(t, string(data), verdict)

	data, err = os.ReadFile(junit)
	require.NoError(t, err)
	assert.Contains(t, string(data), `name="verdict" value="`+verdict)
}
