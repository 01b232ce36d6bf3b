package engine

import (
	"runtime"
	"strings"
)

// specStacks is where the grader's goroutines that run specs are, for a
// spec that never returned: the stacks of at most two goroutines in
// rlconform's spec code (the spec's body, or its harness), each cut to
// its innermost frames, indented for a report.
func specStacks() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if len(out) == 2 {
			break
		}
		if !strings.Contains(g, "rlconform/internal/specs.") && !strings.Contains(g, "engine.(*Harness).execute") {
			continue
		}
		lines := strings.Split(strings.TrimSpace(g), "\n")
		if len(lines) > 1+2*stackFrames {
			lines = append(lines[:1+2*stackFrames], "\t…")
		}
		out = append(out, "    "+strings.Join(lines, "\n    "))
	}
	if len(out) == 0 {
		return "    (no goroutine of rlconform's specs is left: the spec's own goroutine ended, unseen)"
	}
	return strings.Join(out, "\n\n")
}

// stackFrames is how many innermost frames of a stack specStacks keeps.
const stackFrames = 12
