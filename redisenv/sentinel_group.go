package redisenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/internal/freeport"
)

// SentinelGroup is a Redis primary, a replica of it and one Sentinel
// watching them (quorum 1), each a process of its own on a free loopback
// port: what a team running Redis with Sentinel has, small, for tests of
// a limiter through a failover. Close stops all three.
type SentinelGroup struct {
	// Master is the name the Sentinel knows the primary by.
	Master           string
	Primary, Replica *Server
	sentinelPort     int
	dir              string
	cmd              *exec.Cmd
	done             chan struct{}
	output           *bytes.Buffer
}

// StartSentinelGroup starts a group with binary (a redis-server, which
// runs the Sentinel too: redis-server CONF --sentinel) and waits until
// the Sentinel sees the replica.
func StartSentinelGroup(ctx context.Context, binary, master string) (g *SentinelGroup, err error) {
	g = &SentinelGroup{Master: master}
	defer func() {
		if err != nil {
			err = errors.Join(err, g.Close())
		}
	}()
	if g.Primary, err = StartServer(ctx, binary); err != nil {
		return g, err
	}
	host, port, _ := net.SplitHostPort(g.Primary.Addr())
	if g.Replica, err = StartServer(ctx, binary, "--replicaof", host, port); err != nil {
		return g, err
	}
	if g.dir, err = os.MkdirTemp("", dirPattern); err != nil {
		return g, fmt.Errorf("redisenv: %w", err)
	}
	if g.sentinelPort, err = freeport.Loopback(); err != nil {
		return g, fmt.Errorf("redisenv: finding a free port: %w", err)
	}
	conf := filepath.Join(g.dir, "sentinel.conf")
	text := fmt.Sprintf("port %d\nbind 127.0.0.1\nprotected-mode no\ndir %s\nsentinel monitor %s %s %s 1\nsentinel down-after-milliseconds %s 1000\nsentinel failover-timeout %s 10000\n",
		g.sentinelPort, g.dir, master, host, port, master, master)
	if err = os.WriteFile(conf, []byte(text), 0o600); err != nil {
		return g, fmt.Errorf("redisenv: %w", err)
	}
	g.cmd = exec.Command(binary, conf, "--sentinel")
	g.output = &bytes.Buffer{}
	g.cmd.Stdout, g.cmd.Stderr = g.output, g.output
	setDeathSignal(g.cmd)
	if err = g.cmd.Start(); err != nil {
		return g, fmt.Errorf("redisenv: starting a Sentinel: %w", err)
	}
	g.done = make(chan struct{})
	go func() { g.cmd.Wait(); close(g.done) }()
	if err = g.waitFor(ctx, "the Sentinel to see the replica", func(ctx context.Context, s *redis.SentinelClient) bool {
		replicas, err := s.Replicas(ctx, master).Result()
		return err == nil && len(replicas) > 0
	}); err != nil {
		return g, err
	}
	return g, nil
}

// URL is the group's Sentinel URL (see [ParseSentinelURL]).
func (g *SentinelGroup) URL() string {
	return fmt.Sprintf("redis+sentinel://127.0.0.1:%d/%s", g.sentinelPort, g.Master)
}

// SentinelAddr is the Sentinel's host:port.
func (g *SentinelGroup) SentinelAddr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(g.sentinelPort))
}

// MasterAddr is the address the Sentinel names for the master now.
func (g *SentinelGroup) MasterAddr(ctx context.Context) (string, error) {
	s := redis.NewSentinelClient(&redis.Options{Addr: g.SentinelAddr()})
	defer s.Close()
	addr, err := masterAddr(ctx, s, g.Master)
	if err != nil {
		return "", fmt.Errorf("redisenv: asking the Sentinel: %w", err)
	}
	return addr, nil
}

// Failover has the Sentinel promote the replica (SENTINEL FAILOVER: the
// primary is demoted, not killed) and waits until it names another master
// than before ([Failover]).
func (g *SentinelGroup) Failover(ctx context.Context) error {
	return Failover(ctx, g.URL())
}

// waitFor polls cond on a client of the Sentinel every 50 ms, for at most
// 30 s.
func (g *SentinelGroup) waitFor(ctx context.Context, what string, cond func(context.Context, *redis.SentinelClient) bool) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s := redis.NewSentinelClient(&redis.Options{Addr: g.SentinelAddr()})
	defer s.Close()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond(ctx, s) {
		select {
		case <-g.done:
			return fmt.Errorf("redisenv: the Sentinel exited waiting for %s:\n%s", what, g.output)
		case <-ctx.Done():
			return fmt.Errorf("redisenv: waiting for %s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}

// Close stops the Sentinel, the replica and the primary, and removes
// their directories.
func (g *SentinelGroup) Close() error {
	var errs []error
	if g.cmd != nil && g.cmd.Process != nil {
		g.cmd.Process.Kill()
		<-g.done
	}
	if g.dir != "" {
		errs = append(errs, os.RemoveAll(g.dir))
	}
	for _, s := range []*Server{g.Replica, g.Primary} {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}
