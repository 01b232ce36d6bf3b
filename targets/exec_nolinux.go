//go:build unix && !linux

package targets

import "syscall"

func setParentDeath(*syscall.SysProcAttr) {}
