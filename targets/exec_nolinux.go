//go:build unix && !linux

package targets

import (
	"os/exec"
	"syscall"
	"time"
)

func setParentDeath(*syscall.SysProcAttr) {}

// groupExited: without /proc, the process's own exit is all Stop waits for.
func groupExited(*exec.Cmd, time.Duration) {}
