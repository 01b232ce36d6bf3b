package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/mutants"
)

// requireChromium, set to any value, makes the browser tests fail rather
// than skip when no chromium is on PATH (.ci/run sets it once make test
// has installed Debian's chromium).
const requireChromium = "RLCONFORM_REQUIRE_CHROMIUM"

// chromium is the path of Debian's chromium, or the test skips (fails
// with RLCONFORM_REQUIRE_CHROMIUM set), saying how to get it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	why := "no chromium on PATH: apt-get install -y chromium (make test installs it when run as root)"
	if os.Getenv(requireChromium) != "" {
		t.Fatalf("%s, and %s is set", why, requireChromium)
	}
	t.Skipf("skipped: %s; %s=1 makes this a failure", why, requireChromium)
	return ""
}

// artifacts is the directory the test keeps what it made in, for people
// to look at: $RLCONFORM_ARTIFACTS/name, or the temporary directory's
// rlconform-artifacts/name. It is emptied first, and kept after the test.
func artifacts(t *testing.T, name string) string {
	t.Helper()
	base := os.Getenv("RLCONFORM_ARTIFACTS")
	if base == "" {
		base = filepath.Join(os.TempDir(), "rlconform-artifacts")
	}
	dir := filepath.Join(base, name)
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// countingTarget serves the fixed-window-epoch mutant over protocol v1,
// with clock control, and counts the calls it gets for each user id.
func countingTarget(t *testing.T) (string, func(prefix string) int) {
	t.Helper()
	clock := fakeclock.New(time.Now())
	lim, err := mutants.FixedWindowEpoch(mutants.Store{Redis: store.Client, Clock: clock, Prefix: fmt.Sprintf("rlc-cli-html:%d:", time.Now().UnixNano()), MaxRequests: 5, Window: time.Minute})
	require.NoError(t, err)
	protocol := adapters.Handler(lim, clock)
	var mu sync.Mutex
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			User string `json:"user_id"`
		}
		if r.Body != nil && r.Method == http.MethodPost {
			raw, _ := readAll(r)
			if json.Unmarshal(raw, &body) == nil && body.User != "" {
				mu.Lock()
				calls[body.User]++
				mu.Unlock()
			}
		}
		protocol.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func(prefix string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for u, c := range calls {
			if strings.HasPrefix(u, prefix) {
				n += c
			}
		}
		return n
	}
}

// TestHTMLReportInABrowser grades a mutant that fails
// strict/boundary-burst-epoch, writes --html and --json, and opens the
// page in Debian's chromium (headless, driven by chromedp) in light and
// dark colour schemes, at 1280 and 360 CSS pixels wide: the page loads
// with no console error (its own policy refuses anything it would load,
// and a refusal is an error), the failing spec's timeline is visible, its
// marks count the calls the target got for the spec's users (and the
// JSON's operations), the body never scrolls sideways, the text and
// every mark stand out from the background, and each view's screenshot
// is kept in the artifacts directory the log names.
func TestHTMLReportInABrowser(t *testing.T) {
	testtier.SkipShort(t, "drives a browser")
	browser := chromium(t)
	dir := artifacts(t, "html-report")
	url, sent := countingTarget(t)
	page, js := filepath.Join(dir, "report.html"), filepath.Join(dir, "report.json")
	code, out, errOut := rlconform(t, "run", "--target", url, "--id", "strict/boundary-burst-epoch,core/reset", "--html", page, "--json", js)
	require.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)

	tag, ops := failingTimeline(t, js, "strict/boundary-burst-epoch")
	require.Positive(t, sent(tag), "the target got the spec's calls")
	ctx := openBrowser(t, browser)
	assertCaught(t, ctx, dir)
	for _, v := range []struct {
		scheme string
		width  int64
	}{{"light", 1280}, {"dark", 1280}, {"light", 360}, {"dark", 360}} {
		t.Run(fmt.Sprintf("%s-%d", v.scheme, v.width), func(t *testing.T) {
			got, errs := view(t, ctx, page, v.scheme, v.width)
			t.Logf("measured: %+v; the target got %d calls for the spec's users", got, sent(tag))
			assert.Empty(t, errs, "console errors")
			assert.True(t, got.Visible, "the failing spec's timeline is visible: %+v", got)
			assert.Equal(t, ops, got.Marks, "a mark per operation of the JSON's timeline")
			assert.Equal(t, got.DataMarks, got.Marks)
			assert.Equal(t, sent(tag), got.UserCalls, "the marks count the calls the target got for the spec's users")
			assert.LessOrEqual(t, got.ScrollWidth, got.InnerWidth, "the page body never scrolls sideways")
			if v.scheme == "dark" {
				assert.Less(t, got.BgLuminance, 0.1, "a dark background: %s", got.Bg)
			} else {
				assert.Greater(t, got.BgLuminance, 0.8, "a light background: %s", got.Bg)
			}
			assert.GreaterOrEqual(t, got.TextContrast, 7.0, "text against the background (WCAG AAA is 7:1)")
			for answer, c := range got.MarkContrast {
				assert.GreaterOrEqual(t, c, 3.0, "%s marks against the background and the shaded lanes (WCAG non-text 3:1)", answer)
			}
			assert.Subset(t, keys(got.MarkContrast), []string{"allowed", "denied"})
			shot := filepath.Join(dir, fmt.Sprintf("%s-%d.png", v.scheme, v.width))
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: a PNG
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(shot, png, 0o644))
			t.Logf("screenshot: %s", shot)
		})
	}
	t.Logf("the report and its screenshots are kept in %s", dir)
}

// failingTimeline reads the JSON report at path: the user tag of spec's
// failure, and how many operations its timeline holds.
func failingTimeline(t *testing.T, path, spec string) (string, int) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var rep struct {
		Results []struct {
			ID      string
			Failure *struct {
				Timeline *struct {
					UserTag string `json:"user_tag"`
					Total   int
					Ops     []json.RawMessage
				}
			}
		}
	}
	require.NoError(t, json.Unmarshal(raw, &rep))
	for _, r := range rep.Results {
		if r.ID == spec {
			require.NotNil(t, r.Failure, "%s failed", spec)
			require.NotNil(t, r.Failure.Timeline, "%s's failure has its timeline", spec)
			tl := r.Failure.Timeline
			require.Equal(t, tl.Total, len(tl.Ops))
			require.NotEmpty(t, tl.UserTag)
			return tl.UserTag, len(tl.Ops)
		}
	}
	t.Fatalf("no result of %s in %s", spec, path)
	return "", 0
}

func keys(m map[string]float64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
