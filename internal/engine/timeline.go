package engine

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// event is one operation a spec performed, as the failure report shows it.
type event struct {
	at    time.Duration // since the spec's start, on the spec's clock
	until time.Duration // in real time, when the answer came (0: at)
	inst  int           // which instance answered (0-based)
	op    string        // AllowRequest("a")
	got   string        // allowed, denied, 3, ok, error: ...
}

// timeline is the record of a spec's operations. It is safe for concurrent
// use, so that concurrent phases can add their summary lines.
type timeline struct {
	mu     sync.Mutex
	events []event
}

func (tl *timeline) add(e event) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.events = append(tl.events, e)
}

// maxTimelineLines bounds a printed timeline: a failure must stay readable.
const maxTimelineLines = 24

// String renders the timeline, one line per run of identical operations
// (same instant, instance, operation and answer), keeping the last lines.
func (tl *timeline) String(instances int) string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	type line struct {
		e event
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
		if l.e.until.Milliseconds() > l.e.at.Milliseconds() {
			fmt.Fprintf(&b, "    %9s…%-9s  ", fmtOffset(l.e.at), strings.TrimPrefix(fmtOffset(l.e.until), "+"))
		} else {
			fmt.Fprintf(&b, "    %9s  ", fmtOffset(l.e.at))
		}
		if instances > 1 {
			fmt.Fprintf(&b, "#%d ", l.e.inst+1)
		}
		fmt.Fprintf(&b, "%s = %s", l.e.op, l.e.got)
		if l.n > 1 {
			fmt.Fprintf(&b, "  ×%d", l.n)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func fmtOffset(d time.Duration) string {
	if d < 0 {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("+%dms", d.Milliseconds())
}
