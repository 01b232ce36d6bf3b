//go:build !unix

package container

import (
	"os"
	"os/exec"
	"os/signal"
)

// detach does nothing here.
func detach(*exec.Cmd) {}

// ignoreInterrupts keeps the watchdog alive through an interrupt.
func ignoreInterrupts() { signal.Ignore(os.Interrupt) }
