package targets

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// setParentDeath makes the kernel kill the started shell (not what it
// started) if the thread that started it ends, rlconform with it, without
// stopping it: the fallback when the supervisor could not start (see Exec).
func setParentDeath(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// groupExited waits, at most timeout, until no process of cmd's process
// group is alive: each has exited (a zombie has closed its files) or is
// gone. The group's SIGKILL is delivered at once but a process takes a
// moment to exit, and until it has, a port it listened on still answers.
func groupExited(cmd *exec.Cmd, timeout time.Duration) {
	pgid := cmd.Process.Pid
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if !groupAlive(pgid) {
			return
		}
	}
}

// groupAlive reports whether a process of group pgid is running, from
// /proc/PID/stat: "pid (comm) state ppid pgrp ...".
func groupAlive(pgid int) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // gone meanwhile
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := bytes.Fields(b[i+1:])
		if len(fields) < 3 || string(fields[0]) == "Z" || string(fields[0]) == "X" {
			continue
		}
		if g, err := strconv.Atoi(string(fields[2])); err == nil && g == pgid {
			return true
		}
	}
	return false
}
