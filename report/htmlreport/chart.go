package htmlreport

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/rlconform/rlconform/result"
)

// The geometry of a timeline chart, in the units of its viewBox: it
// scales to the width of the page, and scrolls inside its own box below
// minChartWidth CSS pixels.
const (
	chartWidth = 960.0
	gutter     = 180.0 // the lanes' labels
	rightPad   = 28.0
	topPad     = 48.0 // the labels of the band and of the wrong answer
	axisH      = 40.0
	rowH       = 18.0
	laneGap    = 10.0
	markR      = 6.0
	maxRows    = 16 // marks that would need more overlap in the last row
	maxEdges   = 24 // more window edges than this are not drawn
)

// Band is an interval a chart shades, with what it is.
type Band struct {
	From, To time.Duration
	Label    string
}

// chartOptions says how to draw a timeline.
type chartOptions struct {
	id       string // unique in the page
	title    string
	realTime bool // instants are intervals, sent to answered
	step     int  // the first wrong answer (0: none)
	band     *Band
	// from says what the instants count from.
	from string
	// byUser: the operations do not say which instance answered (a
	// concurrent history): a lane per user.
	byUser bool
}

// timelineView is a timeline laid out for the template.
type timelineView struct {
	ID, Title, Desc string
	Width, Height   float64
	PlotLeft        float64
	PlotRight       float64
	PlotTop         float64
	PlotBottom      float64
	AxisY           float64
	Lanes           []laneView
	Ticks           []tickView
	Edges           []float64
	Band            *bandView
	Marks           []markView
	Wrong           *wrongView
	Rows            []rowView
	Unordered       int
	Caption         string
	OpenTable       bool
	Legend          legendView
}

// legendView says which of the legend's optional entries a chart needs.
type legendView struct {
	Unordered, Interval, Edges, Band, Wrong, Ghost, Undecided bool
}

type laneView struct {
	Label        string
	Y, H, LabelY float64
	Shade        bool
}

type tickView struct {
	X     float64
	Label string
}

type bandView struct {
	X, W, LabelX float64
	Label        string
	Anchor       string // text-anchor of the label
}

// markView is one operation: its shape at its instant (the middle of its
// interval in real time, drawn as a bar from X to X2).
type markView struct {
	Step                        int
	Kind, User, Answer          string
	Count                       int
	X, X2, Y                    float64
	Shape                       shape
	Title                       string
	Wrong, Undecided, Unordered bool
	Ring                        float64 // the radius of the ring of a wrong or unordered mark
	Ghost                       *shape  // the model's answer, where it differs
}

// wrongView marks the first wrong answer across the plot.
type wrongView struct {
	X, Y, LabelY float64
	Label        string
	Anchor       string
}

// rowView is one operation in the table that is the chart's text.
type rowView struct {
	Step                    int
	At, Lane, Op, Got, Want string
	Note                    string
	Wrong, Unordered        bool
}

// shape is a mark's shape: a circle for allowed, a square for denied, a
// triangle for an error, a diamond for any other answer.
type shape struct {
	Answer    string
	Circle    bool
	CX, CY, R float64
	D         string
}

// shapeOf is the shape of answer a centred on (x, y).
func shapeOf(a result.Answer, x, y, r float64) shape {
	s := shape{Answer: string(a), CX: round(x), CY: round(y), R: round(r)}
	f := func(v float64) string { return fmt.Sprint(round(v)) }
	switch a {
	case result.AnswerAllowed:
		s.Circle = true
	case result.AnswerDenied:
		r *= 0.9
		s.D = fmt.Sprintf("M%s %sh%sv%sh-%sZ", f(x-r), f(y-r), f(2*r), f(2*r), f(2*r))
	case result.AnswerError:
		r *= 1.2
		s.D = fmt.Sprintf("M%s %sL%s %sL%s %sZ", f(x), f(y-r), f(x+r), f(y+r*0.8), f(x-r), f(y+r*0.8))
	default:
		r *= 1.2
		s.D = fmt.Sprintf("M%s %sL%s %sL%s %sL%s %sZ", f(x), f(y-r), f(x+r), f(y), f(x), f(y+r), f(x-r), f(y))
	}
	return s
}

func round(v float64) float64 { return math.Round(v*10) / 10 }

// laneKey is a lane: a user on an instance ("" for what concerns no one
// user: a configuration, a note).
type laneKey struct {
	user string
	inst int
}

