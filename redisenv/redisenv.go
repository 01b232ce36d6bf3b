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

	"github.com/rlconform/rlconform/internal/redact"
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
  - run a Docker engine, so testcontainers-go can start redis:7-alpine (or the
    image RLCONFORM_REDIS_IMAGE names) in programs that import
    github.com/rlconform/rlconform/redisenv/container, as the rlconform command does`)

// SelectEnv names the environment variable that picks one rung instead of
// the ladder: "container" (the testcontainers rung, even where REDIS_URL is
// set or redis-server is on PATH) or "redis-server". Unset or "auto", Obtain
// tries the rungs in order.
const SelectEnv = "RLCONFORM_REDIS"

// Redis is a Redis that a run may use.
type Redis struct {
	// Client talks to it (a cluster client when REDIS_URL lists several nodes).
	Client redis.UniversalClient
	// Source says which rung gave it: SourceURL, SourceBinary or SourceContainer.
	Source string
	// Addr is host:port (a comma-separated list for a cluster).
	Addr string
	// URL reaches the same Redis from another client (rueidis, redigo, a
	// process in another language): redis://[user:password@]host:port[/db],
	// or, for a cluster, the comma-separated list it was given. It holds
	// credentials: print Redact(URL), never URL.
	URL string
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
// rung. RLCONFORM_REDIS ([SelectEnv]) set to "container" or "redis-server"
// takes that rung alone, and its failure is the error. The caller must
// Close the result.
func Obtain(ctx context.Context) (*Redis, error) {
	switch sel := os.Getenv(SelectEnv); sel {
	case "", "auto":
	case "container":
		if containerRung == nil {
			return nil, fmt.Errorf("%s=container: %w\n(the container rung is not linked in: import github.com/rlconform/rlconform/redisenv/container)", SelectEnv, ErrNoRedis)
		}
		r, err := containerRung(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s=container: %w", SelectEnv, err)
		}
		return r, nil
	case SourceBinary:
		r, err := Start(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s=redis-server: %w", SelectEnv, err)
		}
		return r, nil
	default:
		return nil, fmt.Errorf("redisenv: %s=%q: want container, redis-server, auto or nothing", SelectEnv, sel)
	}
	if url := os.Getenv("REDIS_URL"); url != "" {
		r, err := FromURL(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		return r, nil
	}
	if _, err := exec.LookPath("redis-server"); err == nil {
		return Start(ctx)
	}
	if containerRung == nil {
		return nil, fmt.Errorf("%w\n(the container rung is not linked in: import github.com/rlconform/rlconform/redisenv/container)", ErrNoRedis)
	}
	r, err := containerRung(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w\n(docker: %v)", ErrNoRedis, err)
	}
	return r, nil
}

// containerRung is the third rung, registered by package redisenv/container
// when a program imports it: the one piece of package state, set at init.
var containerRung func(context.Context) (*Redis, error)

// RegisterContainerRung makes start the rung Obtain tries after REDIS_URL
// and redis-server, or alone when RLCONFORM_REDIS=container. Package
// redisenv/container calls it when imported.
func RegisterContainerRung(start func(context.Context) (*Redis, error)) { containerRung = start }

// Wrap makes a Redis of a client that another rung connected: source says
// which (SourceContainer), addr is host:port, url reaches it from other
// clients, and close (when not nil) releases what the rung started.
func Wrap(client redis.UniversalClient, source, addr, url string, close func(context.Context) error) *Redis {
	return &Redis{Client: client, Source: source, Addr: addr, URL: url, close: close}
}

// Ping checks that client answers within a few seconds.
func Ping(ctx context.Context, client redis.UniversalClient) error { return ping(ctx, client) }

// Start starts the redis-server binary found on PATH on a free loopback
// port, without persistence, and connects to it: a Redis this process owns
// (it may stop, freeze or flush it). Close stops it.
func Start(ctx context.Context) (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redisenv: no redis-server on PATH: %w", err)
	}
	srv, err := StartServer(ctx, bin)
	if err != nil {
		return nil, err
	}
	return fromServer(ctx, srv)
}

// Redact returns url with its password replaced by "REDACTED", for
// messages: redis://user:secret@host:6379/0 becomes
// redis://user:REDACTED@host:6379/0, and redis://secret@host (the only
// part is the password) redis://REDACTED@host. Lists of cluster nodes are
// redacted node by node. It follows the rules of every address rlconform
// shows (docs/cli.md, "Secrets").
func Redact(url string) string { return redact.URLList(url) }

// FromURL connects to the Redis at url, to a cluster when url is a
// comma-separated list of host:port (or redis:// URLs), or to the master
// that Sentinel names when url is a Sentinel URL ([ParseSentinelURL]: the
// client follows a failover), and checks that it answers PING.
func FromURL(ctx context.Context, url string) (*Redis, error) {
	var (
		client redis.UniversalClient
		addr   string
	)
	if IsSentinelURL(url) {
		opts, err := ParseSentinelURL(url)
		if err != nil {
			return nil, fmt.Errorf("redisenv: Sentinel URL %q: %v", Redact(url), redactErr(err, url))
		}
		opts.ContextTimeoutEnabled = true
		client = redis.NewFailoverClient(opts)
		addr = fmt.Sprintf("master %q of the Sentinels at %s", opts.MasterName, strings.Join(opts.SentinelAddrs, ","))
	} else if parts := strings.Split(url, ","); len(parts) > 1 {
		addrs := make([]string, 0, len(parts))
		for _, p := range parts {
			p = strings.TrimSpace(p)
			if strings.Contains(p, "://") {
				o, err := redis.ParseURL(p)
				if err != nil {
					return nil, fmt.Errorf("redisenv: cluster node %q: %v", Redact(p), redactErr(err, p))
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
			return nil, fmt.Errorf("redisenv: %q: %v", Redact(url), redactErr(err, url))
		}
		opts.ContextTimeoutEnabled = true
		client = redis.NewClient(opts)
		addr = opts.Addr
	}
	if err := ping(ctx, client); err != nil {
		client.Close()
		return nil, fmt.Errorf("redisenv: %s does not answer: %v", Redact(url), redactErr(err, url))
	}
	return &Redis{Client: client, Source: SourceURL, Addr: addr, URL: url}, nil
}

func fromServer(ctx context.Context, srv *Server) (*Redis, error) {
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	if err := ping(ctx, client); err != nil {
		client.Close()
		return nil, errors.Join(fmt.Errorf("redisenv: started redis-server at %s does not answer: %w", srv.Addr(), err), srv.Close())
	}
	return &Redis{
		Client: client, Source: SourceBinary, Addr: srv.Addr(), URL: "redis://" + srv.Addr(), Server: srv,
		close: func(context.Context) error { return srv.Close() },
	}, nil
}

// ping checks that client answers within a few seconds.
func ping(ctx context.Context, client redis.UniversalClient) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return client.Ping(ctx).Err()
}

// redactErr is err's text with url's secrets removed, for errors of
// libraries that quote the URL they were given.
func redactErr(err error, url string) string {
	secrets := redact.NewSecrets(1)
	for _, p := range strings.Split(url, ",") {
		secrets.AddURL(p)
	}
	return secrets.Text(redact.Error(err).Error())
}
