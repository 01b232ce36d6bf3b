// Package redisenv finds or starts a real Redis for tests and runs.
package redisenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sources, in the order Obtain tries them.
const (
	SourceURL       = "REDIS_URL"
	SourceBinary    = "redis-server"
	SourceContainer = "testcontainers"
)

// ErrNoRedis is returned when no rung of the ladder gave a Redis.
var ErrNoRedis = errors.New(`no Redis found; rlconform needs a real one. Either
  - set REDIS_URL (redis://host:port/db, or a comma-separated list of cluster nodes host:port,host:port), or
  - install redis-server on PATH (Debian/Ubuntu: apt-get install -y redis-server; macOS: brew install redis), or
  - run a Docker engine, so testcontainers-go can start redis:7`)

// Redis is a Redis that a run may use.
type Redis struct {
	// Client talks to it (a cluster client when REDIS_URL lists several nodes).
	Client redis.UniversalClient
	// Source says which rung gave it: SourceURL, SourceBinary or SourceContainer.
	Source string
	// Addr is host:port (a comma-separated list for a cluster).
	Addr string
	// Server is the redis-server this process started, or nil. Only a Redis
	// we started may be stopped (store-fault specs) or flushed.
	Server *Server
	close  func(context.Context) error
}

// Owned reports whether this process started the Redis, so that it may stop
// it or flush it; a Redis found through REDIS_URL is never flushed.
func (r *Redis) Owned() bool { return r.Source != SourceURL }

// Close closes the client and stops whatever this process started.
func (r *Redis) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := r.Client.Close()
	if r.close != nil {
		err = errors.Join(err, r.close(ctx))
	}
	return err
}

// Obtain returns a real Redis, trying in order: REDIS_URL; a redis-server
// binary on PATH, started on a free loopback port; testcontainers-go's Redis
// module when a Docker engine answers. Failing all three, it returns an
// error wrapping [ErrNoRedis] that names the three ways to get one. A
// REDIS_URL that does not answer is an error, not a reason to try the next
// rung. The caller must Close the result.
func Obtain(ctx context.Context) (*Redis, error) {
	if url := os.Getenv("REDIS_URL"); url != "" {
		return FromURL(ctx, url)
	}
	if bin, err := exec.LookPath("redis-server"); err == nil {
		srv, err := StartServer(ctx, bin)
		if err != nil {
			return nil, err
		}
		return fromServer(ctx, srv)
	}
	r, err := fromContainer(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w\n(docker: %v)", ErrNoRedis, err)
	}
	return r, nil
}

// FromURL connects to the Redis at url, or to a cluster when url is a
// comma-separated list of host:port (or redis:// URLs), and checks that it
// answers PING.
func FromURL(ctx context.Context, url string) (*Redis, error) {
	var (
		client redis.UniversalClient
		addr   string
	)
	if parts := strings.Split(url, ","); len(parts) > 1 {
		addrs := make([]string, 0, len(parts))
		for _, p := range parts {
			p = strings.TrimSpace(p)
			if strings.Contains(p, "://") {
				o, err := redis.ParseURL(p)
				if err != nil {
					return nil, fmt.Errorf("redisenv: REDIS_URL cluster node %q: %w", p, err)
				}
				p = o.Addr
			}
			addrs = append(addrs, p)
		}
		client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true})
		addr = strings.Join(addrs, ",")
	} else {
		if !strings.Contains(url, "://") {
			url = "redis://" + url
		}
		opts, err := redis.ParseURL(url)
		if err != nil {
			return nil, fmt.Errorf("redisenv: REDIS_URL %q: %w", url, err)
		}
		opts.ContextTimeoutEnabled = true
		client = redis.NewClient(opts)
		addr = opts.Addr
	}
	if err := ping(ctx, client); err != nil {
		client.Close()
		return nil, fmt.Errorf("redisenv: REDIS_URL %q does not answer: %w", url, err)
	}
	return &Redis{Client: client, Source: SourceURL, Addr: addr}, nil
}

func fromServer(ctx context.Context, srv *Server) (*Redis, error) {
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	if err := ping(ctx, client); err != nil {
		client.Close()
		return nil, errors.Join(fmt.Errorf("redisenv: started redis-server at %s does not answer: %w", srv.Addr(), err), srv.Close())
	}
	return &Redis{
		Client: client, Source: SourceBinary, Addr: srv.Addr(), Server: srv,
		close: func(context.Context) error { return srv.Close() },
	}, nil
}

// ping checks that client answers within a few seconds.
func ping(ctx context.Context, client redis.UniversalClient) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return client.Ping(ctx).Err()
}
