//go:build unix

package container

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with this pid exists (a process
// of another user counts as alive).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
