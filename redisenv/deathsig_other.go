//go:build !linux

package redisenv

import "os/exec"

// setDeathSignal does nothing where the kernel offers no parent-death signal.
func setDeathSignal(*exec.Cmd) {}
