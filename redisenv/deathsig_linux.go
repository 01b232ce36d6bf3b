package redisenv

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel kill the server if this process dies
// without stopping it (a test binary killed by a timeout, say).
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
