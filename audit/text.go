package audit

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/rlconform/rlconform/bench"
	"github.com/rlconform/rlconform/internal/plural"
)

// Text writes the report: what was read, how it was judged, and the
// verdict with its evidence.
func (res *Result) Text(w io.Writer) {
	s := res.Stream
	var files []string
	for _, f := range res.Files {
		files = append(files, fmt.Sprintf("%s (%s, %s)", f.Name, plural.Count(f.Lines, "line"), plural.Count(f.Requests, "request")))
	}
	fmt.Fprintf(w, "audit       %s log%s: %s\n", res.Format, map[bool]string{true: "s"}[len(res.Files) > 1], strings.Join(files, ", "))
	users := plural.Count(s.Users, "user")
	if s.UsersEstimated {
		users = "about " + users
	}
	fmt.Fprintf(w, "judged      %s of %s, %s of %v; %d per %v as %s\n", plural.Count(s.Calls, "request"), users, plural.Count(s.UserWindows, "user-window"), res.Window, res.Limit, res.Window, res.Profile)
	fmt.Fprintf(w, "rules       %s\n", strings.Join(res.Rules, "; "))
	if s.Calls > 0 {
		fmt.Fprintf(w, "intervals   widths p50 %v, p99 %v, max %v, as read; %s\n", roundWidth(s.Widths.P50), roundWidth(s.Widths.P99), roundWidth(s.Widths.Max), strings.Join(res.Notes, "; "))
	}
	res.skippedText(w)
	ex := s.Exactness
	fmt.Fprintf(w, "refusals    %d judged, %d decided whatever the timing (enough allowed surely within the window before them)", ex.Denials, ex.Decided)
	if s.Unjudged > 0 {
		fmt.Fprintf(w, "; %d not judged: their requests began more than %v before they ended", s.Unjudged, s.Settle)
	}
	fmt.Fprintln(w)
	settleText(w, s)
	res.skewText(w)
	fmt.Fprintf(w, "verdict     %s (exit %d): %s\n", strings.ToUpper(res.Verdict.Outcome), res.Verdict.Code, res.Verdict.Why)
	res.findingsText(w)
	rate := float64(res.Lines) / max(res.Took, time.Microsecond).Seconds()
	fmt.Fprintf(w, "read        %s in %v (%.0f lines/s); at most %s held at once\n", plural.Count(res.Lines, "line"), res.Took.Round(time.Millisecond), rate, plural.Count(int64(s.Kept), "request"))
}

// settleText writes the settling time the requests were judged with, and
// how far out of order they were read.
func settleText(w io.Writer, s *bench.StreamResult) {
	if !s.Adaptive {
		fmt.Fprintf(w, "settle      %v, as given; lines read out of order by up to %v\n", s.Settle, roundWidth(s.Lateness))
		return
	}
	fmt.Fprintf(w, "settle      %v, adaptive: twice the most a line was read out of order (%v), from %v to %v; a refusal that looks unexplained waits %v for lines read later",
		s.Settle, roundWidth(s.Lateness), bench.MinSettle, bench.DefaultSettle, s.Hold)
	if s.Held > 0 {
		fmt.Fprintf(w, " (%s waited)", plural.Count(s.Held, "part"))
	} else {
		fmt.Fprint(w, " (none did)")
	}
	if s.Hurried > 0 {
		fmt.Fprintf(w, "; settled sooner (down to %v), not waiting, %s to stay within memory", s.Shortest, plural.Count(s.Hurried, "time"))
	}
	fmt.Fprintln(w)
}

// skippedText writes what was not read: lines skipped, too long, logs
// cut short.
func (res *Result) skippedText(w io.Writer) {
	type skip struct {
		why   string
		n     int64
		first string
	}
	total := map[string]*skip{}
	for _, f := range res.Files {
		for why, c := range f.Skipped {
			s := total[why]
			if s == nil {
				s = &skip{why: why, first: fmt.Sprintf("%s:%d", f.Name, c.First)}
				total[why] = s
			}
			s.n += c.Lines
		}
		if f.TooLong > 0 {
			fmt.Fprintf(w, "warning     %s: %s longer than 64 KiB skipped\n", f.Name, plural.Count(f.TooLong, "line"))
		}
		if f.Cut != "" {
			fmt.Fprintf(w, "warning     %s: %s\n", f.Name, f.Cut)
		}
	}
	if len(total) == 0 {
		return
	}
	list := slices.SortedFunc(maps.Values(total), func(a, b *skip) int { return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.why, b.why)) })
	var parts []string
	n := int64(0)
	for _, s := range list {
		parts = append(parts, fmt.Sprintf("%d %s (first: %s)", s.n, s.why, s.first))
		n += s.n
	}
	fmt.Fprintf(w, "skipped     %s: %s\n", plural.Count(n, "line"), strings.Join(parts, "; "))
}

