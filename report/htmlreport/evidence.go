package htmlreport

import (
	"fmt"
	"strings"

	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/result"
)

// detail is the evidence of r, the i-th result of rep, shown as s.
func detail(rep *result.Report, r result.Result, i int, s specView, meta report.Meta) detailView {
	d := detailView{ID: r.ID, Anchor: s.Anchor, Class: s.Class, Word: s.Word, Summary: specText(r),
		Reproduce: reproduce(rep, r, meta), Message: strings.TrimRight(r.Message, "\n")}
	f := r.Failure
	if f == nil {
		return d
	}
	d.Hint = f.Hint
	if len(f.Explained) > 0 {
		d.Explained = strings.Join(f.Explained, "; or ")
	}
	step := 0
	if f.Kind == result.KindWrongAnswer || f.Kind == result.KindTargetError || f.Kind == result.KindPanic {
		step = f.Step
	}
	if tl := f.Timeline; tl != nil {
		title := "Timeline of " + r.ID
		if tl.ShrunkFrom > 0 {
			title = "The shrunk schedule of " + r.ID
			d.Shrunk = fmt.Sprintf("Of a schedule of %d operations that went wrong, these %d are the fewest that still do: replay them in order (the table lists them) against your limiter.",
				tl.ShrunkFrom, len(tl.Ops))
		}
		d.Timeline = layout(tl, chartOptions{id: fmt.Sprintf("tl-%d", i+1), title: title, realTime: r.Mode == result.RealTime,
			step: step, band: windowOf(tl, step, r.Mode == result.RealTime), from: "the spec's start"})
	}
	if h := f.History; h != nil {
		d.History = layout(h, chartOptions{id: fmt.Sprintf("hist-%d", i+1), realTime: true, byUser: true, from: "the history's first call",
			title: "The concurrent history of " + r.ID + ": the operations that cannot be ordered"})
	}
	return d
}

// windowOf is the band of the window the model counted at step: (t-W, t]
// for its instant t (in real time, for every t from its call to its
// answer); nil when there is no such step.
func windowOf(tl *result.Timeline, step int, realTime bool) *Band {
	for _, o := range tl.Ops {
		if o.Step != step || step == 0 {
			continue
		}
		w := o.Window
		if w <= 0 {
			w = tl.Window
		}
		if w <= 0 {
			return nil
		}
		to := o.At
		if realTime && o.Until > o.At {
			to = o.Until
		}
		return &Band{From: o.At - w, To: to, Label: fmt.Sprintf("the window of step %d: (%s, %s]", step, offset(o.At-w), offset(to))}
	}
	return nil
}

// reproduce is the command that grades the spec of r again: meta's, or
// one from the report (without the target's flags, which it does not
// know), with the spec's id.
func reproduce(rep *result.Report, r result.Result, meta report.Meta) string {
	if meta.Reproduce != "" {
		return meta.Reproduce + " --id " + r.ID
	}
	return fmt.Sprintf("rlconform run --seed %d --level %s --profile %s --id %s", rep.Seed, rep.Level, rep.Profile, r.ID)
}
