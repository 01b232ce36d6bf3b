//go:build unix

package ci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/internal/testaddr"
	"github.com/rlconform/rlconform/internal/testtier"
)

// releasedAction is a copy of the action as a release's commit holds
// it: its action.yml, and a CHANGELOG.md whose newest release is version
// (the tree's own may name none yet); with version "", a CHANGELOG.md
// that names no release, as a commit before the first one.
func releasedAction(t *testing.T, version string) string {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(root(t), "action.yml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "action.yml"), src, 0o644))
	changelog := "# Changelog\n\n## [Unreleased]\n\n### Added\n- everything\n"
	if version != "" {
		changelog += "\n## [" + version + "] - 2026-11-28\n\n### Added\n- the rest\n"
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "CHANGELOG.md"), []byte(changelog), 0o644))
	return dir
}

// tarGz is a release archive holding files (name: content), as
// goreleaser lays one out.
func tarGz(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for name, data := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(data))}))
		_, err := tw.Write(data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return b.Bytes()
}

// releases serves, on loopback, a directory of releases laid out as
// GitHub's downloads are: for each version, vX.Y.Z/ with its archives and
// a checksums.txt of them (sums overrides an archive's sum in it).
func releases(t *testing.T, version string, archives map[string][]byte, sums map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "v"+version)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	var checksums strings.Builder
	for name, data := range archives {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
		sum := sha256.Sum256(data)
		s := hex.EncodeToString(sum[:])
		if o, ok := sums[name]; ok {
			s = o
		}
		fmt.Fprintf(&checksums, "%s  %s\n", s, name)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "checksums.txt"), []byte(checksums.String()), 0o644))
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Dir(dir))))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestActionInstallsTheRelease: used at a version tag (v0, or the full
// version), the Action downloads the release's archive for the runner,
// checks it against the release's checksums.txt, and says so; a checksum
// that does not match, no archive for the runner, a tag that is not the
// release's, or a release that is not there fail the step (exit 2),
// saying which, and nothing is built from source; at a branch it builds
// from source, and says so.
func TestActionInstallsTheRelease(t *testing.T) {
	testtier.SkipShort(t, "runs the action")
	const version = "0.4.2"
	released, unreleased := releasedAction(t, version), releasedAction(t, "")
	bin, err := os.ReadFile(filepath.Join(binDir, "rlconform"))
	require.NoError(t, err)
	asset := "rlconform_" + version + "_linux_amd64.tar.gz"
	archive := tarGz(t, map[string][]byte{"rlconform": bin, "LICENSE": []byte("license\n")})
	good := releases(t, version, map[string][]byte{asset: archive}, nil)
	tampered := releases(t, version, map[string][]byte{asset: archive}, map[string]string{asset: strings.Repeat("0", 64)})
	nothing := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(nothing.Close)
	// A limiter that is not there: the grade step is undecided, and
	// fail-on never lets it pass; what is checked is the install step.
	grade := map[string]string{"target": "http://" + testaddr.Refused(t), "fail-on": "never"}
	work := t.TempDir()
	for _, tt := range []struct {
		name, ref, releases string
		env                 []string
		code                int
		says                string
	}{
		{"the full version", "v" + version, good, nil, 0, "downloaded release v" + version + " (" + asset + ", its SHA-256 as checksums.txt says)"},
		{"the major version", "v" + strings.Split(version, ".")[0], good, nil, 0, "downloaded release v" + version},
		{"a checksum that does not match", "v" + version, tampered, nil, 2, "where its checksums.txt says 0000"},
		{"no archive for the runner", "v" + version, good, []string{"RUNNER_ARCH=ARM64"}, 2, "has no archive for linux/arm64"},
		{"a 32-bit runner", "v" + version, good, []string{"RUNNER_ARCH=X86"}, 2, "rlconform is 64-bit only"},
		{"a tag that is not the release's", "v9.9.9", good, nil, 2, "the tag is not a release's"},
		{"a minor tag of another release", "v0.4", good, nil, 0, "downloaded release v0.4.2"},
		{"a patch tag that is a prefix", "v0.4.20", good, nil, 2, "the tag is not a release's"},
		{"a release that is not there", "v" + version, nothing.URL, nil, 2, "no checksums.txt at " + nothing.URL + "/v" + version},
		{"a tag on a commit that is no release's", "v0.5.0", good, nil, 2, "names no release in its CHANGELOG.md"},
		{"a branch", "main", good, nil, 0, "built from source at main (not a version tag)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			action := released
			switch tt.ref {
			case "main":
				action = root(t) // a branch's checkout: the source to build
			case "v0.5.0":
				action = unreleased
			}
			run := runAction(t, action, work, with(grade, "releases", tt.releases), tt.ref, tt.env...)
			assert.Equal(t, tt.code, run.code, run.log)
			assert.Contains(t, run.log, tt.says)
			if tt.ref != "main" {
				assert.NotContains(t, run.log, "built from source", "a version tag never falls back to a build")
			}
			if tt.code == 0 {
				assert.Regexp(t, `(?m)^catalogue +[0-9a-f]{12}`, run.log, "the installed rlconform runs")
			}
		})
	}
}

