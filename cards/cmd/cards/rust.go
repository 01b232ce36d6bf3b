package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// limitadorVersion is the limitador crate the card serves (the one
// limitador-server v2.4.0 serves); cards/rust/limitador pins it.
const limitadorVersion = "0.12.0"

// limitadorRLS is an Endpoint that serves the limitador crate in memory
// behind Envoy's rate limit service over gRPC (cards/rust/limitador:
// limitador-server's envoy_rls/server.rs, nothing more), one limit of
// limit per W in the namespace rlconform, counted per the descriptor
// entry user, with limitador-server's --rate-limit-headers
// (X-RateLimit-*). It keeps no state in Redis: the Endpoint's Redis URL
// and prefix are not used.
func limitadorRLS(limit int) func(g *grader, redisURL, prefix string, window time.Duration) (string, func(), error) {
	return func(g *grader, _, _ string, window time.Duration) (string, func(), error) {
		return startLimitador(g, limit, window)
	}
}

// startLimitador starts the Limitador card, and returns its gRPC address
// once it takes connections.
func startLimitador(g *grader, limit int, window time.Duration) (string, func(), error) {
	if window < time.Second || window%time.Second != 0 {
		return "", nil, fmt.Errorf("limitador's limits are whole seconds, not %v", window)
	}
	return startRust(g, "rlconform-card-limitador", "tcp://127.0.0.1:%d", "--namespace", "rlconform", "--max-value", strconv.Itoa(limit),
		"--seconds", strconv.Itoa(int(window/time.Second)), "--variable", "descriptors[0].user", "--rate-limit-headers")
}

// towerGovernor serves tower_governor's GovernorLayer on an axum router
// (cards/rust/tower-governor), keyed by X-User, at 5 per window: burst 5
// and a period of W/5. It keeps its state in memory.
func towerGovernor(g *grader, _, _ string, window time.Duration) (string, func(), error) {
	return startRust(g, "rlconform-card-tower-governor", "http://127.0.0.1:%d/", "--limit", "5", "--window-ms", strconv.FormatInt(window.Milliseconds(), 10))
}

// startRust starts the Rust card binary name with args and PORT a free
// port, which scripts/ensure-cards-rust (make cards-deps) builds, and
// returns where it answers, at (a format of the port: "tcp://..." for a
// server waited for by connection, as waitReady takes it), once it does.
func startRust(g *grader, name, at string, args ...string) (string, func(), error) {
	bin := filepath.Join(g.dir, "rust", "target", "release", name)
	if _, err := os.Stat(bin); err != nil {
		return "", nil, fmt.Errorf("%s is not built (run make cards-deps: scripts/ensure-cards-rust): %w", name, err)
	}
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	ready := fmt.Sprintf(at, port)
	stop, err := g.process(append([]string{bin}, args...), []string{"PORT=" + strconv.Itoa(port)}, ready)
	return strings.TrimPrefix(ready, "tcp://"), stop, err
}
