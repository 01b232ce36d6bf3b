package bench

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// WriteSVG draws the run as a self-contained SVG (no script, nothing
// loaded from the network), in three panels over time: latency (p50, p99
// and max of each bucket, log scale); decisions and allowed requests per
// second; and the most allowed requests of one user surely inside the
// window ending then, against the limit (a limiter that keeps it never
// rises above the line).
func (r *Result) WriteSVG(w io.Writer) error {
	if len(r.Series) == 0 {
		return fmt.Errorf("no decisions to draw")
	}
	bucket := time.Second
	if len(r.Series) > 1 {
		bucket = r.Series[1].At - r.Series[0].At
	}
	x := func(b Bucket) float64 { return (b.At + min(bucket, r.Elapsed-b.At)/2).Seconds() }
	// The last bucket may be cut short by the end of the run.
	perSecond := func(b Bucket, n int) float64 {
		return float64(n) / max(time.Millisecond, min(bucket, r.Elapsed-b.At)).Seconds()
	}
	red, orange, blue := color.RGBA{R: 214, G: 39, B: 40, A: 255}, color.RGBA{R: 255, G: 127, B: 14, A: 255}, color.RGBA{R: 31, G: 119, B: 180, A: 255}
	green, grey := color.RGBA{G: 128, A: 255}, color.RGBA{R: 127, G: 127, B: 127, A: 255}

	title := fmt.Sprintf("latency per %v (%s, %d callers)", bucket, r.Mode, r.Concurrency)
	if r.Mode == "recorded" {
		title = fmt.Sprintf("latency per %v (%s)", bucket, r.Source)
	}
	lat := newPlot(title, "ms, log scale")
	lat.Y.Scale = plot.LogScale{}
	lat.Y.Tick.Marker = logTicks{}
	top := 0.0
	for _, s := range []struct {
		name  string
		of    func(Bucket) time.Duration
		color color.RGBA
	}{
		{"max", func(b Bucket) time.Duration { return b.Max }, red},
		{"p99", func(b Bucket) time.Duration { return b.P99 }, orange},
		{"p50", func(b Bucket) time.Duration { return b.P50 }, blue},
	} {
		var pts plotter.XYs
		for _, b := range r.Series {
			if b.Decisions+b.Errors > 0 {
				// The log scale needs a positive value.
				y := max(0.001, float64(s.of(b))/1e6)
				pts = append(pts, plotter.XY{X: x(b), Y: y})
				top = max(top, y)
			}
		}
		if err := addLine(lat, s.name, pts, s.color, false); err != nil {
			return err
		}
	}
	lat.Y.Max = top * 4 // room for the legend

	rate := newPlot("decisions and allowed requests", "per second")
	var decided, allowed, busy, limit plotter.XYs
	for _, b := range r.Series {
		decided = append(decided, plotter.XY{X: x(b), Y: perSecond(b, b.Decisions)})
		allowed = append(allowed, plotter.XY{X: x(b), Y: perSecond(b, b.Allowed)})
		busy = append(busy, plotter.XY{X: x(b), Y: float64(b.Busiest)})
		limit = append(limit, plotter.XY{X: x(b), Y: float64(r.Limit)})
	}
	if err := addLine(rate, "decisions/s", decided, grey, false); err != nil {
		return err
	}
	if err := addLine(rate, "allowed/s", allowed, green, false); err != nil {
		return err
	}
	headroom(rate, decided)

	window := newPlot(fmt.Sprintf("allowed in the last %v: the busiest user against the limit", r.Window), "requests")
	if err := addLine(window, fmt.Sprintf("limit N = %d", r.Limit), limit, red, true); err != nil {
		return err
	}
	if err := addLine(window, "busiest user", busy, green, false); err != nil {
		return err
	}
	headroom(window, append(busy, limit...))

	canvas := vgsvg.New(10*vg.Inch, 11*vg.Inch)
	pad := 2 * vg.Millimeter
	tiles := draw.Tiles{Rows: 3, Cols: 1, PadY: 5 * vg.Millimeter, PadTop: pad, PadBottom: pad, PadLeft: pad, PadRight: pad}
	plots := [][]*plot.Plot{{lat}, {rate}, {window}}
	canvases := plot.Align(plots, tiles, draw.New(canvas))
	for i, row := range plots {
		row[0].Draw(canvases[i][0])
	}
	if _, err := canvas.WriteTo(w); err != nil {
		return fmt.Errorf("writing the chart: %w", err)
	}
	return nil
}

func newPlot(title, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds since the start"
	p.Y.Label.Text = y
	p.Y.Tick.Marker = plainTicks{}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	return p
}

// headroom starts the y axis at 0 and leaves room above pts for the legend.
func headroom(p *plot.Plot, pts plotter.XYs) {
	top := 1.0
	for _, pt := range pts {
		top = max(top, pt.Y)
	}
	p.Y.Min, p.Y.Max = 0, top*1.35
}

// plainTicks are gonum's default ticks labelled without trailing zeros.
type plainTicks struct{}

// Ticks implements plot.Ticker.
func (plainTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i, t := range ticks {
		if t.Label != "" {
			ticks[i].Label = strconv.FormatFloat(t.Value, 'f', -1, 64)
		}
	}
	return ticks
}

// logTicks label 1, 2 and 5 times each power of ten.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for p := math.Floor(math.Log10(min)); p <= math.Ceil(math.Log10(max)); p++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, p)
			if v >= min && v <= max {
				ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
			}
		}
	}
	return ticks
}

func addLine(p *plot.Plot, name string, pts plotter.XYs, c color.RGBA, dashed bool) error {
	if len(pts) == 0 {
		return nil
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return fmt.Errorf("chart %s: %w", name, err)
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	}
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}
