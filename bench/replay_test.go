package bench

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A user denied with nothing allowed in the whole run: no clock explains
// it, and the report says so.
func TestReplayNoSkewExplainsADenialWithNothingAllowed(t *testing.T) {
	at := time.Duration(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	rec := &Recording{Source: "test", UserIDs: []string{"u"},
		Decisions: []Decision{{User: 0, Outcome: Denied, Sent: at, Returned: at + time.Millisecond}},
		Latency:   []time.Duration{time.Millisecond}}
	res, err := Replay{Judge: Judge{Limit: 1, Window: time.Second}}.Run(rec)
	require.NoError(t, err)
	require.True(t, res.Failed())
	assert.False(t, res.Skew.Explained)
	var b strings.Builder
	res.Text(&b)
	assert.Contains(t, b.String(), "no skew up to 1.001s explains the decisions: the limiter is wrong whatever the clocks")
}

func TestReplayRejectsWhatItCannotJudge(t *testing.T) {
	one := func() *Recording {
		return &Recording{UserIDs: []string{"u"}, Decisions: []Decision{{Outcome: Allowed, Sent: 1, Returned: 2}}, Latency: []time.Duration{1}}
	}
	j := Judge{Limit: 1, Window: time.Second}
	for name, c := range map[string]struct {
		rp  Replay
		rec *Recording
	}{
		"no decision":       {Replay{Judge: j}, &Recording{}},
		"latencies missing": {Replay{Judge: j}, &Recording{UserIDs: []string{"u"}, Decisions: one().Decisions}},
		"a negative skew":   {Replay{Judge: j, ClockSkew: -1}, one()},
		"no limit":          {Replay{Judge: Judge{Window: time.Second}}, one()},
		"an unnamed user":   {Replay{Judge: j}, &Recording{Decisions: one().Decisions, Latency: one().Latency}},
		// 2562047h is the longest time.Duration: widening by it wrapped.
		"a skew of 2562047h":  {Replay{Judge: j, ClockSkew: 2562047 * time.Hour}, one()},
		"a skew over an hour": {Replay{Judge: j, ClockSkew: MaxClockSkew + 1}, one()},
		"sent after it returned": {Replay{Judge: j}, &Recording{UserIDs: []string{"u"},
			Decisions: []Decision{{Outcome: Allowed, Sent: 2, Returned: 1}}, Latency: one().Latency}},
		"instants that span more than 2^63 ns": {Replay{Judge: j}, &Recording{UserIDs: []string{"u"},
			Decisions: []Decision{{Outcome: Allowed, Sent: math.MinInt64, Returned: 0}, {Outcome: Denied, Sent: 0, Returned: math.MaxInt64}},
			Latency:   []time.Duration{1, 1}}},
		"instants that span two years": {Replay{Judge: j}, &Recording{UserIDs: []string{"u"},
			Decisions: []Decision{{Outcome: Allowed, Sent: 0, Returned: 1}, {Outcome: Denied, Sent: 2 * 365 * 24 * time.Hour, Returned: 2*365*24*time.Hour + 1}},
			Latency:   []time.Duration{1, 1}}},
	} {
		assert.NotPanics(t, func() {
			_, err := c.rp.Run(c.rec)
			assert.Error(t, err, name)
		}, name)
	}
}

// The longest skew allowed, on the widest instants a recording may hold,
// is judged without wrapping.
func TestReplayAtItsBounds(t *testing.T) {
	at := time.Duration(time.Date(2199, 12, 31, 0, 0, 0, 0, time.UTC).UnixNano())
	rec := &Recording{UserIDs: []string{"u"},
		Decisions: []Decision{{Outcome: Allowed, Sent: at - maxRecordingSpan, Returned: at - maxRecordingSpan + 1}, {Outcome: Allowed, Sent: at - 1, Returned: at}},
		Latency:   []time.Duration{1, 1}}
	res, err := Replay{Judge: Judge{Limit: 1, Window: time.Second}, ClockSkew: MaxClockSkew}.Run(rec)
	require.NoError(t, err)
	assert.False(t, res.Failed())
	assert.Equal(t, maxRecordingSpan+2*MaxClockSkew, res.Elapsed)
}
