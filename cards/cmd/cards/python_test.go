package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPyPIVersions reads the versions a card records from the pins of
// cards/python/requirements.txt, as pip-compile writes them (hash lines
// and comments between), names compared without case.
func TestPyPIVersions(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "python"), 0o755); err != nil {
		t.Fatal(err)
	}
	req := "flask-limiter==4.1.1 \\\n    --hash=sha256:aa\n    # via -r requirements.in\nlimits==5.8.0 \\\n    --hash=sha256:bb \\\n    --hash=sha256:cc\n"
	if err := os.WriteFile(filepath.Join(dir, "python", "requirements.txt"), []byte(req), 0o644); err != nil {
		t.Fatal(err)
	}
	got := pypiVersions(dir, []string{"Flask-Limiter", "limits", "redis"})
	if want := "PyPI Flask-Limiter 4.1.1, limits 5.8.0, redis not pinned"; got != want {
		t.Errorf("pypiVersions = %q, want %q", got, want)
	}
	if got := pypiVersions(t.TempDir(), []string{"limits"}); got != "PyPI limits not pinned" {
		t.Errorf("without a requirements.txt: %q", got)
	}
}
