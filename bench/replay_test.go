package bench

import (
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
	} {
		_, err := c.rp.Run(c.rec)
		assert.Error(t, err, name)
	}
}
