//go:build unix

package container

import (
	"os/exec"
	"os/signal"
	"syscall"
)

// detach puts the watchdog in a process group of its own: a terminal's
// Ctrl-C, sent to the foreground group, does not reach it.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// ignoreInterrupts keeps the watchdog alive through the signals that end
// its parent's session.
func ignoreInterrupts() { signal.Ignore(syscall.SIGINT, syscall.SIGHUP) }
