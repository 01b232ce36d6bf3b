package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/audit/accesslog"
)

// nginxLog writes an nginx log (accesslog.NginxFormat) of one user's
// request every 40ms for 5s, each taking 2ms, decided at its end by
// decide, and returns its path.
func nginxLog(t *testing.T, decide func(at time.Time) bool) string {
	t.Helper()
	var b strings.Builder
	at := time.Date(2024, 11, 27, 16, 32, 0, 500_000_000, time.UTC)
	for range 125 {
		at = at.Add(40 * time.Millisecond)
		status := 429
		if decide(at) {
			status = 200
		}
		fmt.Fprintf(&b, "10.0.0.1 [%s] \"GET /api HTTP/1.1\" %d 12 %d.%03d 0.002 \"alice\"\n", at.Format("02/Jan/2006:15:04:05 -0700"), status, at.Unix(), at.Nanosecond()/1e6)
	}
	path := filepath.Join(t.TempDir(), "access.log")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// exactLog is a sliding log of 5 per 1s; fixedLog a fixed window of the
// epoch of 5 per 1s.
func exactLog(t *testing.T) string {
	var log []time.Time
	return nginxLog(t, func(at time.Time) bool {
		for len(log) > 0 && !log[0].After(at.Add(-time.Second)) {
			log = log[1:]
		}
		if len(log) < 5 {
			log = append(log, at)
			return true
		}
		return false
	})
}

func fixedLog(t *testing.T) string {
	var window int64
	count := 0
	return nginxLog(t, func(at time.Time) bool {
		if at.Unix() != window {
			window, count = at.Unix(), 0
		}
		count++
		return count <= 5
	})
}

func auditArgs(files ...string) []string {
	return append([]string{"audit", "--format", "nginx", "--log-format", accesslog.NginxFormat, "--user", "$http_x_user", "--policy", "5/1s"}, files...)
}

func TestAuditExplainsAnExactLimiter(t *testing.T) {
	js := filepath.Join(t.TempDir(), "audit.json")
	// Flags may follow the files.
	code, out, errOut := rlconform(t, append(auditArgs(exactLog(t)), "--json", js)...)
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "audit       nginx log: ")
	assert.Contains(t, out, "judged      125 requests of 1 user")
	assert.Contains(t, out, "verdict     EXPLAINED (exit 0)")
	assert.Contains(t, out, "settle      1s, adaptive: ", "by default the settling time adapts")
	var res map[string]any
	b, err := os.ReadFile(js)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &res))
	assert.Equal(t, "explained", res["verdict"].(map[string]any)["outcome"])
	assert.Equal(t, true, res["judged"].(map[string]any)["settle_adaptive"])

	// A settling time given is kept as it is.
	code, out, errOut = rlconform(t, append(auditArgs(exactLog(t)), "--settle", "2s")...)
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "settle      2s, as given")
}

func TestAuditFailsAFixedWindow(t *testing.T) {
	log := fixedLog(t)
	code, out, errOut := rlconform(t, auditArgs(log)...)
	require.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "verdict     WRONG (exit 1)")
	assert.Contains(t, out, `worst window: user "alice" had 10 allowed`)
	assert.Contains(t, out, log+":")
	assert.Contains(t, out, `" 200 12 `, "the evidence shows the log's lines")

	// As the fixed window it is, it is explained; as a weighted counter
	// on the epoch, too much.
	code, out, _ = rlconform(t, append(auditArgs(log), "--profile", "fixed-window:align=epoch")...)
	assert.Equal(t, ExitConformant, code, out)
}

// A log without $msec (whole seconds) against a window of a second cannot
// be told: undecided (exit 2), saying why.
func TestAuditUndecidedWhenIntervalsAreTooWide(t *testing.T) {
	code, out, errOut := rlconform(t, "audit", "--format", "nginx", "--log-format", `$remote_addr [$time_local] "$request" $status $body_bytes_sent $msec_x $request_time "$http_x_user"`,
		"--user", "http_x_user", "--policy", "5/1s", exactLog(t))
	require.Equal(t, ExitCannotRun, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "verdict     UNDECIDED (exit 2): the intervals are too wide to tell")
	assert.Contains(t, out, "$time_local has whole seconds")
}

// The k6 format reads what bench --from-k6 reads: the two generators of
// the exact fixtures are explained, the non-atomic limiter's fail.
func TestAuditReadsK6(t *testing.T) {
	code, out, errOut := rlconform(t, "audit", "--format", "k6", "--policy", "5/100ms", k6Fixture("exact-a.json.gz"), k6Fixture("exact-b.json.gz"))
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "judged      400 requests of 3 users")
	code, out, errOut = rlconform(t, "audit", "--format", "k6", "--policy", "5/100ms", k6Fixture("nonatomic-a.json.gz"), k6Fixture("nonatomic-b.json.gz"))
	require.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "OVERSHOOT: ")
}

func TestAuditRefusesBadFlags(t *testing.T) {
	log := exactLog(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"audit", "--policy", "5/1s", log}, "--format is needed"},
		{[]string{"audit", "--format", "nginx", log}, "--policy N/W is needed"},
		{[]string{"audit", "--format", "nginx", "--policy", "5/1s"}, "no log to read"},
		{[]string{"audit", "--format", "nginx", "--policy", "5/1s", log}, "--user is needed with --format nginx"},
		{[]string{"audit", "--format", "apache", "--user", "u", "--policy", "5/1s", log}, `format "apache"`},
		{[]string{"audit", "--format", "nginx", "--user", "u", "--policy", "5/1s", log}, "give the log_format string"},
		{append(auditArgs(log), "--clock-skew", "2h"), "--clock-skew 2h0m0s: want 0 to 1h0m0s"},
		{append(auditArgs(log), "--settle", "0"), "--settle 0s: want more than 0, at most 1h"},
		{append(auditArgs(log), "--settle", "2h"), "--settle 2h0m0s: want more than 0, at most 1h"},
		{append(auditArgs(log), "--policy", "0/1s"), "--policy"},
		{append(auditArgs(log), "--profile", "nope"), "--profile"},
		{append(auditArgs(log), "--limited-status", "200"), "--limited-status 200"},
		{append(auditArgs(log), "--tz", "Mars/Olympus"), "--tz"},
		{append(auditArgs(log), "-", "-"), "standard input (-) may be read once"},
		{auditArgs(filepath.Join(t.TempDir(), "none.log")), "no such file"},
	} {
		code, out, errOut := rlconform(t, tc.args...)
		assert.Equal(t, ExitCannotRun, code, "%v\n%s", tc.args, out)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}

// --html writes the audit as a page: the verdict, and the worst window's
// requests as a timeline with their log lines; a path that cannot be
// written is refused before the logs are read.
func TestAuditHTML(t *testing.T) {
	log := fixedLog(t)
	page := filepath.Join(t.TempDir(), "audit.html")
	code, out, errOut := rlconform(t, append(auditArgs(log), "--html", page)...)
	require.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	html := string(b)
	assert.Contains(t, html, "WRONG: ")
	assert.Contains(t, html, "Overshoot: more admissions than the limit inside one window")
	assert.Contains(t, html, "<svg", "the evidence is drawn")
	assert.Contains(t, html, filepath.Base(log)+":", "the log lines are named")
	assert.NotContains(t, html, "<script", "no script")

	code, _, errOut = rlconform(t, append(auditArgs(log), "--html", filepath.Join(t.TempDir(), "no", "such", "dir", "a.html"))...)
	assert.Equal(t, ExitCannotRun, code)
	assert.Contains(t, errOut, "--html")
}
