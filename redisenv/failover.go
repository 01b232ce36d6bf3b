package redisenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// failoverWait bounds how long Failover waits for the Sentinels to name a
// new master.
const failoverWait = 30 * time.Second

// Failover has the Sentinels of a master given as a Sentinel URL (see
// [ParseSentinelURL]) promote a replica (SENTINEL FAILOVER, asked of
// the first Sentinel that answers: the primary is demoted, not killed),
// and waits, at most 30 s, until they name another master than before.
// It returns when they did; the error says which step failed, its
// message with no password.
func Failover(ctx context.Context, sentinelURL string) error {
	o, err := ParseSentinelURL(sentinelURL)
	if err != nil {
		return fmt.Errorf("redisenv: failover: %w", err)
	}
	var errs []error
	for _, addr := range o.SentinelAddrs {
		s := redis.NewSentinelClient(&redis.Options{Addr: addr, Username: o.SentinelUsername, Password: o.SentinelPassword, DialTimeout: time.Second})
		err := failoverVia(ctx, s, o.MasterName)
		s.Close()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("the Sentinel at %s: %w", addr, err))
	}
	return fmt.Errorf("redisenv: failover of %s: %w", o.MasterName, errors.Join(errs...))
}

// failoverVia asks Sentinel s to fail master over and waits until it
// names another master.
func failoverVia(ctx context.Context, s *redis.SentinelClient, master string) error {
	before, err := masterAddr(ctx, s, master)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, failoverWait)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	// A Sentinel learns of a replica, and that it is in sync, from the
	// master's INFO, every 10 s: until then it has none to promote
	// (NOGOODSLAVE), and is asked again.
	for {
		err := s.Failover(ctx, master).Err()
		if err == nil {
			break
		}
		if !strings.HasPrefix(err.Error(), "NOGOODSLAVE") || ctx.Err() != nil {
			return fmt.Errorf("SENTINEL FAILOVER: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("SENTINEL FAILOVER: %w (for %v)", err, failoverWait)
		case <-tick.C:
		}
	}
	for {
		if addr, err := masterAddr(ctx, s, master); err == nil && addr != before {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for a new master: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// masterAddr is the address Sentinel s names for master.
func masterAddr(ctx context.Context, s *redis.SentinelClient, master string) (string, error) {
	addr, err := s.GetMasterAddrByName(ctx, master).Result()
	if err != nil {
		return "", fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME %s: %w", master, err)
	}
	if len(addr) != 2 {
		return "", fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME %s: %d values, want a host and a port", master, len(addr))
	}
	return net.JoinHostPort(addr[0], addr[1]), nil
}
