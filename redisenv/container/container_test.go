package container_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/redisenv"
	_ "github.com/rlconform/rlconform/redisenv/container"
)

func TestContainerRungFallsBackCleanlyWithoutDocker(t *testing.T) {
	t.Setenv("REDIS_URL", "")
	t.Setenv("PATH", t.TempDir()) // no redis-server
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/rlconform-docker.sock")
	t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	start := time.Now()
	_, err := redisenv.Obtain(context.Background())
	require.ErrorIs(t, err, redisenv.ErrNoRedis)
	for _, way := range []string{"REDIS_URL", "redis-server", "Docker"} {
		assert.Contains(t, err.Error(), way, "the error names every way to get Redis")
	}
	assert.NotContains(t, err.Error(), "not linked in", "importing the package adds the rung")
	assert.Less(t, time.Since(start), 30*time.Second)
}
