package redisenv

import (
	"context"
	"github.com/rlconform/rlconform/internal/freeport"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// redisServer returns the redis-server binary; its absence fails the test,
// never skips it: a skipped Redis test is a test that tests nothing.
func redisServer(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	require.NoError(t, err, "redis-server must be on PATH (apt-get install -y redis-server)")
	return bin
}

func TestBinaryRungStartsAndStopsAServer(t *testing.T) {
	redisServer(t)
	t.Setenv("REDIS_URL", "")
	ctx := context.Background()
	r, err := Obtain(ctx)
	require.NoError(t, err)
	assert.Equal(t, SourceBinary, r.Source)
	assert.True(t, r.Owned())
	require.NotNil(t, r.Server)
	require.NoError(t, r.Client.Set(ctx, "k", "v", time.Minute).Err())

	addr := r.Server.Addr()
	require.NoError(t, r.Close())
	probe := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer probe.Close()
	assert.Error(t, probe.Ping(ctx).Err(), "the server must be gone after Close")
}

func TestServerRestartsOnTheSamePort(t *testing.T) {
	ctx := context.Background()
	srv, err := StartServer(ctx, redisServer(t))
	require.NoError(t, err)
	defer srv.Close()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialTimeout: time.Second})
	defer client.Close()
	require.NoError(t, client.Ping(ctx).Err())

	require.NoError(t, srv.Stop())
	require.NoError(t, srv.Stop(), "stopping twice is harmless")
	assert.Error(t, client.Ping(ctx).Err())

	require.NoError(t, srv.Start(ctx))
	assert.NoError(t, client.Ping(ctx).Err(), "the same client reconnects to the restarted server")
}

func TestURLRungIsTriedFirst(t *testing.T) {
	ctx := context.Background()
	srv, err := StartServer(ctx, redisServer(t))
	require.NoError(t, err)
	defer srv.Close()

	for _, url := range []string{"redis://" + srv.Addr() + "/0", srv.Addr()} {
		t.Setenv("REDIS_URL", url)
		r, err := Obtain(ctx)
		require.NoError(t, err, url)
		assert.Equal(t, SourceURL, r.Source)
		assert.False(t, r.Owned(), "a Redis found through REDIS_URL is never ours to flush")
		assert.Nil(t, r.Server)
		require.NoError(t, r.Client.Ping(ctx).Err())
		require.NoError(t, r.Close())
		assert.NoError(t, srv.Start(ctx), "closing a found Redis leaves the server running")
	}
}

func TestUnreachableURLIsALoudError(t *testing.T) {
	port, err := freeport.Loopback()
	require.NoError(t, err)
	t.Setenv("REDIS_URL", "redis://127.0.0.1:"+itoa(port))
	start := time.Now()
	_, err = Obtain(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not answer")
	assert.Less(t, time.Since(start), 30*time.Second)

	t.Setenv("REDIS_URL", "redis://[::1")
	_, err = Obtain(context.Background())
	assert.Error(t, err)
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestCredentialsNeverAppearInErrors(t *testing.T) {
	assert.Equal(t, "redis://user:REDACTED@127.0.0.1:1/0", Redact("redis://user:S3cret@127.0.0.1:1/0"))
	assert.Equal(t, "redis://REDACTED@127.0.0.1:1", Redact("redis://S3cret@127.0.0.1:1"))
	assert.Equal(t, "redis://127.0.0.1:1", Redact("redis://127.0.0.1:1"))
	assert.Equal(t, "redis://:REDACTED@a:1,redis://:REDACTED@b:2", Redact("redis://:S3cret@a:1,redis://:S3cret@b:2"))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, url := range []string{"redis://user:S3cret@127.0.0.1:1/0", "redis://:S3cret@127.0.0.1:1,redis://:S3cret@127.0.0.1:2", "redis://user:S3cret@[bad"} {
		_, err := FromURL(ctx, url)
		require.Error(t, err)
		assert.NotContains(t, err.Error(), "S3cret", url)
		assert.NotContains(t, err.Error(), "REDIS_URL", "FromURL serves --store-url too: %v", err)
	}
}

func TestStaleServerDirectoriesAreSwept(t *testing.T) {
	bin := redisServer(t)
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	mk := func(pid int) string {
		dir, err := os.MkdirTemp("", dirPattern)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(pid)), 0o600))
		return dir
	}
	stale, live := mk(dead.Process.Pid), mk(1)
	defer os.RemoveAll(live)
	srv, err := StartServer(context.Background(), bin)
	require.NoError(t, err)
	defer srv.Close()
	assert.NoDirExists(t, stale, "the directory of a killed owner is removed")
	assert.DirExists(t, live, "a directory whose owner lives is kept")
}

func TestWithoutTheContainerRungTheErrorSaysHowToAddIt(t *testing.T) {
	t.Setenv("REDIS_URL", "")
	t.Setenv("PATH", t.TempDir()) // no redis-server
	_, err := Obtain(context.Background())
	require.ErrorIs(t, err, ErrNoRedis)
	assert.Contains(t, err.Error(), "redisenv/container")
}