// skewText writes the clock skew assumed, and the smallest that explains
// the log.
func (res *Result) skewText(w io.Writer) {
	k := res.Stream.Skew
	fmt.Fprintf(w, "clock skew  assumed %v (--clock-skew: every interval widened by it on each side)", k.Assumed)
	ex := res.Stream.Exactness
	switch {
	case !k.Explained:
		fmt.Fprintf(w, "; no skew up to %v explains the log: the limiter is wrong whatever the clocks", k.Searched.Round(time.Millisecond))
	case ex.Exact() && k.Smallest < k.Assumed:
		fmt.Fprintf(w, "; %v would have sufficed", k.Smallest)
	case !ex.Exact():
		fmt.Fprintf(w, "; the smallest that explains the log is %v: past the bound assumed, so the limiter is wrong unless the clocks of the gateways and the limiter were that far apart", k.Smallest)
	}
	fmt.Fprintln(w)
}

// findingsText writes the worst overshoot and refusal with their
// evidence.
func (res *Result) findingsText(w io.Writer) {
	ex := res.Stream.Exactness
	if wd := ex.Worst; wd != nil && res.Overshoot != nil {
		fmt.Fprintf(w, "            OVERSHOOT: %s allowed past the limit of %d per %v, judged as %s\n", plural.Count(int64(ex.Overshoot), "request"), res.Limit, res.Window, res.Profile)
		fmt.Fprintf(w, "            worst window: user %q had %d allowed from %s (first sent) to %s (last answered), %v apart, where the profile admits at most %d whatever their instants\n",
			wd.UserID, wd.Allowed, instant(wd.From), instant(wd.To), (wd.To - wd.From).Round(time.Microsecond), wd.Bound)
		if wd.Rule != "" {
			fmt.Fprintf(w, "            the bound: %s\n", wd.Rule)
		}
		evidenceText(w, res.Overshoot)
	}
	if u := ex.WorstUnder; u != nil && res.Under != nil {
		fmt.Fprintf(w, "            UNDER-ADMISSION: %s refused that %s of %d per %v admits whatever the timing\n", plural.Count(int64(ex.UnderAdmitted), "request"), res.Profile, res.Limit, res.Window)
		fmt.Fprintf(w, "            worst: user %q refused at %s..%s with at most %d allowed (or failed) requests that could count\n", u.UserID, instant(u.Call.Sent), instant(u.Call.Returned), u.Counted)
		if u.Rule != "" {
			fmt.Fprintf(w, "            the rule: %s\n", u.Rule)
		}
		evidenceText(w, res.Under)
	}
}

// evidenceText writes a finding's requests: their intervals, outcomes and
// log lines (at most 12: the first 6 and the last 6).
func evidenceText(w io.Writer, e *Evidence) {
	if len(e.Lines) == 0 {
		return
	}
	ls := slices.Clone(e.Lines)
	first := ls[0].Call.Sent
	for _, l := range ls {
		first = min(first, l.Call.Sent)
	}
	fmt.Fprintf(w, "            the requests (ms after %s, sent..answered; where read; the line):\n", instant(first))
	for i, l := range ls {
		if len(ls) > 12 && i == 6 {
			fmt.Fprintf(w, "              ... %d more\n", len(ls)-12)
		}
		if len(ls) > 12 && i >= 6 && i < len(ls)-6 {
			continue
		}
		text := l.Text
		if text == "" {
			text = "(not read again)"
		}
		fmt.Fprintf(w, "              +%.3f..+%.3f %-7s %s:%d  %s\n", float64(l.Call.Sent-first)/1e6, float64(l.Call.Returned-first)/1e6, l.Call.Outcome, l.File, l.Line, text)
	}
}

// instant is a Unix ns instant in UTC, to the microsecond.
func instant(d time.Duration) string {
	return time.Unix(0, int64(d)).UTC().Format("2006-01-02T15:04:05.000000Z")
}
