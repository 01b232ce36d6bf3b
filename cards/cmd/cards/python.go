package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// pypiVersions is the versions of the Python packages pkgs as
// cards/python/requirements.txt pins them (scripts/ensure-cards-python
// installs exactly those, their hashes checked).
func pypiVersions(dir string, pkgs []string) string {
	pinned := map[string]string{}
	if f, err := os.Open(filepath.Join(dir, "python", "requirements.txt")); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			line, _, _ = strings.Cut(line, " ")
			if name, v, ok := strings.Cut(line, "=="); ok {
				pinned[strings.ToLower(name)] = v
			}
		}
	}
	var vs []string
	for _, p := range pkgs {
		v := pinned[strings.ToLower(p)]
		if v == "" {
			v = "not pinned"
		}
		vs = append(vs, p+" "+v)
	}
	return "PyPI " + strings.Join(vs, ", ")
}

// pythonEndpoint serves cards/python/script (an endpoint behind a Python
// library's own middleware) on the interpreter of cards/.venv, with env
// added: the policy is CARD_LIMIT (5) per CARD_PERIOD (whole seconds).
func pythonEndpoint(script string, env ...string) func(g *grader, redisURL, prefix string, window time.Duration) (string, func(), error) {
	return func(g *grader, redisURL, prefix string, window time.Duration) (string, func(), error) {
		port, err := freePort()
		if err != nil {
			return "", nil, err
		}
		url := fmt.Sprintf("http://127.0.0.1:%d/", port)
		e := append(serviceEnv(port, redisURL, prefix), "CARD_LIMIT=5", fmt.Sprintf("CARD_PERIOD=%d", int(window.Seconds())))
		python := filepath.Join(g.dir, ".venv", "bin", "python")
		stop, err := g.process([]string{python, filepath.Join(g.dir, "python", script)}, append(e, env...), url)
		return url, stop, err
	}
}
