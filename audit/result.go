package audit

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlconform/rlconform/bench"
	"github.com/rlconform/rlconform/internal/loglines"
	"github.com/rlconform/rlconform/internal/plural"
)

// Result is what an audit read and found: data only, for the text report
// ([Result.Text]), JSON, or any page that renders it.
type Result struct {
	// Version is the rlconform that audited (set by the caller).
	Version string `json:"version,omitempty"`
	// Format is the logs' format; Files each log's figures; Lines the
	// lines of them all.
	Format string      `json:"format"`
	Files  []FileStats `json:"files"`
	Lines  int64       `json:"lines"`
	// Limit, Window and Profile are the policy judged, Rules what the
	// judge holds it to, a line each.
	Limit   int           `json:"limit"`
	Window  time.Duration `json:"window_ns"`
	Profile string        `json:"profile"`
	Rules   []string      `json:"rules"`
	// Notes say how the format's instants were read and widened.
	Notes []string `json:"notes"`
	// Stream is the judge's finding: its counts (requests, users,
	// windows), the intervals' widths, the clock skew, and the exactness
	// with the worst window and refusal.
	Stream *bench.StreamResult `json:"judged"`
	// Overshoot and Under are the evidence of the worst overshoot and the
	// worst unexplained refusal (nil without), with their log lines.
	Overshoot *Evidence `json:"overshoot_evidence,omitempty"`
	Under     *Evidence `json:"under_admission_evidence,omitempty"`
	// Verdict is what the audit concludes, and its exit code.
	Verdict Verdict `json:"verdict"`
	// Interrupted: the audit was stopped before the logs' end (its
	// figures are of what was read). Took is how long the audit took.
	Interrupted bool          `json:"interrupted,omitempty"`
	Took        time.Duration `json:"took_ns"`
}

// FileStats are one log's figures.
type FileStats struct {
	Name string `json:"name"`
	// Lines is how many lines were read, Requests how many requests they
	// made (a k6 request is several lines).
	Lines    int64 `json:"lines"`
	Requests int64 `json:"requests"`
	// Skipped counts the lines skipped, by why (with the first such
	// line); TooLong those longer than 64 KiB.
	Skipped map[string]*SkipCount `json:"skipped,omitempty"`
	TooLong int64                 `json:"too_long,omitempty"`
	// Cut says where and why the log ended before its end (a gzip stream
	// cut short): "" when it did not.
	Cut   string   `json:"cut,omitempty"`
	Notes []string `json:"-"`
}

// SkipCount is how many lines were skipped for one reason, and the
// first.
type SkipCount struct {
	Lines int64 `json:"lines"`
	First int64 `json:"first_line"`
}

// Evidence is a finding's requests with the log lines they were read from.
type Evidence struct {
	// User is the requests' user; Lines are its requests, in the order
	// sent (for an unexplained refusal, the refusal last).
	User  string         `json:"user"`
	Lines []EvidenceLine `json:"lines"`
}

// EvidenceLine is one request of a finding.
type EvidenceLine struct {
	// File and Line are where it was read; Text is the line (without its
	// end; "" when it could not be read again: standard input).
	File string `json:"file"`
	Line int64  `json:"line"`
	Text string `json:"text,omitempty"`
	// Call is the request as judged: its outcome, and its interval in
	// Unix ns.
	Call bench.Decision `json:"call"`
}

// Verdict is what an audit concludes.
type Verdict struct {
	// Code is the exit code: 0 every admission and refusal explained, 1
	// the limiter is wrong (no timing explains the log), 2 undecided.
	Code int `json:"code"`
	// Outcome is "explained", "wrong" or "undecided"; Why says so in a
	// sentence.
	Outcome string `json:"outcome"`
	Why     string `json:"why"`
}

// The outcomes of an audit.
const (
	Explained = "explained"
	Wrong     = "wrong"
	Undecided = "undecided"
)

