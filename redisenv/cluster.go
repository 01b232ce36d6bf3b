package redisenv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of masters this process started on loopback,
// for testing that a limiter works on a cluster.
type Cluster struct {
	servers []*Server
}

// StartCluster starts masters redis-server processes in cluster mode, splits
// the 16384 slots among them, joins them and waits until the cluster is ok.
func StartCluster(ctx context.Context, binary string, masters int) (*Cluster, error) {
	if masters < 1 {
		return nil, errors.New("redisenv: a cluster needs at least one master")
	}
	c := &Cluster{}
	for i := range masters {
		srv, err := StartServer(ctx, binary, "--cluster-enabled", "yes",
			"--cluster-config-file", fmt.Sprintf("nodes-%d.conf", i), "--cluster-node-timeout", "2000")
		if err != nil {
			c.Close()
			return nil, err
		}
		c.servers = append(c.servers, srv)
	}
	if err := c.form(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("redisenv: forming the cluster: %w", err)
	}
	return c, nil
}

func (c *Cluster) form(ctx context.Context) error {
	const slots = 16384
	per := slots / len(c.servers)
	var clients []*redis.Client
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	for i, srv := range c.servers {
		cl := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		clients = append(clients, cl)
		lo, hi := i*per, (i+1)*per-1
		if i == len(c.servers)-1 {
			hi = slots - 1
		}
		if err := cl.ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			return fmt.Errorf("CLUSTER ADDSLOTSRANGE on %s: %w", srv.Addr(), err)
		}
		if i > 0 {
			if err := clients[0].ClusterMeet(ctx, "127.0.0.1", fmt.Sprint(srv.port)).Err(); err != nil {
				return fmt.Errorf("CLUSTER MEET %s: %w", srv.Addr(), err)
			}
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, cl := range clients {
		for {
			info, err := cl.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("cluster not ok after 20s: %v %s", err, info)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond): // polling the cluster's own convergence
			}
		}
	}
	return nil
}

// Addrs lists the masters' host:port.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.servers))
	for i, s := range c.servers {
		out[i] = s.Addr()
	}
	return out
}

// Client returns a cluster client for it; the caller closes it.
func (c *Cluster) Client() *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ContextTimeoutEnabled: true})
}

// Close stops every server.
func (c *Cluster) Close() error {
	var errs []error
	for _, s := range c.servers {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
