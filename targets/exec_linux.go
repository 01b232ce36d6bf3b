package targets

import "syscall"

// setParentDeath makes the kernel kill the started shell if rlconform dies
// without stopping it.
func setParentDeath(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
