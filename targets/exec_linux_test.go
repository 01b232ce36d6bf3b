package targets

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// roleEnv makes the test binary a process of the tests instead of the
// tests: "service" serves protocol v1 (404 to everything) on $PORT;
// "grader" starts a service with a background child (Exec) from the
// directory in dirEnv, prints "pgid N" and waits for its stdin to close.
const (
	roleEnv = "RLCONFORM_TARGETS_TEST_ROLE"
	dirEnv  = "RLCONFORM_TARGETS_TEST_DIR"
)

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "service":
		err := http.ListenAndServe(net.JoinHostPort("127.0.0.1", os.Getenv("PORT")), http.NotFoundHandler())
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	case "grader":
		os.Exit(grade(os.Getenv(dirEnv)))
	}
	os.Exit(m.Run())
}

// serviceWithChild is a command for Exec that starts sleep in the
// background, writes its pid to dir/child, and runs the test binary as a
// service.
func serviceWithChild(dir string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("sleep 1000 & echo $! > %s; %s=service %s", quote(filepath.Join(dir, "child")), roleEnv, quote(self)), nil
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// grade is the grader's main: it starts a service with a child, says its
// process group, and waits for its stdin to close, then exits without
// stopping it.
func grade(dir string) int {
	command, err := serviceWithChild(dir)
	if err == nil {
		var p *Processes
		if p, err = Exec(context.Background(), ExecOptions{Command: command, Instances: 1, Ready: 5 * time.Minute}); err == nil {
			fmt.Printf("pgid %d\n", p.procs[0].cmd.Process.Pid)
			io.Copy(io.Discard, os.Stdin)
			return 0
		}
	}
	fmt.Printf("error %v\n", err)
	return 2
}

// group lists the live processes (not zombies) of process group pgid, as
// "pid name".
func group(t *testing.T, pgid int) []string {
	return live(t, "/proc/[0-9]*/stat", func(pgrp int) bool { return pgrp == pgid })
}

// live lists the live processes among the /proc/PID/stat files that match
// glob and whose process group passes in, as "pid name".
func live(t *testing.T, glob string, in func(pgrp int) bool) []string {
	t.Helper()
	stats, err := filepath.Glob(glob)
	require.NoError(t, err)
	var found []string
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // it ended meanwhile
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(s[end+1:]) // state, ppid, pgrp, …
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if pgrp, err := strconv.Atoi(f[2]); err != nil || !in(pgrp) {
			continue
		}
		found = append(found, strings.TrimSpace(s[:open])+" "+s[open+1:end])
	}
	return found
}

// gone waits until list finds no process, or a deadline that only a broken
// kill reaches (the kernel's, not the machine's, pace: well under a second).
func gone(t *testing.T, what string, list func() []string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for left := list(); len(left) > 0; left = list() {
		if time.Now().After(deadline) {
			t.Fatalf("left %s: %v", what, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupGone waits until process group pgid has no live process.
func groupGone(t *testing.T, pgid int) {
	t.Helper()
	gone(t, fmt.Sprintf("in process group %d", pgid), func() []string { return group(t, pgid) })
}

// childPid is the pid that the service's shell wrote to dir/child.
func childPid(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "child"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

// TestExecDiesWithTheGrader: a grader killed with SIGKILL while a service
// it started runs (with a background child) leaves none of the service's
// processes behind.
func TestExecDiesWithTheGrader(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	grader := exec.Command(self)
	grader.Env = append(os.Environ(), roleEnv+"=grader", dirEnv+"="+dir)
	stdin, err := grader.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	stdout, err := grader.StdoutPipe()
	require.NoError(t, err)
	grader.Stderr = os.Stderr
	require.NoError(t, grader.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	var pgid int
	_, err = fmt.Sscanf(line, "pgid %d", &pgid)
	require.NoError(t, err, line)
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })

	before := group(t, pgid)
	child := childPid(t, dir)
	assert.Contains(t, before, strconv.Itoa(child)+" sleep", "the background child is in the service's group")
	assert.Greater(t, len(before), 1, before)
	t.Logf("the service's group before the grader dies: %v", before)

	require.NoError(t, grader.Process.Kill())
	grader.Wait()
	groupGone(t, pgid)
}

// TestExecStopKillsTheGroup: Stop ends the service and its children.
func TestExecStopKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	command, err := serviceWithChild(dir)
	require.NoError(t, err)
	p, err := Exec(context.Background(), ExecOptions{Command: command, Instances: 2, Ready: 5 * time.Minute})
	require.NoError(t, err)
	var pgids []int
	for _, proc := range p.procs {
		pgids = append(pgids, proc.cmd.Process.Pid)
	}
	t.Cleanup(func() {
		for _, pgid := range pgids {
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
	})
	for _, pgid := range pgids {
		require.Greater(t, len(group(t, pgid)), 1, "the service and its child")
	}
	require.NoError(t, p.Stop())
	for _, pgid := range pgids {
		groupGone(t, pgid)
	}
}

// TestExecNoticesAnExitWhileAChildHoldsItsOutput: a service that exits
// while the child it started in the background holds its output is seen
// to have exited (it was seen, at best, not to answer within Ready), and
// the child is killed.
func TestExecNoticesAnExitWhileAChildHoldsItsOutput(t *testing.T) {
	dir := t.TempDir()
	_, err := Exec(context.Background(), ExecOptions{
		Command:   fmt.Sprintf("sleep 1000 & echo $! > %s; echo leaving; exit 3", quote(filepath.Join(dir, "child"))),
		Instances: 1, Ready: time.Minute,
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "it exited (exit status 3) before answering")
	assert.Contains(t, err.Error(), "    leaving")
	child := childPid(t, dir)
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })
	gone(t, "the child", func() []string {
		return live(t, fmt.Sprintf("/proc/%d/stat", child), func(int) bool { return true })
	})
}
