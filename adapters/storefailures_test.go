package adapters

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
)

// An allow answer that says it is the store-failure policy's is recorded
// with its instants, and passed on as it is; one whose policy does not
// answer what it says is malformed.
func TestClientRecordsPolicyAnswers(t *testing.T) {
	body := `{"allowed":false,"store_failure":"deny"}`
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(body)) }))
	defer ts.Close()
	failed := &StoreFailures{}
	c := NewClient(ts.URL, ClientOptions{StoreFailures: failed})
	before := time.Now()
	ok, err := c.AllowRequest(context.Background(), "alice")
	require.NoError(t, err)
	assert.False(t, ok)
	assert.EqualValues(t, 1, failed.Count())
	assert.Contains(t, failed.Between(before, time.Now()), "1 answer(s)")
	assert.Empty(t, failed.Between(time.Now().Add(time.Second), time.Now().Add(2*time.Second)), "none fell later")

	for _, bad := range []string{`{"allowed":true,"store_failure":"deny"}`, `{"allowed":false,"store_failure":"error"}`, `{"allowed":false,"store_failure":"closed"}`} {
		body = bad
		_, err := c.AllowRequest(context.Background(), "alice")
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "malformed answer: store_failure", bad)
	}
	assert.EqualValues(t, 1, failed.Count(), "a malformed answer is not recorded")
}

// An endpoint's answers with X-Rlc-Store-Failure are recorded, and the
// header must say what the status says.
func TestEndpointRecordsPolicyAnswers(t *testing.T) {
	status, policy := http.StatusTooManyRequests, "deny"
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(contract.HeaderStoreFailure, policy)
		w.WriteHeader(status)
	}))
	defer ts.Close()
	failed := &StoreFailures{}
	e := NewEndpoint(ts.URL, EndpointOptions{StoreFailures: failed})
	r, err := e.Do(context.Background(), "alice")
	require.NoError(t, err)
	assert.Equal(t, "deny", r.StoreFailure)
	assert.EqualValues(t, 1, failed.Count())
	status = http.StatusOK
	_, err = e.Do(context.Background(), "alice")
	require.Error(t, err, "allowed, said to be the deny policy's")
	assert.Contains(t, err.Error(), contract.HeaderStoreFailure)
}

// Answers close in time make one span; the spans kept are bounded.
func TestStoreFailuresAreBounded(t *testing.T) {
	var s StoreFailures
	t0 := time.Now()
	for i := range 10 * maxFailureSpans {
		at := t0.Add(time.Duration(i) * 2 * failureGap) // each its own span
		s.add("allow", at, at.Add(time.Millisecond))
	}
	assert.Len(t, s.spans, maxFailureSpans)
	assert.EqualValues(t, 10*maxFailureSpans, s.Count())
	assert.Contains(t, s.Between(t0, t0), "answer(s)", "the earliest still counts, merged")
}
