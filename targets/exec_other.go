//go:build !unix

package targets

import (
	"os/exec"
	"time"
)

func ownGroup(*exec.Cmd) {}

func signalGroup(cmd *exec.Cmd, _ bool) { cmd.Process.Kill() }

// groupExited: without process groups, the process's own exit is all
// Stop waits for.
func groupExited(*exec.Cmd, time.Duration) {}
