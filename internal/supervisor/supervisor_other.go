//go:build !linux

package supervisor

import "os/exec"

// Wrap declines: there is no supervisor on this platform. It returns cmd
// unchanged and false.
func Wrap(cmd *exec.Cmd) (*exec.Cmd, bool) { return cmd, false }
