package container

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// The watchdog removes a container when the process that started it ends
// before Close: killed (SIGKILL included), interrupted, a test binary's
// timeout. It is this same executable started again with watchdogIDEnv set
// (init hands it to watch before anything else runs), in a process group
// of its own so that a terminal's Ctrl-C does not reach it, with no output
// (a test binary's output pipes must close when it exits). It blocks
// reading a pipe from its parent: a byte means the parent removed the
// container itself; the end of the pipe without a byte means the parent is
// gone, and the watchdog removes the container.
const (
	watchdogIDEnv   = "RLCONFORM_CONTAINER_WATCHDOG_ID"
	watchdogHostEnv = "RLCONFORM_CONTAINER_WATCHDOG_DOCKER_HOST"
)

// watchdogRemoveTimeout bounds the watchdog's attempts to remove the container.
const watchdogRemoveTimeout = 60 * time.Second

type watchdog struct {
	pipe io.WriteCloser
}

// startWatchdog starts the watchdog of container id on the engine at dockerHost.
func startWatchdog(id, dockerHost string) (*watchdog, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("container rung: the watchdog needs this executable: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), watchdogIDEnv+"="+id, watchdogHostEnv+"="+dockerHost)
	detach(cmd)
	pipe, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("container rung: watchdog: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("container rung: starting the watchdog %s: %w", exe, err)
	}
	go func() { _ = cmd.Wait() }()
	return &watchdog{pipe: pipe}, nil
}

// stop ends the watchdog. removed says whether the container is gone: the
// watchdog then exits on reading a byte (reaped by a goroutine: a race-
// enabled binary takes a second to exit); if not, it is left to remove the
// container.
func (w *watchdog) stop(removed bool) {
	if w == nil {
		return
	}
	if removed {
		_, _ = w.pipe.Write([]byte{'x'})
	}
	_ = w.pipe.Close()
}

// watch is the watchdog process's whole life; it returns its exit code.
func watch(id, dockerHost string) (code int) {
	defer func() {
		if recover() != nil {
			code = 2
		}
	}()
	ignoreInterrupts()
	var b [1]byte
	if n, _ := os.Stdin.Read(b[:]); n > 0 {
		return 0 // the parent removed the container
	}
	ctx, cancel := context.WithTimeout(context.Background(), watchdogRemoveTimeout)
	defer cancel()
	var opts []client.Opt
	if dockerHost != "" {
		opts = append(opts, client.WithHost(dockerHost))
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		cli, err := testcontainers.NewDockerClientWithOpts(ctx, opts...)
		if err == nil {
			err = removeContainer(ctx, cli, id)
			cli.Close()
			if err == nil {
				return 0
			}
		}
		select {
		case <-ctx.Done():
			return 1
		case <-tick.C:
		}
	}
}
