package cli

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pythonService is the command that serves examples/python/server.py, or
// a skip when there is no python3.
func pythonService(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 on PATH")
	}
	path, err := filepath.Abs("../examples/python/server.py")
	require.NoError(t, err)
	return "python3 " + path
}

var startedAt = regexp.MustCompile(`started \d+ instance\(s\) of .* at \[([^\]]*)\]`)

// stopped asserts that nothing answers any more at the URLs the run said
// it started.
func stopped(t *testing.T, stderr string) {
	t.Helper()
	m := startedAt.FindStringSubmatch(stderr)
	require.NotNil(t, m, "the run says where it started the service:\n%s", stderr)
	for _, url := range strings.Fields(m[1]) {
		conn, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), time.Second)
		if err == nil {
			conn.Close()
			t.Errorf("%s still answers after the run: the instance was not stopped", url)
		}
	}
}

// TestExecGradesAPythonService: with --exec and two instances, a Python
// service on Redis is started by the run on a Redis of its own, graded on
// everything the protocol allows, robust/store-outage and the shared-store
// specs included, and stopped at the end.
func TestExecGradesAPythonService(t *testing.T) {
	testtier.SkipShort(t, "starts a Python service and grades it")
	t.Parallel()
	code, out, errOut := rlconform(t, "run", "--exec", pythonService(t), "--instances", "2")
	assert.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	for _, id := range []string{"robust/store-outage", "robust/key-hygiene", "strict/shared-store", "strict/shared-store-concurrent"} {
		assert.Regexp(t, `pass\s+`+regexp.QuoteMeta(id)+`\s`, out)
	}
	// Only what no service over HTTP can have graded is skipped.
	assert.Equal(t, 3, strings.Count(out, "  skip "), out) // the example takes weighted requests too
	assert.Regexp(t, `skip\s+robust/context-cancel\s.*in-process`, out)
	assert.Regexp(t, `skip\s+http/retry-after\s.*only an endpoint`, out)
	stopped(t, errOut)
}

// TestExecFailsAServiceThatDropsTheConnection: a Python service that drops
// the connection when Redis dies, instead of answering 503, was CONFORMANT
// when robust/store-outage could not be graded over HTTP.
func TestExecFailsAServiceThatDropsTheConnection(t *testing.T) {
	testtier.SkipShort(t, "starts a Python service and grades it")
	t.Parallel()
	src, err := os.ReadFile(strings.TrimPrefix(pythonService(t), "python3 "))
	require.NoError(t, err)
	answer := `            return self.answer(503, {"error": str(e)})`
	require.Contains(t, string(src), answer)
	dropping := filepath.Join(t.TempDir(), "dropping.py")
	require.NoError(t, os.WriteFile(dropping, []byte(strings.Replace(string(src), answer,
		"            self.close_connection = True\n            self.connection.shutdown(socket.SHUT_RDWR)\n            return", 1)), 0o644))
	code, out, errOut := rlconform(t, "run", "--exec", "python3 "+dropping, "--id", "core/allow-within-limit,robust/store-outage")
	assert.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)
	assert.Regexp(t, `fail\s+robust/store-outage`, out)
	assert.Contains(t, out, "wraps neither contract.ErrStore")
	stopped(t, errOut)
}

// TestExecCannotStart: a command that exits at once or never answers stops
// the run with exit 2 and what it printed; flags that do not go together
// are refused.
func TestExecCannotStart(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"exits", []string{"--exec", "echo no such limiter >&2; exit 3"}, []string{"exited (exit status 3) before answering", "    no such limiter"}},
		{"never answers", []string{"--exec", "echo listening nowhere; sleep 60", "--exec-ready", "500ms"},
			[]string{"no answer to GET /rlc/v1/capabilities within 500ms", "    listening nowhere"}},
		{"with --target", []string{"--exec", "true", "--target", "http://127.0.0.1:1"}, []string{"does not go with --target"}},
		{"instances alone", []string{"--instances", "2"}, []string{"--instances and --exec-ready go with --exec"}},
		{"no instances", []string{"--exec", "true", "--instances", "0"}, []string{"--instances must be at least 1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			code, out, errOut := rlconform(t, append([]string{"run"}, tt.args...)...)
			assert.Equal(t, ExitCannotRun, code, "%s\n%s", out, errOut)
			for _, w := range tt.want {
				assert.Contains(t, errOut, w)
			}
			assert.Less(t, time.Since(start), 20*time.Second, "sleep 60 must be stopped, not waited for")
		})
	}
}

// TestExecStopsTheServiceOnCtrlC interrupts a run of the command (this
// test binary as rlconform: see asCommand) while it grades: it exits 130,
// and the service it started is gone.
func TestExecStopsTheServiceOnCtrlC(t *testing.T) {
	testtier.SkipShort(t, "starts a Python service and interrupts its grading")
	t.Parallel()
	service := pythonService(t)
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self, "run", "--exec", service, "--instances", "2", "--id", "strict/config-range")
	cmd.Env = append(os.Environ(), asCommand+"=1")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var seen bytes.Buffer
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		seen.WriteString(lines.Text() + "\n")
		if strings.Contains(lines.Text(), "rlconform: grading") {
			break
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	rest, _ := io.ReadAll(stderr)
	seen.Write(rest)
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, seen.String())
	assert.Equal(t, ExitInterrupted, exit.ExitCode(), seen.String())
	stopped(t, seen.String())
}

// TestExecBenchesAndIdentifies: bench and identify start the service as
// run does: benched on its own clock it is exact; identified, it is the
// sliding log.
func TestExecBenchesAndIdentifies(t *testing.T) {
	testtier.SkipShort(t, "starts a Python service and grades it")
	t.Parallel()
	service := pythonService(t)
	code, out, errOut := rlconform(t, "bench", "--exec", "CLOCK=off "+service, "--instances", "2",
		"--limit", "5", "--users", "3", "--duration", "1s", "--progress", "never")
	assert.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "exactness   exact")
	stopped(t, errOut)

	code, out, errOut = rlconform(t, "identify", "--exec", service)
	assert.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "fits      sliding-log")
	stopped(t, errOut)
}

// TestExecKeyPrefixIsLongAndRandom: the key prefix --exec gives the
// service holds 8 random bytes, so that runs sharing a Redis never share
// keys.
func TestExecKeyPrefixIsLongAndRandom(t *testing.T) {
	code, out, errOut := rlconform(t, "run", "--exec", `echo "prefix=$RLCONFORM_KEY_PREFIX" >&2; exit 3`)
	require.Equal(t, ExitCannotRun, code, "%s\n%s", out, errOut)
	assert.Regexp(t, `prefix=rlc-exec-[0-9a-f]{16}:\n`, errOut)
}