// layout lays tl out as a chart; nil when it has no operation.
func layout(tl *result.Timeline, opt chartOptions) *timelineView {
	if tl == nil || len(tl.Ops) == 0 {
		return nil
	}
	v := &timelineView{ID: opt.id, Title: opt.title, Width: chartWidth, PlotLeft: gutter, PlotRight: chartWidth - rightPad, PlotTop: topPad}
	if opt.byUser {
		tl = &result.Timeline{Limit: tl.Limit, Window: tl.Window, Instances: 1, UserTag: tl.UserTag, Total: tl.Total, Ops: tl.Ops, ShrunkFrom: tl.ShrunkFrom}
	}
	lanes, laneOf := lanesOf(tl)
	lo, hi := span(tl.Ops, opt.band)
	x := func(t time.Duration) float64 {
		return round(v.PlotLeft + float64(t-lo)/float64(hi-lo)*(v.PlotRight-v.PlotLeft))
	}
	rows := placeMarks(v, tl, opt, x, lanes, laneOf)
	y := topPad
	for i, k := range lanes {
		h := float64(max(1, rows[i]))*rowH + laneGap
		v.Lanes = append(v.Lanes, laneView{Label: laneLabel(k, tl.Instances), Y: round(y), H: round(h), LabelY: round(y + h/2 + 4), Shade: i%2 == 1})
		y += h
	}
	v.PlotBottom, v.AxisY, v.Height = round(y), round(y+18), round(y+axisH)
	for i := range v.Marks { // from the lane's row to the page's
		m := &v.Marks[i]
		m.Y = round(v.Lanes[laneOf[m.Step]].Y + laneGap/2 + m.Y*rowH + rowH/2)
		m.Shape = shapeOf(result.Answer(m.Answer), (m.X+m.X2)/2, m.Y, markR)
		if m.Ghost != nil {
			g := shapeOf(result.Answer(m.Ghost.Answer), m.X2+2.6*markR, m.Y, markR*0.8)
			m.Ghost = &g
		}
	}
	v.Ticks = ticks(lo, hi, x)
	if !opt.realTime {
		v.Edges = edges(tl, lo, hi, x)
	}
	v.band(opt.band, x)
	v.wrong(opt)
	v.table(tl, opt, lanes, laneOf)
	v.describe(tl, opt, lanes)
	v.Legend = legendView{Unordered: v.Unordered > 0, Interval: opt.realTime, Edges: len(v.Edges) > 0, Band: v.Band != nil, Wrong: v.Wrong != nil,
		Ghost:     slices.ContainsFunc(v.Marks, func(m markView) bool { return m.Ghost != nil }),
		Undecided: slices.ContainsFunc(v.Marks, func(m markView) bool { return m.Undecided })}
	return v
}

// lanesOf lists the lanes of tl, the one of no user first, then in the
// order they first appear, and each operation's lane by its step.
func lanesOf(tl *result.Timeline) ([]laneKey, map[int]int) {
	var lanes []laneKey
	index := map[laneKey]int{}
	for _, o := range tl.Ops {
		k := laneKey{o.User, o.Instance}
		if o.User == "" {
			k.inst = 0
		}
		if _, ok := index[k]; !ok {
			index[k] = len(lanes)
			lanes = append(lanes, k)
		}
	}
	slices.SortStableFunc(lanes, func(a, b laneKey) int {
		return cmp.Compare(min(len(a.user), 1), min(len(b.user), 1))
	})
	for i, k := range lanes {
		index[k] = i
	}
	laneOf := map[int]int{}
	for _, o := range tl.Ops {
		k := laneKey{o.User, o.Instance}
		if o.User == "" {
			k.inst = 0
		}
		laneOf[o.Step] = index[k]
	}
	return lanes, laneOf
}

func laneLabel(k laneKey, instances int) string {
	switch {
	case k.user == "":
		return "every user"
	case instances > 1:
		return fmt.Sprintf("%s on #%d", shorten(k.user, 16), k.inst+1)
	}
	return shorten(k.user, 22)
}

// shorten cuts s to at most n runes, with an ellipsis.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// span is the interval the chart shows: every operation and the band,
// with a margin.
func span(ops []result.Op, band *Band) (time.Duration, time.Duration) {
	lo, hi := ops[0].At, ops[0].At
	for _, o := range ops {
		lo, hi = min(lo, o.At), max(hi, o.At, o.Until)
	}
	// The band shows what the model counted (the window of the wrong
	// answer): drawn whole, even where it puts the operations in a corner,
	// which is where they were.
	if band != nil {
		lo, hi = min(lo, band.From), max(hi, band.To)
	}
	if hi == lo {
		lo, hi = lo-time.Millisecond, hi+time.Millisecond
	}
	pad := (hi - lo) / 40
	return lo - pad, hi + pad
}

