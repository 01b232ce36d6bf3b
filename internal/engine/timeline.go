package engine

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Event is one operation a spec performed, as the failure report shows it.
type Event struct {
	At    time.Duration // since the spec's start, on the spec's clock
	Until time.Duration // in real time, when the answer came (0: at)
	inst  int           // which instance answered (0-based)
	Op    string        // AllowRequest("a")
	Got   string        // allowed, denied, 3, ok, error: ...
}

// Timeline is the record of a spec's operations. It is safe for concurrent
// use, so that concurrent phases can add their summary lines.
type Timeline struct {
	mu     sync.Mutex
	events []Event
}

func (tl *Timeline) Add(e Event) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.events = append(tl.events, e)
}

// maxTimelineLines bounds a printed timeline: a failure must stay readable.
const maxTimelineLines = 24

// String renders the timeline, one line per run of identical operations
// (same instant, instance, operation and answer), keeping the last lines.
func (tl *Timeline) String(instances int) string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	type line struct {
		e Event
		n int
	}
	var lines []line
	for _, e := range tl.events {
		if k := len(lines) - 1; k >= 0 && lines[k].e == e {
			lines[k].n++
			continue
		}
		lines = append(lines, line{e, 1})
	}
	var b strings.Builder
	if skipped := len(lines) - maxTimelineLines; skipped > 0 {
		fmt.Fprintf(&b, "    … %d earlier lines\n", skipped)
		lines = lines[skipped:]
	}
	for _, l := range lines {
		if l.e.Until.Milliseconds() > l.e.At.Milliseconds() {
			fmt.Fprintf(&b, "    %9s…%-9s  ", FmtOffset(l.e.At), strings.TrimPrefix(FmtOffset(l.e.Until), "+"))
		} else {
			fmt.Fprintf(&b, "    %9s  ", FmtOffset(l.e.At))
		}
		if instances > 1 {
			fmt.Fprintf(&b, "#%d ", l.e.inst+1)
		}
		fmt.Fprintf(&b, "%s = %s", l.e.Op, l.e.Got)
		if l.n > 1 {
			fmt.Fprintf(&b, "  ×%d", l.n)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func FmtOffset(d time.Duration) string {
	if d < 0 {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("+%dms", d.Milliseconds())
}
