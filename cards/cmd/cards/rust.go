package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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
	bin, err := rustBin(g, "rlconform-card-limitador")
	if err != nil {
		return "", nil, err
	}
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	argv := []string{bin, "--namespace", "rlconform", "--max-value", strconv.Itoa(limit),
		"--seconds", strconv.Itoa(int(window / time.Second)), "--variable", "descriptors[0].user", "--rate-limit-headers"}
	stop, err := g.process(argv, []string{"PORT=" + strconv.Itoa(port)}, "tcp://"+addr)
	return addr, stop, err
}

// towerGovernor serves tower_governor's GovernorLayer on an axum router
// (cards/rust/tower-governor), keyed by X-User, at 5 per window: burst 5
// and a period of W/5. It keeps its state in memory.
func towerGovernor(g *grader, _, _ string, window time.Duration) (string, func(), error) {
	bin, err := rustBin(g, "rlconform-card-tower-governor")
	if err != nil {
		return "", nil, err
	}
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	argv := []string{bin, "--limit", "5", "--window-ms", strconv.FormatInt(window.Milliseconds(), 10)}
	stop, err := g.process(argv, []string{"PORT=" + strconv.Itoa(port)}, url)
	return url, stop, err
}

// rustBin is the path of a Rust card's binary, which
// scripts/ensure-cards-rust (make cards-deps) builds.
func rustBin(g *grader, name string) (string, error) {
	bin := filepath.Join(g.dir, "rust", "target", "release", name)
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s is not built (run make cards-deps: scripts/ensure-cards-rust): %w", name, err)
	}
	return bin, nil
}