// goreleaserModule is the goreleaser the Makefile pins.
func goreleaserModule(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root(t), "Makefile"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^GORELEASER := (\S+@v\S+)$`).FindSubmatch(src)
	require.NotNil(t, m, "the Makefile pins goreleaser")
	return string(m[1])
}

// TestGoreleaserBuildsTheArchives: .goreleaser.yaml passes goreleaser
// check, and a snapshot of its Linux amd64 archive (the others are the
// same configuration for other platforms: make release-snapshot builds
// them all) holds the binary, the LICENSE, the README and the changelog,
// is in checksums.txt with its SHA-256, and its binary says its version.
func TestGoreleaserBuildsTheArchives(t *testing.T) {
	testtier.SkipUnlessFull(t, "builds goreleaser and a release archive")
	top, gr := root(t), goreleaserModule(t)
	goreleaser := func(args ...string) string {
		cmd := exec.Command("go", append([]string{"run", gr}, args...)...)
		cmd.Dir = top
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "goreleaser %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
	goreleaser("check")

	src, err := os.ReadFile(filepath.Join(top, ".goreleaser.yaml"))
	require.NoError(t, err)
	one := strings.Replace(string(src), "goos: [linux, darwin, windows]\n    goarch: [amd64, arm64]", "goos: [linux]\n    goarch: [amd64]", 1)
	require.NotEqual(t, string(src), one, "the test narrows the builds to one platform")
	dist := t.TempDir()
	config := filepath.Join(t.TempDir(), "goreleaser.yaml")
	require.NoError(t, os.WriteFile(config, []byte(one+"\ndist: "+dist+"\n"), 0o644))
	goreleaser("release", "--snapshot", "--clean", "--config", config)

	archives, err := filepath.Glob(filepath.Join(dist, "rlconform_*_linux_amd64.tar.gz"))
	require.NoError(t, err)
	require.Len(t, archives, 1, "one archive in %s", dist)
	data, err := os.ReadFile(archives[0])
	require.NoError(t, err)
	sums, err := os.ReadFile(filepath.Join(dist, "checksums.txt"))
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	assert.Contains(t, string(sums), hex.EncodeToString(sum[:])+"  "+filepath.Base(archives[0]))

	files := untar(t, data)
	for _, name := range []string{"rlconform", "LICENSE", "README.md", "CHANGELOG.md"} {
		assert.Contains(t, files, name, "the archive holds %s", name)
	}
	exe := filepath.Join(t.TempDir(), "rlconform")
	require.NoError(t, os.WriteFile(exe, files["rlconform"], 0o755))
	out, err := exec.Command(exe, "version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Regexp(t, `^rlconform v\S+\ncommit +\S+\ngo +go1\.\S+\ncatalogue +[0-9a-f]{12} \(\d+ specs\)\n$`, string(out))
}

// untar reads a .tar.gz into its files' contents.
func untar(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		files[h.Name] = b
	}
}
