package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// self is this binary, as the kernel knows it: it names the running
// program even when its file was replaced or removed since.
const self = "/proc/self/exe"

// argv0 names the supervisor in ps.
const argv0 = "rlconform-supervisor"

func init() {
	if parent, ok := os.LookupEnv(ParentEnv); ok {
		os.Exit(supervise(parent, os.Args))
	}
}

// Wrap returns a command that runs cmd under a supervisor (see the package
// doc), in a new process group that the supervisor leads, and true. The
// command's Path, Args, Env, Dir, standard files and WaitDelay are
// carried; its SysProcAttr is not (the supervisor's is set). A cmd that
// exec.Command could not find is returned unchanged, with false.
//
// The parent-death signal is tied to the thread that starts the returned
// command: the supervisor ignores one sent while its parent lives, but a
// caller that can should start it from a goroutine locked to its thread
// until Wait returns.
func Wrap(cmd *exec.Cmd) (*exec.Cmd, bool) {
	if cmd.Err != nil || cmd.Path == "" {
		return cmd, false
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, ParentEnv+"=") })
	args := cmd.Args
	if len(args) == 0 {
		args = []string{cmd.Path}
	}
	return &exec.Cmd{
		Path:        self,
		Args:        append([]string{argv0, cmd.Path}, args...),
		Env:         append(env, ParentEnv+"="+strconv.Itoa(os.Getpid())),
		Dir:         cmd.Dir,
		Stdin:       cmd.Stdin,
		Stdout:      cmd.Stdout,
		Stderr:      cmd.Stderr,
		WaitDelay:   cmd.WaitDelay,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM},
	}, true
}

// supervise is the supervisor's main: args are its command line (argv0,
// the command's path, then its arguments from its own argv[0]) and parent
// the value of ParentEnv. It returns the exit code, unless it dies of the
// command's signal first.
func supervise(parent string, args []string) int {
	ppid, err := strconv.Atoi(parent)
	switch {
	case err != nil || ppid <= 1:
		return fail("%s=%q: not a parent's pid", ParentEnv, parent)
	case len(args) < 3:
		return fail("no command in %q", args)
	case syscall.Getpgrp() != os.Getpid():
		// Killing the group would kill whoever leads it.
		return fail("not the leader of a process group of its own")
	}
	os.Unsetenv(ParentEnv)
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if os.Getppid() != ppid {
		return 1 // it died before the notification was in place
	}
	cmd := &exec.Cmd{Path: args[1], Args: args[2:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	if err := cmd.Start(); err != nil {
		return fail("starting %s: %v", args[1], err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	for {
		select {
		case <-sigs:
			if os.Getppid() != ppid {
				syscall.Kill(0, syscall.SIGKILL) // the group, this process included
			}
		case <-exited:
			return exitAs(cmd.ProcessState)
		}
	}
}

// exitAs ends the supervisor as the command ended: it returns the exit
// code, or dies of the same signal (128 plus its number if that signal
// does not end a process).
func exitAs(state *os.ProcessState) int {
	ws, ok := state.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return state.ExitCode()
	}
	sig := ws.Signal()
	signal.Reset()
	runtime.LockOSThread() // a signal sent to this thread arrives before the call returns
	syscall.Tgkill(os.Getpid(), syscall.Gettid(), sig)
	return 128 + int(sig)
}

// fail says why the supervisor cannot run, on its standard error (the
// starter's record of the command's output), and returns 2.
func fail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "rlconform supervisor: "+format+"\n", args...)
	return 2
}
