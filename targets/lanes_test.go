package targets

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/suite"
)

// counted is a limiter that allows everything and counts the calls to it.
type counted struct{ calls atomic.Int32 }

func (c *counted) AllowRequest(context.Context, string) (bool, error) {
	c.calls.Add(1)
	return true, nil
}
func (c *counted) Configure(context.Context, int, time.Duration) error { return nil }
func (c *counted) GetRemainingRequests(context.Context, string) (int, error) {
	return 5, nil
}
func (c *counted) Reset(context.Context, string) error { return nil }

// Lanes divide the URLs in order: a spec of lane 1 reaches the second
// half's instances, and each lane's instances share a store between them.
func TestRemoteLanesDivideTheURLsInOrder(t *testing.T) {
	t.Parallel()
	lims := make([]*counted, 4)
	var urls []string
	for i := range lims {
		lims[i] = &counted{}
		srv := httptest.NewServer(adapters.Handler(lims[i], nil))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	target, err := RemoteWith(context.Background(), urls, RemoteOptions{Lanes: 2})
	require.NoError(t, err)
	assert.Equal(t, 2, target.Lanes)
	assert.True(t, target.Capabilities.SharedStore, "two instances a lane")
	assert.Contains(t, target.Name, "(+1 more instances) (+1 more lanes)")
	before := make([]int32, len(lims))
	for i, l := range lims {
		before[i] = l.calls.Load() // the probes reach every URL
	}
	lim, _, err := target.New(context.Background(), suite.Env{Lane: 1, Instance: 1})
	require.NoError(t, err)
	_, err = lim.AllowRequest(context.Background(), "u")
	require.NoError(t, err)
	for i, l := range lims {
		want := before[i]
		if i == 3 {
			want++
		}
		assert.Equal(t, want, l.calls.Load(), "calls to URL %d", i)
	}

	_, err = RemoteWith(context.Background(), urls[:3], RemoteOptions{Lanes: 2})
	assert.ErrorContains(t, err, "3 target URLs do not divide into 2 lanes")
}

// A lane's prefix is lane 0's for lane 0; for a prefix that ends with a
// colon, any other is one that no other lane's starts, nor starts
// another's.
func TestLanePrefixesStartNoOther(t *testing.T) {
	t.Parallel()
	base := "rlc-exec-0123456789abcdef:"
	assert.Equal(t, base, LanePrefix(base, 0))
	seen := map[string]int{}
	for lane := range 16 {
		p := LanePrefix(base, lane)
		for q, other := range seen {
			assert.False(t, strings.HasPrefix(p, q) || strings.HasPrefix(q, p), "lane %d's prefix %q and lane %d's %q", lane, p, other, q)
		}
		seen[p] = lane
	}
	assert.Equal(t, "rlc-exec-ab-2:", LanePrefix("rlc-exec-ab:", 2))
	assert.Equal(t, "custom-lane2-", LanePrefix("custom", 2))
}

// ExecLanes says why each lane did not start, and never hands back a lane
// with neither processes nor a reason.
func TestExecLanesSaysWhyALaneDidNotStart(t *testing.T) {
	t.Parallel()
	procs, errs := ExecLanes(context.Background(), ExecOptions{Command: "true", Instances: 0}, 3)
	require.Len(t, procs, 3)
	for lane := 1; lane < 3; lane++ {
		assert.Nil(t, procs[lane])
		assert.ErrorContains(t, errs[lane], "want at least 1")
	}
	procs, errs = ExecLanes(context.Background(), ExecOptions{Command: "exit 3", Instances: 2, Ready: 5 * time.Second}, 2)
	assert.Nil(t, procs[1])
	assert.ErrorContains(t, errs[1], "exit status 3")
	assert.Equal(t, 1, strings.Count(errs[1].Error(), "exec:"), "said once: %v", errs[1])
	procs, errs = ExecLanes(context.Background(), ExecOptions{Command: "true", Instances: 1}, 0)
	assert.Len(t, procs, 1)
	assert.Len(t, errs, 1)
}