// placeMarks makes each operation's mark in v, its row within its lane
// (in Y, for now), and returns how many rows each lane needs: marks that
// would overlap on one row go on the next.
func placeMarks(v *timelineView, tl *result.Timeline, opt chartOptions, x func(time.Duration) float64, lanes []laneKey, laneOf map[int]int) []int {
	ends := make([][]float64, len(lanes)) // each row's rightmost pixel, per lane
	for _, o := range tl.Ops {
		x1, x2 := x(o.At), x(o.At)
		if opt.realTime && o.Until > o.At {
			x2 = x(o.Until)
		}
		m := markView{Step: o.Step, Kind: string(o.Kind), User: o.User, Count: o.Count, Answer: string(o.Answer()), X: x1, X2: x2,
			Wrong: o.Step == opt.step, Undecided: o.Undecided, Unordered: o.Unordered, Title: markTitle(o, opt)}
		if m.Wrong || m.Unordered {
			m.Ring = markR + 4
		}
		right := x2 + markR + 2
		if w := wantAnswer(o); w != "" {
			m.Ghost = &shape{Answer: string(w)}
			right += 2.6 * markR
		}
		lane := laneOf[o.Step]
		row := -1
		for r, end := range ends[lane] {
			if end < x1-markR-1 {
				row = r
				break
			}
		}
		if row < 0 && len(ends[lane]) < maxRows {
			row = len(ends[lane])
			ends[lane] = append(ends[lane], 0)
		}
		if row < 0 {
			row = maxRows - 1
		}
		ends[lane][row] = max(ends[lane][row], right)
		m.Y = float64(row)
		v.Marks = append(v.Marks, m)
	}
	rows := make([]int, len(lanes))
	for i := range ends {
		rows[i] = len(ends[i])
	}
	return rows
}

// wantAnswer is the model's answer to o when it differs from what came
// back, as a chart draws it ("" when they agree, or the model was not
// asked).
func wantAnswer(o result.Op) result.Answer {
	if agrees(o) {
		return ""
	}
	return result.Op{Got: o.Want}.Answer()
}

// agrees reports whether o's answer is the model's (or the model was not
// asked): one of its answers, or for a burst, its count of allowed.
func agrees(o result.Op) bool {
	for _, w := range strings.Split(o.Want, " or ") {
		if w == "" || o.Got == w || o.Kind == result.OpBurst && strings.HasPrefix(o.Got, w+",") {
			return true
		}
	}
	return false
}

// markTitle is what a mark says when pointed at: its step, instant, call,
// answer, and the model's.
func markTitle(o result.Op, opt chartOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "step %d at %s", o.Step, offset(o.At))
	if opt.realTime && o.Until > o.At {
		fmt.Fprintf(&b, " (answered at %s)", offset(o.Until))
	}
	fmt.Fprintf(&b, " on instance #%d: %s = %s", o.Instance+1, o.Op, o.Got)
	if !agrees(o) {
		fmt.Fprintf(&b, ", want %s", o.Want)
	}
	for _, n := range notes(o, opt) {
		b.WriteString("; " + n)
	}
	return b.String()
}

// notes say what is special about o.
func notes(o result.Op, opt chartOptions) []string {
	var out []string
	if o.Step == opt.step {
		out = append(out, "the first wrong answer")
	}
	if o.Unordered {
		out = append(out, "cannot be ordered: the model refuses it after the longest serial order found")
	}
	if o.Undecided {
		out = append(out, "undecided (too close to an edge)")
	}
	if o.Count > 1 {
		out = append(out, fmt.Sprintf("%d calls at once", o.Count))
	}
	return out
}

// offset shows an instant as the text timeline does: +60000ms, and
// fractions of a millisecond when there are.
func offset(d time.Duration) string {
	sign := "+"
	if d < 0 {
		sign, d = "-", -d
	}
	if d%time.Millisecond == 0 {
		return fmt.Sprintf("%s%dms", sign, d.Milliseconds())
	}
	return fmt.Sprintf("%s%.3fms", sign, float64(d)/float64(time.Millisecond))
}
