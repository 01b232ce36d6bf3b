package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/audit/accesslog"
	"github.com/rlconform/rlconform/bench"
	"github.com/rlconform/rlconform/model"
)

var start = time.Date(2024, 11, 27, 16, 32, 0, 0, time.UTC)

func nginxConfig(format string) Config {
	return Config{Format: "nginx", Log: accesslog.Options{LogFormat: format, User: "$http_x_user"}, Judge: bench.Judge{Limit: 5, Window: time.Second}}
}

func audit(t *testing.T, cfg Config, sources ...Source) *Result {
	t.Helper()
	res, err := Run(context.Background(), cfg, sources)
	require.NoError(t, err)
	var b strings.Builder
	res.Text(&b)
	t.Logf("\n%s", b.String())
	return res
}

func text(res *Result) string {
	var b strings.Builder
	res.Text(&b)
	return b.String()
}

// An exact limiter's log is explained, whatever the timing within each
// request, and its refusals decided: exit 0.
func TestAnExactLimitersLogIsExplained(t *testing.T) {
	s := &synth{r: rand.New(rand.NewPCG(1, 2)), at: start, gap: 5 * time.Millisecond, users: 3, decide: sliding(3, 5, time.Second)}
	res := audit(t, nginxConfig(accesslog.NginxFormat), memory("gw.log", s.log(20000)))
	assert.Equal(t, Verdict{0, Explained, "every admission and every refusal is explained by some timing of the requests"}, res.Verdict)
	st := res.Stream
	assert.Equal(t, int64(20000), st.Calls)
	assert.Equal(t, int64(3), st.Users)
	assert.Positive(t, st.Exactness.Decided)
	assert.Greater(t, st.UserWindows, int64(3*90), "about 100 seconds of each user")
	assert.Less(t, st.Kept, 20000, "the log is judged in parts")
	assert.Equal(t, time.Duration(0), st.Skew.Smallest)
	assert.Nil(t, res.Overshoot)
}

// A fixed window of the epoch lets 2N through across each edge: exit 1,
// with the requests of the worst window and their log lines.
func TestAFixedWindowIsFailedWithItsLines(t *testing.T) {
	s := &synth{r: rand.New(rand.NewPCG(3, 4)), at: start, gap: 5 * time.Millisecond, users: 3, decide: fixedWindow(3, 5, time.Second)}
	log := s.log(20000)
	res := audit(t, nginxConfig(accesslog.NginxFormat), memory("gw.log", gz(log)))
	require.Equal(t, 1, res.Verdict.Code, res.Verdict.Why)
	assert.Equal(t, Wrong, res.Verdict.Outcome)
	require.NotNil(t, res.Overshoot)
	lines := strings.Split(string(log), "\n")
	w := res.Stream.Exactness.Worst
	require.Len(t, res.Overshoot.Lines, w.Allowed)
	for _, l := range res.Overshoot.Lines {
		assert.Equal(t, "gw.log", l.File)
		assert.Equal(t, lines[l.Line-1], l.Text, "the evidence is the log's line")
		assert.Contains(t, l.Text, `" 200 `)
		assert.Contains(t, l.Text, `"`+w.UserID+`"`)
	}
	assert.Greater(t, w.Allowed, 5)
	out := text(res)
	assert.Contains(t, out, "verdict     WRONG (exit 1): ")
	assert.Contains(t, out, "worst window: user ")
	assert.Contains(t, out, "gw.log:")
	assert.True(t, res.Stream.Skew.Explained)
	assert.Positive(t, res.Stream.Skew.Smallest)

	// Judged as the fixed window it is, the same log is explained.
	cfg := nginxConfig(accesslog.NginxFormat)
	cfg.Judge.Profile = model.MustVariant("fixed-window:align=epoch")
	assert.Equal(t, 0, audit(t, cfg, memory("gw.log", log)).Verdict.Code)
}

// Whole seconds ($time_local alone) against a window of a second: no
// refusal can be decided, so the audit is undecided (exit 2), and says
// why; a minute's window is decided.
func TestWholeSecondsAgainstASecondAreUndecided(t *testing.T) {
	s := &synth{r: rand.New(rand.NewPCG(5, 6)), at: start, gap: 5 * time.Millisecond, users: 3, decide: sliding(3, 5, time.Second), coarse: true}
	res := audit(t, nginxConfig(coarseFormat), memory("gw.log", s.log(5000)))
	assert.Equal(t, 2, res.Verdict.Code)
	assert.Contains(t, res.Verdict.Why, "the intervals are too wide to tell")
	assert.Contains(t, text(res), "$time_local has whole seconds")
	assert.GreaterOrEqual(t, res.Stream.Widths.P50, time.Second)

	s = &synth{r: rand.New(rand.NewPCG(5, 6)), at: start, gap: 50 * time.Millisecond, users: 3, decide: sliding(3, 50, time.Minute), coarse: true}
	cfg := nginxConfig(coarseFormat)
	cfg.Judge = bench.Judge{Limit: 50, Window: time.Minute}
	res = audit(t, cfg, memory("gw.log", s.log(20000)))
	assert.Equal(t, 0, res.Verdict.Code, res.Verdict.Why)
}

