package targets

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/rlconform/rlconform/suite"
)

// StoreFaultCommand is a [suite.Target] StoreFault that runs command with
// the fault as its last argument: "CMD stop", "CMD freeze", "CMD resume"
// (by sh -c 'CMD "$@"' sh FAULT), in a process group of its own, with this
// process's environment. It must return once the fault is in force (after
// resume: once the store answers again) and exit 0. A non-zero exit, or
// one that ctx does not leave time for (its group is then killed), is an
// error quoting the end of what it printed. docs/cli.md gives two
// examples: a local redis-server by its pid file, a Docker container.
func StoreFaultCommand(command string) func(ctx context.Context, fault suite.StoreFault) error {
	return func(ctx context.Context, fault suite.StoreFault) error {
		if strings.TrimSpace(command) == "" {
			return errors.New("store fault: no command")
		}
		cmd := exec.CommandContext(ctx, "sh", "-c", command+` "$@"`, "sh", string(fault))
		out := &tailBuffer{max: 4 << 10}
		cmd.Stdout, cmd.Stderr = out, out
		ownGroup(cmd)
		cmd.Cancel = func() error {
			signalGroup(cmd, true)
			return nil
		}
		// A daemon it starts (a store, resumed) may keep its output open:
		// once the command has exited, that is not waited for long.
		cmd.WaitDelay = waitDelay
		err := cmd.Run()
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("%s %s: no end in the time given (%w)%s", command, fault, context.Cause(ctx), out.quote())
		case err != nil && !errors.Is(err, exec.ErrWaitDelay):
			return fmt.Errorf("%s %s: %w%s", command, fault, err, out.quote())
		}
		return nil
	}
}
