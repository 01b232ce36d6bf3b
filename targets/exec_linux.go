package targets

import "syscall"

// setParentDeath makes the kernel kill the started shell (not what it
// started) if the thread that started it ends, rlconform with it, without
// stopping it: the fallback when the supervisor could not start (see Exec).
func setParentDeath(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
