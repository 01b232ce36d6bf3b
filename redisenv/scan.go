package redisenv

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ScanKeys lists the keys matching pattern (SCAN MATCH, never KEYS), on every master of a cluster.
func ScanKeys(ctx context.Context, c redis.UniversalClient, pattern string) ([]string, error) {
	var (
		mu   sync.Mutex
		keys []string
	)
	scan := func(ctx context.Context, c redis.UniversalClient) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			keys = append(keys, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return scan(ctx, node) })
		return keys, err
	}
	return keys, scan(ctx, c)
}

// GlobEscape quotes the glob characters of s for a SCAN MATCH pattern.
func GlobEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`).Replace(s)
}
