package k6

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/bench"
)

// phases are the values of a request's http_req_* points, in ms.
type phases struct{ duration, blocked, connecting, tls, sending, waiting, receiving float64 }

// normal is a request that took 3ms on a connection ready at once.
var normal = phases{duration: 3, sending: 0.5, waiting: 2, receiving: 0.5}

// requestLines are the lines k6 writes for one request (its order:
// http_reqs, the seven phases, http_req_failed), ending at end, with tags
// and metadata (raw JSON; "" for none).
func requestLines(end time.Time, tags, metadata string, p phases) string {
	var b strings.Builder
	meta := ""
	if metadata != "" {
		meta = `,"metadata":` + metadata
	}
	for _, m := range []struct {
		name  string
		value float64
	}{{"http_reqs", 1}, {"http_req_duration", p.duration}, {"http_req_blocked", p.blocked}, {"http_req_connecting", p.connecting},
		{"http_req_tls_handshaking", p.tls}, {"http_req_sending", p.sending}, {"http_req_waiting", p.waiting},
		{"http_req_receiving", p.receiving}, {"http_req_failed", 0}} {
		fmt.Fprintf(&b, `{"metric":%q,"type":"Point","data":{"time":%q,"value":%v,"tags":%s%s}}`+"\n", m.name, end.Format(time.RFC3339Nano), m.value, tags, meta)
	}
	return b.String()
}

var at = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// streamed reads in with OnRequest, returning the requests.
func streamed(t *testing.T, in string, opts Options) ([]Request, Stats) {
	t.Helper()
	var got []Request
	opts.OnRequest = func(r Request) error {
		r.User = bytes.Clone(r.User)
		got = append(got, r)
		return nil
	}
	r := NewReader(opts)
	require.NoError(t, r.Read("in", strings.NewReader(in)))
	return got, r.Stats()
}

// A clock stepped back during a request makes a phase negative (k6 times
// phases on the wall clock: issues #588, #1872): the request is read,
// widened to the timeout, and counted, never an error. So is one whose
// write failed (k6 counts neither sending nor waiting: the duration is
// the receiving alone).
func TestNegativePhasesAndFailedWritesAreWidened(t *testing.T) {
	tags := `{"status":"200","user":"u"}`
	stepped := normal
	stepped.sending = -250
	stepped.duration = -247.5
	failed := phases{duration: 0.5, receiving: 0.5}
	in := requestLines(at, tags, "", normal) + requestLines(at.Add(time.Second), tags, "", stepped) + requestLines(at.Add(2*time.Second), tags, "", failed)
	got, st := streamed(t, in, Options{Timeout: 30 * time.Second})
	require.Len(t, got, 3)
	assert.Equal(t, "", got[0].Widened)
	assert.Equal(t, 3*time.Millisecond, got[0].Returned-got[0].Sent)
	assert.Equal(t, "a negative phase", got[1].Widened)
	assert.Equal(t, 30*time.Second, got[1].Returned-got[1].Sent)
	assert.Equal(t, "a failed write", got[2].Widened)
	assert.Equal(t, 30*time.Second, got[2].Returned-got[2].Sent)
	assert.Equal(t, 1, st.NegativePhase)
	assert.Equal(t, 1, st.FailedWrite)
	// The line of each request is that of its duration point.
	assert.Equal(t, []int64{2, 11, 20}, []int64{got[0].Line, got[1].Line, got[2].Line})
}

// A request's user may be in its metadata (k6's per-request values that
// make no time series) rather than its tags: read from there, counted,
// and two requests alike but for it are two requests.
func TestTheUserMayBeMetadata(t *testing.T) {
	tags := `{"status":"429","url":"http://x/"}`
	in := requestLines(at, tags, `{"user":"alice"}`, normal) + requestLines(at, tags, `{"user":"bob","trace_id":"x"}`, normal)
	got, st := streamed(t, in, Options{})
	require.Len(t, got, 2)
	assert.Equal(t, "alice", string(got[0].User))
	assert.Equal(t, "bob", string(got[1].User))
	assert.Equal(t, bench.Denied, got[0].Outcome)
	assert.Equal(t, 2, st.FromMetadata)

	// Neither in the tags nor in the metadata: the error says both.
	r := NewReader(Options{UserTag: "who"})
	require.NoError(t, r.Read("in", strings.NewReader(in)))
	_, err := r.Recording()
	assert.ErrorContains(t, err, `carries the tag "who" that names the user, in its tags or its metadata`)
}

// k6 killed while writing: a gzip stream without its end, or a plain file
// whose last line is cut, is read up to the cut, which is said.
func TestACutOutputIsReadToTheCut(t *testing.T) {
	var full strings.Builder
	for i := range 2000 {
		full.WriteString(requestLines(at.Add(time.Duration(i)*time.Millisecond), fmt.Sprintf(`{"status":"200","user":"u%d"}`, i%7), "", normal))
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte(full.String()))
	require.NoError(t, w.Close())
	cut := gz.Bytes()[:gz.Len()/2]

	for name, in := range map[string][]byte{"gzip": cut, "plain": []byte(full.String()[:full.Len()/2-30])} {
		r := NewReader(Options{})
		require.NoError(t, r.Read(name, bytes.NewReader(in)), name)
		st := r.Stats()
		require.Len(t, st.Cuts, 1, name)
		assert.Contains(t, st.Cuts[0], name+": ", name)
		assert.Greater(t, st.Decisions, 100, name)
		assert.Less(t, st.Decisions, 2000, name)
		_, err := r.Recording()
		assert.NoError(t, err, name)
	}
	// An output that ends cleanly has no cut.
	r := NewReader(Options{})
	require.NoError(t, r.Read("whole", strings.NewReader(full.String())))
	assert.Empty(t, r.Stats().Cuts)
	assert.Equal(t, 2000, r.Stats().Decisions)
}
