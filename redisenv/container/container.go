// Package container is the third rung of redisenv's ladder: a Redis started
// by testcontainers-go where a Docker engine answers. It is a package of its
// own so that only the programs that want it link testcontainers and its
// dependencies (about 110 packages); importing it, even blank, adds the rung
// to redisenv.Obtain:
//
//	import _ "github.com/rlconform/rlconform/redisenv/container"
//
// The rlconform command imports it.
package container

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"

	"github.com/rlconform/rlconform/redisenv"
)

func init() { redisenv.RegisterContainerRung(Start) }

// ContainerImage is the image the container rung starts.
const ContainerImage = "redis:7-alpine"

// dockerHealthTimeout bounds the question "does a Docker engine answer?".
const dockerHealthTimeout = 3 * time.Second

// DockerAvailable reports whether a Docker engine answers, within a few
// seconds and without panicking (testcontainers-go may panic when it finds
// no Docker host). The error says why not.
func DockerAvailable(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, dockerHealthTimeout)
	defer cancel()
	type result struct{ err error }
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{fmt.Errorf("testcontainers-go panicked looking for Docker: %v", r)}
			}
		}()
		p, err := testcontainers.NewDockerProvider()
		if err != nil {
			done <- result{err}
			return
		}
		done <- result{p.Health(ctx)} // Health closes the provider
	}()
	select {
	case r := <-done:
		return r.err
	case <-ctx.Done():
		return fmt.Errorf("no answer from Docker within %v", dockerHealthTimeout)
	}
}

// Start starts ContainerImage with testcontainers-go when a Docker engine
// answers, and connects to it. Close removes the container.
func Start(ctx context.Context) (*redisenv.Redis, error) {
	if err := DockerAvailable(ctx); err != nil {
		return nil, err
	}
	c, err := tcredis.Run(ctx, ContainerImage)
	if err != nil {
		if c != nil {
			_ = c.Terminate(context.Background())
		}
		return nil, fmt.Errorf("starting %s: %w", ContainerImage, err)
	}
	uri, err := c.ConnectionString(ctx)
	if err != nil {
		_ = c.Terminate(context.Background())
		return nil, fmt.Errorf("container address: %w", err)
	}
	opts, err := redis.ParseURL(uri)
	if err != nil {
		_ = c.Terminate(context.Background())
		return nil, fmt.Errorf("container address %q: %w", uri, err)
	}
	opts.ContextTimeoutEnabled = true
	client := redis.NewClient(opts)
	if err := redisenv.Ping(ctx, client); err != nil {
		client.Close()
		_ = c.Terminate(context.Background())
		return nil, fmt.Errorf("container %s does not answer: %w", uri, err)
	}
	return redisenv.Wrap(client, redisenv.SourceContainer, opts.Addr, uri,
		func(ctx context.Context) error { return c.Terminate(ctx) }), nil
}
