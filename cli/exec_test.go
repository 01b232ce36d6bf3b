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

var startedAt = regexp.MustCompile(`started \d+ (?:instance\(s\) of .*|more lane\(s\) of \d+ instance\(s\) each) at \[([^\]]*)\]`)

// stopped asserts that nothing answers any more at the URLs the run said
// it started, its lanes' too.
func stopped(t *testing.T, stderr string) {
	t.Helper()
	all := startedAt.FindAllStringSubmatch(stderr, -1)
	require.NotEmpty(t, all, "the run says where it started the service:\n%s", stderr)
	var urls []string
	for _, m := range all {
		urls = append(urls, strings.Fields(m[1])...)
	}
	for _, url := range urls {
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
		{"exits", []string{"--exec", "echo no such limiter >&2; exit 3"}, []string{"--exec: instance 1 (", "exited (exit status 3) before answering", "    no such limiter"}},
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

// servedReference is the command that serves the reference over protocol
// v1 on real time, as rlconform serve -clock=false does under --exec (the
// test binary as the command), writing "LANE INSTANCE PREFIX" to the file
// seen first.
func servedReference(t *testing.T, seen string) string {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return `echo "$RLCONFORM_LANE $RLCONFORM_INSTANCE $RLCONFORM_KEY_PREFIX" >>` + seen + `; ` + asCommand + `=1 REDIS_URL="$RLCONFORM_REDIS_URL" exec ` + exe +
		` serve -clock=false --addr "127.0.0.1:$PORT" --prefix "$RLCONFORM_KEY_PREFIX"`
}

// TestExecStartsALaneOfProcessesPerSpecSideBySide: --exec of a service on
// real time that takes Configure (rlconform serve -clock=false) starts,
// besides its --instances, one set of them per further lane (4 without
// --parallel), each set under a key prefix of its own that no other
// starts with, grades every spec the protocol allows (side by side, or
// alone: robust/store-outage, key hygiene, the shared store, the aimed
// bursts) and passes them, and stops them all; --parallel 1 starts none.
func TestExecStartsALaneOfProcessesPerSpecSideBySide(t *testing.T) {
	testtier.SkipShort(t, "starts 8 servers of the reference and grades them in real time")
	t.Parallel()
	seen := filepath.Join(t.TempDir(), "lanes")
	code, out, errOut := rlconform(t, "run", "--exec", servedReference(t, seen), "--instances", "2")
	assert.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, errOut, "started 3 more lane(s) of 2 instance(s) each")
	assert.Contains(t, errOut, "up to 4 side by side after the first")
	assert.Contains(t, out, "on a lane of instances of its own that no other spec configures")
	for _, id := range []string{"robust/store-outage", "robust/key-hygiene", "strict/shared-store", "strict/boundary-burst-epoch", "core/reconfigure"} {
		assert.Regexp(t, `pass\s+`+regexp.QuoteMeta(id)+`\s`, out)
	}
	stopped(t, errOut)
	b, err := os.ReadFile(seen)
	require.NoError(t, err)
	prefixes := map[string]string{} // lane → its prefix
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		require.Len(t, f, 3, line)
		if p, ok := prefixes[f[0]]; ok {
			assert.Equal(t, p, f[2], "the instances of lane %s share its prefix", f[0])
		}
		prefixes[f[0]] = f[2]
	}
	assert.Len(t, prefixes, 4, "lanes:\n%s", b)
	for lane, p := range prefixes {
		for other, q := range prefixes {
			if lane != other {
				assert.False(t, strings.HasPrefix(q, p), "lane %s's prefix %q starts lane %s's %q", lane, p, other, q)
			}
		}
	}

	code, out, errOut = rlconform(t, "run", "--exec", servedReference(t, seen), "--level", "core", "--parallel", "1")
	assert.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.NotContains(t, errOut, "more lane(s)")
	assert.NotContains(t, out, "side by side")
	stopped(t, errOut)
}

// TestExecGoesOnWithTheLanesThatStart: a service that cannot be started
// twice (a lock file of its own) is graded by its one lane, and the
// report's notes say which lanes did not start and why.
func TestExecGoesOnWithTheLanesThatStart(t *testing.T) {
	testtier.SkipShort(t, "starts the reference and grades it in real time")
	t.Parallel()
	dir := t.TempDir()
	lock := filepath.Join(dir, "lock")
	once := `if [ -e ` + lock + ` ]; then echo "already running" >&2; exit 3; fi; touch ` + lock + `; ` + servedReference(t, filepath.Join(dir, "lanes"))
	code, out, errOut := rlconform(t, "run", "--exec", once, "--level", "core")
	assert.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Regexp(t, `(?s)note: --exec: lane 1, for specs side by side, did not start \(.*already running.*\): the specs went on with the lanes that did`, out)
	assert.NotContains(t, errOut, "more lane(s)")
	stopped(t, errOut)
}
