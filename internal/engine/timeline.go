package engine

import (
	"cmp"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rlconform/rlconform/result"
)

// Event is one operation a spec performed, as the failure report shows it.
type Event struct {
	At    time.Duration // since the spec's start, on the spec's clock
	Until time.Duration // in real time, when the answer came (0: at)
	inst  int           // which instance answered (0-based)
	Op    string        // AllowRequest("a")
	Got   string        // allowed, denied, 3, ok, error: ...
	// User is the user operated on as Short shows it, "" for none; when
	// empty, it is read from Op for a call on one user.
	User string
	// Want is what the model answers there ("" when not asked).
	Want string
	// Kind is the kind of operation; when empty, it is read from Op.
	Kind result.OpKind
	// Count is how many calls the line stands for (0 means 1).
	Count int
	// Undecided: in real time, an answer too close to an edge to judge.
	Undecided bool
	// Limit and Window are the configuration in force (0: the harness's
	// model's, when it records the event).
	Limit  int
	Window time.Duration
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

// shown is what a printed line shows of an event: lines of identical
// ones are counted together.
type shown struct {
	at, until time.Duration
	inst      int
	op, got   string
}

// String renders the timeline, one line per run of identical operations
// (same instant, instance, operation and answer), keeping the last lines.
func (tl *Timeline) String(instances int) string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	type line struct {
		e shown
		n int
	}
	var lines []line
	for _, ev := range tl.events {
		e := shown{at: ev.At, until: ev.Until, inst: ev.inst, op: ev.Op, got: ev.Got}
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
			fmt.Fprintf(&b, "    %9s…%-9s  ", FmtOffset(l.e.at), strings.TrimPrefix(FmtOffset(l.e.until), "+"))
		} else {
			fmt.Fprintf(&b, "    %9s  ", FmtOffset(l.e.at))
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

// wantAt sets the model's answer of the event at step (1-based) when it
// has none: the step a failure names.
func (tl *Timeline) wantAt(step int, want string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if step >= 1 && step <= len(tl.events) && tl.events[step-1].Want == "" {
		tl.events[step-1].Want = want
	}
}

// len is how many events the timeline holds.
func (tl *Timeline) len() int {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return len(tl.events)
}

// data is the timeline as a report's data: at most result.MaxTimelineOps
// operations, those around step (1-based; 0: the last ones) when there
// are more, and how many there are in all.
func (tl *Timeline) data(step int) ([]result.Op, int) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	from, to := 0, len(tl.events)
	if n := result.MaxTimelineOps; to > n {
		from = to - n
		if step > 0 && step-1 < from { // keep the failing step, and most of what led to it
			from = max(0, step-1-n*4/5)
		}
		to = from + n
	}
	ops := make([]result.Op, 0, to-from)
	for i := from; i < to; i++ {
		ops = append(ops, tl.events[i].op(i+1))
	}
	return ops, len(tl.events)
}

// op is e as the report's data, at step.
func (e Event) op(step int) result.Op {
	user, kind := e.User, e.Kind
	if user == "" || kind == "" {
		u, k := parseOp(e.Op)
		user = cmp.Or(user, u)
		kind = cmp.Or(kind, k)
	}
	return result.Op{Step: step, At: e.At, Until: e.Until, Instance: e.inst, User: user, Op: e.Op, Got: e.Got, Want: e.Want,
		Kind: kind, Count: max(1, e.Count), Undecided: e.Undecided, Limit: e.Limit, Window: e.Window}
}

// parseOp reads the user and the kind of a call from how the timeline
// shows it: AllowRequest("u"), AllowRequestN("u", 3),
// GetRemainingRequests("u"), Reset("u"), Configure(5, 1m0s); anything
// else is a note, on no one user.
func parseOp(op string) (string, result.OpKind) {
	open, end := strings.IndexByte(op, '('), strings.LastIndexByte(op, ')')
	if open < 0 || end < open || end != len(op)-1 {
		return "", result.OpNote
	}
	arg := op[open+1 : end]
	switch op[:open] {
	case "AllowRequest":
		return arg, result.OpAllow
	case opAllowN:
		if i := strings.LastIndex(arg, ", "); i > 0 {
			arg = arg[:i]
		}
		return arg, result.OpAllow
	case "GetRemainingRequests":
		return arg, result.OpRemaining
	case "Reset":
		return arg, result.OpReset
	case "Configure":
		return "", result.OpConfigure
	}
	return "", result.OpNote
}

func FmtOffset(d time.Duration) string {
	if d < 0 {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("+%dms", d.Milliseconds())
}
