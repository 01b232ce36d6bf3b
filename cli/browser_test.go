package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readAll reads r's body, at most 1 MiB, and leaves it to be read again.
func readAll(r *http.Request) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	r.Body = io.NopCloser(bytes.NewReader(raw))
	return raw, err
}

// openBrowser starts chromium at path, headless, with a fresh profile and
// nothing that reaches for the network on its own (background networking,
// component updates, sync, QUIC: a closed network refuses them, and the
// page must load nothing), for at most two minutes; it stops with the
// test.
func openBrowser(t *testing.T, path string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	ctx, stopAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(stopAlloc)
	ctx, stop := chromedp.NewContext(ctx)
	t.Cleanup(stop)
	_, err := chromedp.Run(ctx, chromedp.Title()) // starts the browser
	require.NoError(t, err, "starting %s", path)
	return ctx
}

// consoleErrors collects what the page writes as an error: console.error,
// an uncaught exception, and the browser log's errors (a resource the
// page's policy refused, a failed load).
type consoleErrors struct {
	mu   sync.Mutex
	errs []string
}

func (c *consoleErrors) listen(ctx context.Context) error {
	return chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				msg = "console.error"
				for _, a := range ev.Args {
					msg += " " + string(a.Value) + a.Description
				}
			}
		case *runtime.EventExceptionThrown:
			msg = "exception: " + ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				msg += " " + ev.ExceptionDetails.Exception.Description
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError {
				msg = string(ev.Entry.Source) + ": " + ev.Entry.Text
			}
		}
		if msg != "" {
			c.mu.Lock()
			c.errs = append(c.errs, msg)
			c.mu.Unlock()
		}
	})
}

func (c *consoleErrors) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.errs
	c.errs = nil
	return out
}

// pageView is what a view of the report measures in the browser.
type pageView struct {
	Visible                bool
	Marks, DataMarks       int
	UserCalls              int
	ScrollWidth            int
	InnerWidth             int
	Bg                     string
	BgLuminance            float64
	TextContrast           float64
	MarkContrast           map[string]float64
	SpecHeading, Timelines int
}

// measure is the script that measures a view, in the page (chromedp
// evaluates it; the page itself runs none).
const measure = `(() => {
  const rgb = c => c.match(/[\d.]+/g).slice(0, 3).map(Number);
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    const [r, g, b] = rgb(c); return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const contrast = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const bg = getComputedStyle(document.body).backgroundColor, fg = getComputedStyle(document.body).color;
  const shaded = document.querySelector('rect.lane.shade');
  const backs = shaded ? [bg, getComputedStyle(shaded).fill] : [bg];
  const fig = document.querySelector('#spec-strict-boundary-burst-epoch figure.timeline');
  const svg = fig && fig.querySelector('svg.chart');
  const box = svg ? svg.getBoundingClientRect() : null;
  const style = svg ? getComputedStyle(svg) : null;
  const marks = fig ? [...fig.querySelectorAll('g.mark')] : [];
  const markContrast = {};
  for (const m of marks) {
    const fill = getComputedStyle(m.querySelector('.shape')).fill;
    const worst = Math.min(...backs.map(b => contrast(fill, b)));
    markContrast[m.dataset.answer] = Math.min(markContrast[m.dataset.answer] ?? Infinity, worst);
  }
  return {
    Visible: !!box && box.width > 100 && box.height > 50 && style.display !== 'none' && style.visibility === 'visible',
    Marks: marks.length, DataMarks: fig ? Number(fig.dataset.marks) : -1,
    UserCalls: marks.filter(m => m.dataset.user !== '').reduce((n, m) => n + Number(m.dataset.count), 0),
    ScrollWidth: document.documentElement.scrollWidth, InnerWidth: window.innerWidth,
    Bg: bg, BgLuminance: lum(bg), TextContrast: contrast(fg, bg), MarkContrast: markContrast,
    SpecHeading: document.querySelectorAll('#spec-strict-boundary-burst-epoch h3').length,
    Timelines: document.querySelectorAll('figure.timeline').length,
  };
})()`

// view opens page in the browser of ctx in a colour scheme, at a width
// (a phone's below 600 CSS pixels), and returns what it measures and the
// errors the page wrote while loading.
func view(t *testing.T, ctx context.Context, page, scheme string, width int64) (pageView, []string) {
	t.Helper()
	var errs consoleErrors
	require.NoError(t, errs.listen(ctx))
	viewport := []chromedp.EmulateViewportOption{}
	if width < 600 {
		viewport = append(viewport, chromedp.EmulateMobile)
	}
	_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(width, 900, viewport...), chromedp.Navigate("file://"+page)))
	got, err := chromedp.Run(ctx, chromedp.Evaluate[pageView](measure))
	require.NoError(t, err)
	assert.Equal(t, 1, got.SpecHeading, "the failing spec has its section")
	return got, errs.take()
}

// assertCaught checks the check: a page that breaks its own policy (a
// style attribute, an image from the network) and throws is seen to
// write errors, so that a report that did would fail the test.
func assertCaught(t *testing.T, ctx context.Context, dir string) {
	t.Helper()
	bad := filepath.Join(dir, "policy-check.html")
	require.NoError(t, os.WriteFile(bad, []byte(`<!DOCTYPE html><html><head>`+
		`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'">`+
		`</head><body><p style="color:red">x</p><img src="http://192.0.2.1/x.png" alt="">`+
		`<script>throw new Error("caught")</script></body></html>`), 0o644))
	var errs consoleErrors
	require.NoError(t, errs.listen(ctx))
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("file://"+bad)))
	deadline := time.Now().Add(10 * time.Second)
	var seen []string
	for len(seen) < 3 && time.Now().Before(deadline) {
		seen = append(seen, errs.take()...)
		if len(seen) < 3 {
			_, _ = chromedp.Run(ctx, chromedp.Title()) // a round trip, for the events to arrive
		}
	}
	require.GreaterOrEqual(t, len(seen), 3, "the policy's refusals and the exception are seen: %q", seen)
	// Whatever the page still writes comes before the next page loads.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")))
}
