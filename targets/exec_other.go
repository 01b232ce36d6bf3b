//go:build !unix

package targets

import "os/exec"

func ownGroup(*exec.Cmd) {}

func signalGroup(cmd *exec.Cmd, _ bool) { cmd.Process.Kill() }
