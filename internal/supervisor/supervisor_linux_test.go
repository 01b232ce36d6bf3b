package supervisor

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// run runs script under a supervisor (this test binary, see init) and
// returns how it ended and its output.
func run(t *testing.T, script string) (*os.ProcessState, string) {
	t.Helper()
	cmd, ok := Wrap(exec.Command("sh", "-c", script))
	require.True(t, ok)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		require.NoError(t, err)
	}
	return cmd.ProcessState, out.String()
}

// TestSupervisorEndsAsItsCommand: the supervisor exits with the command's
// exit code, or dies of its signal, and passes its output on.
func TestSupervisorEndsAsItsCommand(t *testing.T) {
	state, out := run(t, "echo out; echo err >&2; exit 3")
	assert.Equal(t, 3, state.ExitCode())
	assert.Equal(t, "out\nerr\n", out)

	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		state, out = run(t, "kill -"+strconv.Itoa(int(sig))+" $$")
		ws := state.Sys().(syscall.WaitStatus)
		assert.True(t, ws.Signaled(), "%v: %s", state, out)
		assert.Equal(t, sig, ws.Signal(), "%v: %s", state, out)
	}
}

// TestSupervisorLeadsTheGroupOfItsCommand: the command runs in the
// supervisor's own group, without ParentEnv (a Go program linking this
// package would supervise again).
func TestSupervisorLeadsTheGroupOfItsCommand(t *testing.T) {
	state, out := run(t, `test -z "${`+ParentEnv+`+set}" && cut -d' ' -f5 /proc/$$/stat && echo $PPID`)
	require.True(t, state.Success(), out)
	assert.Equal(t, strconv.Itoa(state.Pid())+"\n"+strconv.Itoa(state.Pid())+"\n", out)
}

// TestSupervisorRefusesAGroupItDoesNotLead: started without a process
// group of its own, the supervisor would kill its starter's group when
// that one dies: it refuses to run.
func TestSupervisorRefusesAGroupItDoesNotLead(t *testing.T) {
	cmd, ok := Wrap(exec.Command("sh", "-c", "echo ran"))
	require.True(t, ok)
	cmd.SysProcAttr = nil
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 2, exit.ExitCode())
	assert.Equal(t, "rlconform supervisor: not the leader of a process group of its own\n", string(out))
}