// With the default settling time, a log written out of order is judged
// as it is: lines shuffled by up to 2s, or written by two workers, one
// of them flushing its buffer every 5s, are explained, the settling time adapted
// to the disorder seen (twice it), never 30s of every user's requests; a
// line written 40s late is never taken for a failure (it may make a
// refusal it explains not proven, exit 2).
func TestAnOutOfOrderLogIsJudgedWithTheDefaults(t *testing.T) {
	const flush = 5 * time.Second
	for _, tc := range []struct {
		name      string
		late      func(r *rand.Rand, i int, at time.Time) time.Duration
		lateness  time.Duration // at least
		explained bool
	}{
		{"shuffled by up to 2s", func(r *rand.Rand, _ int, _ time.Time) time.Duration {
			return time.Duration(r.Int64N(int64(2 * time.Second)))
		}, 1900 * time.Millisecond, true},
		{"two workers, one flushing every 5s", func(r *rand.Rand, i int, at time.Time) time.Duration {
			if r.IntN(2) == 0 {
				return 0
			}
			return at.Truncate(flush).Add(flush).Sub(at)
		}, 4 * time.Second, true},
		{"a line 40s late", func(_ *rand.Rand, i int, _ time.Time) time.Duration {
			return time.Duration(b2i(i == 5000)) * 40 * time.Second
		}, 39 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(31, 32))
			s := &synth{r: rand.New(rand.NewPCG(33, 34)), at: start, gap: time.Millisecond, users: 50, decide: sliding(50, 5, time.Second)}
			res := audit(t, nginxConfig(accesslog.NginxFormat), memory("gw.log", s.disordered(60_000, func(i int, at time.Time) time.Duration { return tc.late(r, i, at) })))
			st := res.Stream
			assert.NotEqual(t, 1, res.Verdict.Code, "never a failure: %s", res.Verdict.Why)
			if tc.explained {
				assert.Equal(t, 0, res.Verdict.Code, res.Verdict.Why)
			} else if res.Verdict.Code == 2 {
				assert.Contains(t, res.Verdict.Why, "not proven")
			}
			assert.True(t, st.Adaptive)
			assert.GreaterOrEqual(t, st.Lateness, tc.lateness)
			assert.Equal(t, min(max(2*st.Lateness, bench.MinSettle), bench.DefaultSettle), st.Settle)
			assert.Contains(t, text(res), fmt.Sprintf("settle      %v, adaptive", st.Settle))
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// No refusal in the log: nothing put the limit to the test (exit 2).
func TestALogWithoutRefusalsIsNotExercised(t *testing.T) {
	s := &synth{r: rand.New(rand.NewPCG(7, 8)), at: start, gap: time.Second, users: 3, decide: sliding(3, 5, time.Second)}
	res := audit(t, nginxConfig(accesslog.NginxFormat), memory("gw.log", s.log(100)))
	assert.Equal(t, Verdict{2, Undecided, "not exercised: no request was refused, so the limit was never put to the test"}, res.Verdict)
}

// Two gateways in front of one limiter: their logs merged in the order
// their requests ended are explained; either alone is not exercised as
// a whole, and a skew between their clocks is explained by a bound of it.
func TestTwoGatewaysAreMerged(t *testing.T) {
	decide := sliding(4, 5, time.Second)
	a := &synth{r: rand.New(rand.NewPCG(9, 10)), at: start, gap: 10 * time.Millisecond, users: 4, decide: decide}
	b := &synth{r: rand.New(rand.NewPCG(11, 12)), at: start, gap: 10 * time.Millisecond, users: 4, decide: decide}
	var la, lb []byte
	for range 5000 {
		// The limiter decides the two gateways' requests in turn.
		if a.at.Before(b.at) {
			la = a.line(la)
		} else {
			lb = b.line(lb)
		}
	}
	res := audit(t, nginxConfig(accesslog.NginxFormat), memory("a.log", la), memory("b.log", lb))
	assert.Equal(t, 0, res.Verdict.Code, res.Verdict.Why)
	assert.Len(t, res.Files, 2)
	assert.Equal(t, int64(5000), res.Stream.Calls)
	alone := audit(t, nginxConfig(accesslog.NginxFormat), memory("a.log", la))
	assert.Equal(t, 1, alone.Verdict.Code, "one gateway's log alone has the denials the other's admissions explain")
}

// Lines that do not fit are skipped with their reason and first line;
// a log cut short is read to the cut.
func TestSkippedLinesAndCuts(t *testing.T) {
	s := &synth{r: rand.New(rand.NewPCG(13, 14)), at: start, gap: 5 * time.Millisecond, users: 2, decide: sliding(2, 5, time.Second)}
	log := append([]byte("garbage\n"), s.log(3000)...)
	log = append(log, strings.Repeat("x", 70000)+"\n"...)
	res := audit(t, nginxConfig(accesslog.NginxFormat), memory("gw.log", log))
	f := res.Files[0]
	assert.Equal(t, &SkipCount{Lines: 1, First: 1}, f.Skipped["not in the log format given"])
	assert.Equal(t, int64(1), f.TooLong)
	out := text(res)
	assert.Contains(t, out, "skipped     1 line: 1 not in the log format given (first: gw.log:1)")
	assert.Contains(t, out, "warning     gw.log: 1 line longer than 64 KiB skipped")

	// Cut in its middle, the last line read is cut too (skipped).
	cut := gz(log)
	res = audit(t, nginxConfig(accesslog.NginxFormat), memory("gw.log.gz", cut[:len(cut)/2]))
	assert.NotEmpty(t, res.Files[0].Cut)
	assert.Contains(t, text(res), "warning     gw.log.gz: after line ")
	assert.Less(t, res.Lines, int64(3000))
}

// A bad configuration is an error, before anything is read.
func TestRunRefusesWhatItCannotJudge(t *testing.T) {
	src := memory("gw.log", nil)
	for name, cfg := range map[string]Config{
		"no format":   {Format: "apache", Judge: bench.Judge{Limit: 1, Window: time.Second}},
		"no $msec":    nginxConfig(`$status $http_x_user`),
		"no limit":    {Format: "csv", Judge: bench.Judge{Window: time.Second}},
		"a bad skew":  {Format: "csv", Judge: bench.Judge{Limit: 1, Window: time.Second}, ClockSkew: 2 * time.Hour},
		"bad profile": {Format: "csv", Judge: bench.Judge{Limit: 1, Window: time.Second, Profile: model.Variant{Name: "nope"}}},
	} {
		_, err := Run(context.Background(), cfg, []Source{src})
		assert.Error(t, err, name)
	}
	_, err := Run(context.Background(), nginxConfig(accesslog.NginxFormat), nil)
	assert.Error(t, err)
}

// An interrupted audit returns what it read, marked, and the context's
// error.
func TestAnInterruptedAuditKeepsWhatItRead(t *testing.T) {
	s := &synth{r: rand.New(rand.NewPCG(15, 16)), at: start, gap: 5 * time.Millisecond, users: 2, decide: sliding(2, 5, time.Second)}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, nginxConfig(accesslog.NginxFormat), []Source{memory("gw.log", s.log(3*checkEvery))})
	assert.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, res)
	assert.True(t, res.Interrupted)
	assert.Equal(t, 2, res.Verdict.Code)
	assert.Less(t, res.Lines, int64(3*checkEvery))
}

