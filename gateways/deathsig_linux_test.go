package gateways

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill the gateway if the test binary dies
// without stopping it (killed by a timeout, say).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
