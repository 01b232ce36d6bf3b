package reference

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/redisenv"
)

func TestClientsThatEndCallsAtTheDeadlineAreCalledDirectly(t *testing.T) {
	type wrapped struct{ *redis.Client }
	for _, c := range []struct {
		client redis.UniversalClient
		direct bool
	}{
		{redis.NewClient(&redis.Options{ContextTimeoutEnabled: true}), true},
		{redis.NewClient(&redis.Options{}), false},
		{redis.NewClusterClient(&redis.ClusterOptions{ContextTimeoutEnabled: true}), true},
		{redis.NewClusterClient(&redis.ClusterOptions{}), false},
		{redis.NewRing(&redis.RingOptions{ContextTimeoutEnabled: true}), true},
		{redis.NewRing(&redis.RingOptions{}), false},
		{wrapped{redis.NewClient(&redis.Options{ContextTimeoutEnabled: true})}, false},
	} {
		l, err := New(c.client, Options{MaxRequests: 1, Window: time.Second})
		require.NoError(t, err)
		assert.Equal(t, c.direct, l.direct, "%T", c.client)
		c.client.Close()
	}
}

func TestTheLimitersTimeoutIsAddedOnlyWhenItComesFirst(t *testing.T) {
	l, err := New(store.Client, Options{MaxRequests: 1, Window: time.Second, Timeout: time.Second})
	require.NoError(t, err)
	soon, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	ctx, stop := l.withTimeout(soon)
	stop()
	assert.Equal(t, soon, ctx, "the caller's deadline comes first: its context is used as it is")

	late, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	ctx, stop = l.withTimeout(late)
	defer stop()
	d, ok := ctx.Deadline()
	require.True(t, ok)
	assert.WithinDuration(t, time.Now().Add(time.Second), d, 100*time.Millisecond)
}

// TestDirectCallsEndAtTheirDeadlineOnAFrozenServer: with a client that has
// ContextTimeoutEnabled the limiter starts no goroutine of its own; the
// deadline, the caller's or the limiter's Timeout, still ends every call.
func TestDirectCallsEndAtTheirDeadlineOnAFrozenServer(t *testing.T) {
	srv, err := redisenv.StartServer(context.Background(), serverBinary(t))
	require.NoError(t, err)
	defer srv.Close()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: time.Minute, WriteTimeout: time.Minute, ContextTimeoutEnabled: true})
	defer client.Close()
	callersDeadline, err := New(client, Options{MaxRequests: 1, Window: time.Minute, Timeout: -1})
	require.NoError(t, err)
	ownTimeout, err := New(client, Options{MaxRequests: 1, Window: time.Minute, Timeout: 200 * time.Millisecond})
	require.NoError(t, err)
	require.True(t, callersDeadline.direct)
	_, err = callersDeadline.AllowRequest(context.Background(), "warm-up")
	require.NoError(t, err)

	require.NoError(t, srv.Pause())
	defer srv.Resume()
	for _, c := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"AllowRequest, caller's deadline", func(ctx context.Context) error {
			_, err := callersDeadline.AllowRequest(ctx, "u")
			return err
		}},
		{"AllowRequests, caller's deadline", func(ctx context.Context) error {
			_, err := callersDeadline.AllowRequests(ctx, []string{"u", "v"})
			return err
		}},
		{"AllowRequest, the limiter's Timeout", func(context.Context) error {
			_, err := ownTimeout.AllowRequest(context.Background(), "u")
			return err
		}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		done := make(chan error, 1)
		go func() { done <- c.call(ctx) }()
		select {
		case err := <-done:
			assert.ErrorIs(t, err, contract.ErrStore, c.name)
			assert.ErrorIs(t, err, context.DeadlineExceeded, c.name)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the call outlived its 200ms deadline by 10s on a frozen server", c.name)
		}
		cancel()
	}
}

// TestBatchesEndWithTheirContextOnAFrozenServer is
// TestCallsEndWithTheirContextOnAFrozenServer for AllowRequests.
func TestBatchesEndWithTheirContextOnAFrozenServer(t *testing.T) {
	srv, err := redisenv.StartServer(context.Background(), serverBinary(t))
	require.NoError(t, err)
	defer srv.Close()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	defer client.Close()
	l, err := New(client, Options{MaxRequests: 1, Window: time.Minute, Timeout: -1})
	require.NoError(t, err)
	require.False(t, l.direct)
	_, err = l.AllowRequests(context.Background(), []string{"warm-up"})
	require.NoError(t, err)

	require.NoError(t, srv.Pause())
	defer srv.Resume()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := l.AllowRequests(ctx, []string{"u", "v"}); done <- err }()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, contract.ErrStore)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(10 * time.Second):
		t.Fatal("AllowRequests outlived its 200ms context by 10s on a frozen server")
	}
}