// The result is data: JSON carries the verdict, the counts and the
// evidence.
func TestTheResultIsJSON(t *testing.T) {
	s := &synth{r: rand.New(rand.NewPCG(3, 4)), at: start, gap: 5 * time.Millisecond, users: 3, decide: fixedWindow(3, 5, time.Second)}
	res := audit(t, nginxConfig(accesslog.NginxFormat), memory("gw.log", s.log(3000)))
	b, err := json.Marshal(res)
	require.NoError(t, err)
	var back map[string]any
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, "wrong", back["verdict"].(map[string]any)["outcome"])
	assert.NotEmpty(t, back["overshoot_evidence"].(map[string]any)["lines"])
	assert.Equal(t, float64(3000), back["judged"].(map[string]any)["calls"])
}

// Standard input is read once: the evidence names its lines without
// their text.
func TestStdinEvidenceHasNoText(t *testing.T) {
	s := &synth{r: rand.New(rand.NewPCG(3, 4)), at: start, gap: 5 * time.Millisecond, users: 3, decide: fixedWindow(3, 5, time.Second)}
	log := s.log(3000)
	src := Source{Name: "-", Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(log)), nil }}
	res := audit(t, nginxConfig(accesslog.NginxFormat), src)
	require.NotNil(t, res.Overshoot)
	assert.Empty(t, res.Overshoot.Lines[0].Text)
	assert.Contains(t, text(res), "(not read again)")
}

// Requests with the same instants and other answers: the evidence names
// each allowed request's own line.
func TestEvidenceMatchesEachRequestsLine(t *testing.T) {
	var log strings.Builder
	for i := range 12 {
		status := 200
		if i%2 == 1 {
			status = 429
		}
		log.WriteString(fmt.Sprintf("10.0.0.1 [27/Nov/2024:16:32:00 +0000] \"GET /api HTTP/1.1\" %d 12 1732725120.100 0.010 \"alice\"\n", status))
	}
	res := audit(t, nginxConfig(accesslog.NginxFormat), memory("gw.log", []byte(log.String())))
	require.NotNil(t, res.Overshoot)
	require.Len(t, res.Overshoot.Lines, 6)
	for _, l := range res.Overshoot.Lines {
		assert.Contains(t, l.Text, `" 200 `, "line %d", l.Line)
		assert.Equal(t, int64(1), l.Line%2, "the odd lines are the allowed ones")
	}
}
