package htmlreport

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/rlconform/rlconform/internal/plural"
	"github.com/rlconform/rlconform/result"
)

// ticks are the axis's labelled instants: a round step, at most 7.
func ticks(lo, hi time.Duration, x func(time.Duration) float64) []tickView {
	step := niceStep(hi - lo)
	var out []tickView
	for t := (lo/step + 1) * step; t < hi && len(out) < 12; t += step {
		if lo < 0 && t < lo {
			continue
		}
		out = append(out, tickView{X: x(t), Label: offset(t)})
	}
	return out
}

// niceStep is the round step (1, 2 or 5 times a power of ten
// nanoseconds) that cuts d into at most 7 parts.
func niceStep(d time.Duration) time.Duration {
	step := time.Duration(1)
	for {
		for _, m := range []time.Duration{1, 2, 5} {
			if d/(step*m) <= 7 {
				return step * m
			}
		}
		step *= 10
	}
}

// edges are the x of the multiples of the window in force from the
// spec's start (where a fixed window aligned to the spec's start, or to
// the epoch on the fake clock, would turn over), when there are few.
func edges(tl *result.Timeline, lo, hi time.Duration, x func(time.Duration) float64) []float64 {
	w := tl.Window
	if n := len(tl.Ops); n > 0 && tl.Ops[n-1].Window > 0 {
		w = tl.Ops[n-1].Window
	}
	if w <= 0 || (hi-lo)/w > maxEdges {
		return nil
	}
	var out []float64
	for t := (lo/w - 1) * w; t <= hi; t += w {
		if t >= lo {
			out = append(out, x(t))
		}
	}
	return out
}

// band shades b, its label on the side with room.
func (v *timelineView) band(b *Band, x func(time.Duration) float64) {
	if b == nil {
		return
	}
	x1, x2 := max(v.PlotLeft, x(b.From)), min(v.PlotRight, x(b.To))
	if x2 < x1 {
		return
	}
	bv := &bandView{X: x1, W: round(max(1, x2-x1)), Label: b.Label, LabelX: x1 + 4, Anchor: "start"}
	if x1 > (v.PlotLeft+v.PlotRight)/2 {
		bv.LabelX, bv.Anchor = x2-4, "end"
	}
	v.Band = bv
}

// wrong marks the first wrong answer with a line across the lanes and a
// label.
func (v *timelineView) wrong(opt chartOptions) {
	for _, m := range v.Marks {
		if !m.Wrong {
			continue
		}
		w := &wrongView{X: m.Shape.CX, Y: m.Y, LabelY: topPad - 26, Anchor: "middle",
			Label: fmt.Sprintf("step %d: the first wrong answer", m.Step)}
		switch {
		case w.X < v.PlotLeft+120:
			w.Anchor = "start"
		case w.X > v.PlotRight-120:
			w.Anchor = "end"
		}
		v.Wrong = w
		return
	}
}

// table is the chart's text: every operation, a row each.
func (v *timelineView) table(tl *result.Timeline, opt chartOptions, lanes []laneKey, laneOf map[int]int) {
	for _, o := range tl.Ops {
		at := offset(o.At)
		if opt.realTime && o.Until > o.At {
			at += " … " + offset(o.Until)
		}
		lane := laneLabel(lanes[laneOf[o.Step]], tl.Instances)
		if o.User != "" {
			lane = o.User
			if tl.Instances > 1 {
				lane += fmt.Sprintf(" on #%d", o.Instance+1)
			}
		}
		v.Rows = append(v.Rows, rowView{Step: o.Step, At: at, Lane: lane, Op: o.Op, Got: o.Got, Want: o.Want,
			Note: strings.Join(notes(o, opt), "; "), Wrong: o.Step == opt.step, Unordered: o.Unordered})
		if o.Unordered {
			v.Unordered++
		}
	}
	v.OpenTable = len(v.Rows) <= 40
}

// describe writes the chart's description (its desc element and the
// caption): what it shows, and what went wrong where.
func (v *timelineView) describe(tl *result.Timeline, opt chartOptions, lanes []laneKey) {
	count := map[result.Answer]int{}
	calls := 0
	lo, hi := tl.Ops[0].At, tl.Ops[0].At
	for _, o := range tl.Ops {
		count[o.Answer()]++
		calls += o.Count
		lo, hi = min(lo, o.At), max(hi, o.At, o.Until)
	}
	clock := "on the fake clock"
	if opt.realTime {
		clock = "in real time, each from its call to its answer"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s on %s over %s, %s, from %s to %s", plural.Count(len(tl.Ops), "operation"), plural.Count(len(lanes), "lane"),
		plural.Count(max(tl.Instances, 1), "instance"), clock, offset(lo), offset(hi))
	if opt.from != "" {
		fmt.Fprintf(&b, " (since %s)", opt.from)
	}
	fmt.Fprintf(&b, ": %d allowed, %d denied, %d errors, %d other answers", count[result.AnswerAllowed], count[result.AnswerDenied],
		count[result.AnswerError], count[result.AnswerOther])
	if calls != len(tl.Ops) {
		fmt.Fprintf(&b, "; %s in all", plural.Count(calls, "call"))
	}
	b.WriteString(".")
	if tl.Total > len(tl.Ops) {
		fmt.Fprintf(&b, " %d of the spec's %d operations are shown, from step %d.", len(tl.Ops), tl.Total, tl.Ops[0].Step)
	}
	for _, o := range tl.Ops {
		if o.Step == opt.step {
			fmt.Fprintf(&b, " Step %d, %s at %s, answered %s where the model answers %s: the first wrong answer.", o.Step, o.Op, offset(o.At), o.Got, cmp.Or(o.Want, "otherwise"))
		}
	}
	if v.Unordered > 0 {
		fmt.Fprintf(&b, " %s cannot be ordered: after the longest serial order found, the model refuses each of them.", plural.Count(v.Unordered, "operation"))
	}
	if v.Band != nil {
		fmt.Fprintf(&b, " The shaded band is %s.", v.Band.Label)
	}
	v.Desc = b.String()
	v.Caption = v.Desc
}
