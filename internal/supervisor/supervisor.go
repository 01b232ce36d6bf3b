// Package supervisor starts a command so that its process group dies with
// the process that started it, even when that one is killed with SIGKILL
// (on Linux; elsewhere [Wrap] declines and the caller keeps its own means).
//
// The kernel's parent-death signal (PR_SET_PDEATHSIG, SysProcAttr.Pdeathsig
// in Go) is not enough on its own: it reaches the direct child only (sh -c
// CMD runs CMD and its background jobs as children of its own, which
// outlive it), and it is sent when the thread that forked dies, which in Go
// may be long before the process does (go.dev/issue/27505). So [Wrap] runs
// the command under a supervisor: this very binary started again
// (/proc/self/exe) with [ParentEnv] set, which this package's init turns
// into the supervisor before main runs, in rlconform and in any program or
// test binary that links the package. The supervisor leads a new process
// group, has SIGTERM as its parent-death signal, and starts the command in
// its group with its standard files. Whenever SIGTERM, SIGINT or SIGHUP
// arrives it asks the kernel for its parent: if that is no longer the
// process that started it, that one died, and the supervisor kills its
// whole group with SIGKILL, itself included; otherwise (the starter
// signalling the group to stop it, or the death of one of its threads) it
// does nothing, and the command handles the signal. It exits as the
// command does: with its exit code, or killed by the same signal.
//
// Not chosen: the parent-death signal on sh alone (it misses the
// service's children, and fires early on a thread's death); making the
// grader a child subreaper (orphans reparent to it, which helps nothing
// once it is killed); a PID namespace, whose end kills every process in
// it (it needs privileges or user namespaces, and makes the service PID
// 1, which ignores a SIGTERM it has no handler for); a shell trap as the
// supervisor (it cannot tell a thread's death from its parent's, and
// changes the signals its background job ignores).
package supervisor

// ParentEnv, in a process's environment, makes it a supervisor (see the
// package doc) for the process whose pid it holds. It is the interface
// between [Wrap] and the supervisor, not for users; the supervisor removes
// it from the environment of the command it starts.
const ParentEnv = "RLCONFORM_SUPERVISOR_PARENT"