// judge is the verdict of the figures res holds.
func (res *Result) judge() Verdict {
	s := res.Stream
	ex := s.Exactness
	switch {
	case ex.Overshoot > 0:
		return Verdict{1, Wrong, fmt.Sprintf("%s allowed past the limit: no timing of the requests logged explains them", plural.Count(int64(ex.Overshoot), "request"))}
	case ex.UnderAdmitted > 0 && !s.UnderUnproven:
		return Verdict{1, Wrong, fmt.Sprintf("%s refused that no timing explains: the limit had room", plural.Count(int64(ex.UnderAdmitted), "request"))}
	case ex.UnderAdmitted > 0:
		wait := s.Hold
		if s.Hurried > 0 {
			wait = s.Shortest
		}
		return Verdict{2, Undecided, fmt.Sprintf("%s refused that the requests read before them do not explain, but %s read later (longer than %v, or that far out of order) might: not proven",
			plural.Count(int64(ex.UnderAdmitted), "request"), plural.Count(s.Late, "request"), wait)}
	case res.Interrupted:
		return Verdict{2, Undecided, "interrupted before the logs' end"}
	case s.Calls == 0:
		return Verdict{2, Undecided, "no request to judge: every line was skipped (see skipped)"}
	case ex.Denials == 0:
		return Verdict{2, Undecided, "not exercised: no request was refused, so the limit was never put to the test"}
	case ex.Decided == 0:
		return Verdict{2, Undecided, fmt.Sprintf("the intervals are too wide to tell: none of the %s refused had %d allowed surely within the window before it (widths: p50 %v, p99 %v, against a window of %v)",
			plural.Count(int64(ex.Denials), "request"), res.Limit, roundWidth(s.Widths.P50), roundWidth(s.Widths.P99), res.Window)}
	}
	return Verdict{0, Explained, "every admission and every refusal is explained by some timing of the requests"}
}

// evidence reads the log lines of the findings' requests.
func (res *Result) evidence(sources []Source) {
	ex := res.Stream.Exactness
	if w := ex.Worst; w != nil {
		res.Overshoot = &Evidence{User: w.UserID, Lines: lines(w.Calls, res.Stream.WorstRefs, sources)}
	}
	if u := ex.WorstUnder; u != nil {
		res.Under = &Evidence{User: u.UserID, Lines: lines(append(slices.Clone(u.Nearby), u.Call), res.Stream.UnderRefs, sources)}
	}
	want := map[int][]*EvidenceLine{}
	for _, e := range []*Evidence{res.Overshoot, res.Under} {
		if e == nil {
			continue
		}
		for i := range e.Lines {
			l := &e.Lines[i]
			k := slices.IndexFunc(sources, func(s Source) bool { return s.Name == l.File })
			if k >= 0 && sources[k].Reopen {
				want[k] = append(want[k], l)
			}
		}
	}
	for k, ls := range want {
		readLines(sources[k], ls)
	}
}

func lines(calls []bench.Decision, refs []uint64, sources []Source) []EvidenceLine {
	out := make([]EvidenceLine, len(calls))
	for i, c := range calls {
		out[i].Call = c
		if i < len(refs) {
			src, line := unref(refs[i])
			if src < len(sources) {
				out[i].File = sources[src].Name
			}
			out[i].Line = line
		}
	}
	return out
}

// maxEvidenceText bounds an evidence line's text in a report.
const maxEvidenceText = 1000

// readLines reads the text of lines ls of source s again.
func readLines(s Source, ls []*EvidenceLine) {
	slices.SortFunc(ls, func(a, b *EvidenceLine) int { return cmp.Compare(a.Line, b.Line) })
	in, err := s.Open()
	if err != nil {
		return
	}
	defer in.Close()
	lr, err := loglines.New(in)
	if err != nil {
		return
	}
	for len(ls) > 0 {
		b, ok := lr.Next()
		if !ok {
			return
		}
		for len(ls) > 0 && ls[0].Line < lr.Line() {
			ls = ls[1:] // a line too long: skipped
		}
		for len(ls) > 0 && ls[0].Line == lr.Line() {
			ls[0].Text = strings.ToValidUTF8(string(b[:min(len(b), maxEvidenceText)]), "?")
			ls = ls[1:]
		}
	}
}

// roundWidth rounds a width for reading.
func roundWidth(d time.Duration) time.Duration { return bench.RoundLatency(d) }
