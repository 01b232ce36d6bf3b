package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// npmVersions is the versions of the npm packages pkgs as cards/node's
// package-lock.json pins them (npm ci installs exactly those).
func npmVersions(dir string, pkgs []string) string {
	b, err := os.ReadFile(filepath.Join(dir, "node", "package-lock.json"))
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err == nil {
		err = json.Unmarshal(b, &lock)
	}
	var vs []string
	for _, p := range pkgs {
		v := "not pinned"
		if err == nil {
			if e, ok := lock.Packages["node_modules/"+p]; ok && e.Version != "" {
				v = e.Version
			}
		}
		vs = append(vs, p+" "+v)
	}
	return "npm " + strings.Join(vs, ", ")
}

// nodeEndpoint serves cards/node/script (an endpoint behind a Node.js
// library's own middleware) with env added: the policy is 5 per window.
func nodeEndpoint(script string, env ...string) func(g *grader, redisURL, prefix string, window time.Duration) (string, func(), error) {
	return func(g *grader, redisURL, prefix string, window time.Duration) (string, func(), error) {
		port, err := freePort()
		if err != nil {
			return "", nil, err
		}
		url := fmt.Sprintf("http://127.0.0.1:%d/", port)
		e := append(serviceEnv(port, redisURL, prefix), "CARD_LIMIT=5", fmt.Sprintf("CARD_WINDOW_MS=%d", window.Milliseconds()))
		stop, err := g.process([]string{"node", filepath.Join(g.dir, "node", script)}, append(e, env...), url)
		return url, stop, err
	}
}
