package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// envoyVersion is the envoyproxy/ratelimit commit the card grades: a
// pseudo-version, as the project tags no release; scripts/ensure-cards
// builds it with go install into cards/.bin.
const envoyVersion = "v1.4.1-0.20260122083618-3fb702589d36"

// envoyRatelimit serves Envoy's ratelimit service on a Redis of its own,
// its configuration cards/envoy/runtime/config/rlconform.yaml (domain
// rlconform, 5 a second per user, 20 a minute per user_minute), every
// other setting its default: the
// expiry jitter, the local cache off, denied requests counted. It is
// graded as Envoy calls it: its gRPC address (rls.proto's
// ShouldRateLimit).
func envoyRatelimit(g *grader, redisURL, prefix string, window time.Duration) (string, func(), error) {
	_, grpcAddr, stop, err := startEnvoy(g, redisURL, prefix, window)
	return grpcAddr, stop, err
}

// startEnvoy starts Envoy's ratelimit service, and returns its HTTP base
// URL and its gRPC address once its health check answers.
func startEnvoy(g *grader, redisURL, prefix string, window time.Duration) (base, grpcAddr string, stop func(), err error) {
	if window != time.Second && window != time.Minute {
		return "", "", nil, fmt.Errorf("the Envoy cards' configuration limits per second and per minute, not per %v", window)
	}
	bin := filepath.Join(g.dir, ".bin", "service_cmd")
	if _, err := os.Stat(bin); err != nil {
		return "", "", nil, fmt.Errorf("envoyproxy/ratelimit is not built (run scripts/ensure-cards): %w", err)
	}
	red, err := url.Parse(redisURL)
	if err != nil {
		return "", "", nil, fmt.Errorf("the Redis URL: %w", err)
	}
	var ports [3]int
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return "", "", nil, err
		}
	}
	env := []string{
		"USE_STATSD=false", "LOG_LEVEL=warn", "RUNTIME_ROOT=" + filepath.Join(g.dir, "envoy", "runtime"), "RUNTIME_SUBDIRECTORY=",
		"RUNTIME_WATCH_ROOT=false", "REDIS_SOCKET_TYPE=tcp", "REDIS_URL=" + red.Host, "CACHE_KEY_PREFIX=" + prefix,
		"HOST=127.0.0.1", "GRPC_HOST=127.0.0.1", "DEBUG_HOST=127.0.0.1",
		fmt.Sprintf("PORT=%d", ports[0]), fmt.Sprintf("GRPC_PORT=%d", ports[1]), fmt.Sprintf("DEBUG_PORT=%d", ports[2]),
	}
	base = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	stop, err = g.process([]string{bin}, env, base+"/healthcheck")
	return base, fmt.Sprintf("127.0.0.1:%d", ports[1]), stop, err
}
