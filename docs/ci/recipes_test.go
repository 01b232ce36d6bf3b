//go:build unix

// Package ci runs the CI recipes that docs/ci.md ships, github-actions.yml
// and gitlab-ci.yml, as a runner would: each step's script in order, in a
// shallow clone of this tree laid out as the runner's checkout leaves it
// (the pull request's merge ref, detached, and no other branch). A step that
// exits non-zero fails the test, naming the step and showing its output.
//
// What a runner has and this machine has not is put in place by
// substitutions, each checked to apply, so that a changed recipe is not run
// half-substituted: a build of this tree on PATH for `go install ...@latest`
// (the module is not published where the test can reach it), the tools the
// GitLab job's image installs with apt-get (make test's prerequisites here),
// and a --max-regression that a shared 2-core machine cannot keep.
//
// By default (make test) the recipes run a fast subset: actionlint, and the
// GitHub job with the grade at --level core and 2-second benches. The full
// tier (RLCONFORM_FULL=1: make test-full, which .ci/run runs after make
// test) runs both jobs as written. go test -short lints and parses them
// only.
package ci

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rhysd/actionlint"
	"github.com/rlconform/rlconform/internal/testtier"
	"go.yaml.in/yaml/v3"
)

// full reports whether the recipes run as written (the full tier) rather
// than their fast subset.
var full = testtier.Full()

// binDir holds the rlconform built from this tree, for the recipes' PATH.
var binDir string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run()) // no recipe runs: nothing to build
	}
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "rlconform-ci-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "ci: a directory for rlconform:", err)
			return 2
		}
		defer os.RemoveAll(dir)
		build := exec.Command("go", "build", "-o", filepath.Join(dir, "rlconform"), "github.com/rlconform/rlconform/cmd/rlconform")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "ci: go build ./cmd/rlconform: %v\n%s", err, out)
			return 2
		}
		binDir = dir
		return m.Run()
	}())
}

// A substitution replaces text of a recipe that cannot run here as written.
type substitution struct {
	old, new string
	fast     bool // only in the fast subset
}

// installRlconform is the recipes' install line; a build of this tree is on
// PATH instead.
var installRlconform = substitution{
	old: "go install github.com/rlconform/rlconform/cmd/rlconform@latest",
	new: "command -v rlconform",
}

// lenientRegression: the same service benched twice on this shared 2-core
// machine varies by 10-40% (docs/bench.md), so the comparison runs without
// its threshold's verdict; --max-regression has tests of its own (cli).
var lenientRegression = substitution{old: "--max-regression 15", new: "--max-regression 100000"}

// fastBench shortens each bench run in the fast subset.
var fastBench = substitution{old: "--duration 20s", new: "--duration 2s", fast: true}

// substitute applies subs to scripts (a recipe's steps); it fails the test
// when one matches none of them, the recipe having changed.
func substitute(t *testing.T, scripts []string, subs ...substitution) []string {
	t.Helper()
	out := append([]string(nil), scripts...)
	for _, s := range subs {
		if s.fast && full {
			continue
		}
		found := false
		for i := range out {
			found = found || strings.Contains(out[i], s.old)
			out[i] = strings.ReplaceAll(out[i], s.old, s.new)
		}
		if !found {
			t.Fatalf("the recipe no longer contains %q: update the test's substitutions", s.old)
		}
	}
	return out
}

// TestDocsShowTheRecipes: docs/ci.md shows each recipe as its file is,
// whole, so that a reader who copies it from the page copies what is tested.
func TestDocsShowTheRecipes(t *testing.T) {
	md, err := os.ReadFile("../ci.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"github-actions.yml", "github-action.yml", "gitlab-ci.yml"} {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(md, []byte("```yaml\n"+string(src)+"```\n")) {
			t.Errorf("docs/ci.md does not show docs/ci/%s as it is: paste the file in its yaml block", path)
		}
	}
	// The action in three lines: those of the recipe's step, its name and
	// its exec.
	three := "```yaml\n- uses: rlconform/rlconform@v0\n  with:\n    exec: node server.js\n```\n"
	if !bytes.Contains(md, []byte(three)) {
		t.Errorf("docs/ci.md does not show the action in three lines:\n%s", three)
	}
}

// workflow is the part of a GitHub Actions workflow the test reads.
type workflow struct {
	Permissions map[string]string
	Jobs        map[string]struct {
		Defaults struct {
			Run struct {
				WorkingDirectory string `yaml:"working-directory"`
			}
		}
		Steps []struct {
			ID               string
			Name             string
			Uses             string
			Run              string
			Shell            string
			WorkingDirectory string `yaml:"working-directory"`
			With             map[string]string
		}
	}
}

// TestGitHubActionsRecipe lints docs/ci/github-actions.yml with actionlint
// and runs its job's run: steps as bash -e scripts (GitHub's default shell),
// in the working directory each would have, with the variables a
// pull_request run has; the uses: steps are skipped, but every path that
// the upload and report steps name must then exist.
func TestGitHubActionsRecipe(t *testing.T) {
	const path = "github-actions.yml"
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lintOut bytes.Buffer
	linter, err := actionlint.NewLinter(&lintOut, &actionlint.LinterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	errs, err := linter.Lint(path, src, nil)
	if err != nil {
		t.Fatalf("actionlint: %v", err)
	}
	if len(errs) > 0 {
		t.Fatalf("actionlint found %d problem(s) in %s:\n%s", len(errs), path, lintOut.String())
	}

	var wf workflow
	if err := yaml.Unmarshal(src, &wf); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	job, ok := wf.Jobs["rlconform"]
	if !ok || len(wf.Jobs) != 1 {
		t.Fatalf("%s: want one job, rlconform", path)
	}
	// A fork's pull request gets a read-only token: granting no more makes
	// every pull request run as a fork's does, so that a step needing more
	// fails on the first one.
	if len(wf.Permissions) == 0 {
		t.Errorf("%s: declare read-only permissions", path)
	}
	for scope, level := range wf.Permissions {
		if level != "read" && level != "none" {
			t.Errorf("%s: permissions: %s: %s: a fork's pull request has read at most", path, scope, level)
		}
	}

	testtier.SkipShort(t, "runs the job's steps")
	work, base := checkout(t, "refs/pull/1/merge")
	runnerTemp := t.TempDir()
	summary := filepath.Join(runnerTemp, "step-summary.md")
	env := []string{
		"GITHUB_WORKSPACE=" + work,
		"GITHUB_BASE_REF=main",
		"GITHUB_EVENT_NAME=pull_request",
		"GITHUB_STEP_SUMMARY=" + summary,
		"RUNNER_TEMP=" + runnerTemp,
	}
	var steps []string
	for _, step := range job.Steps {
		if step.Shell != "" {
			t.Fatalf("step %q: shell %q: the test runs bash -e, GitHub's default", step.Name, step.Shell)
		}
		if strings.Contains(step.Run, "${{") {
			t.Fatalf("step %q: the test does not evaluate ${{ }} expressions in run: scripts", step.Name)
		}
		steps = append(steps, step.Run)
	}
	steps = substitute(t, steps, installRlconform, lenientRegression, fastBench,
		substitution{old: "rlconform run --exec 'node server.js' --instances 2",
			new: "rlconform run --exec 'node server.js' --instances 2 --level core", fast: true})
	ran := 0
	for i, step := range job.Steps {
		if step.Run == "" {
			continue // a uses: step
		}
		dir := step.WorkingDirectory
		if dir == "" {
			dir = job.Defaults.Run.WorkingDirectory
		}
		runStep(t, step.Name, filepath.Join(work, dir), env, "bash", "-e", "-c", steps[i])
		ran++
	}
	if ran == 0 {
		t.Fatalf("%s: no run: step", path)
	}
	benchedBase(t, work, base)
	if fi, err := os.Stat(summary); err != nil || fi.Size() == 0 {
		t.Errorf("the grade wrote no step summary: %v", err)
	}
	for _, step := range job.Steps {
		for _, key := range []string{"path", "report_paths"} {
			for _, p := range strings.Fields(step.With[key]) {
				if _, err := os.Stat(filepath.Join(work, p)); err != nil {
					t.Errorf("step %q uploads %s, which the run did not write: %v", step.Uses, p, err)
				}
			}
		}
	}
}

// TestGitLabRecipe runs the rlconform job of docs/ci/gitlab-ci.yml: its
// script lines as one sh -e script (a runner stops at the first line that
// fails), from the project directory, with the variables of a merge
// request's pipeline; then every path its artifacts name must exist. The
// fast subset only checks that the job is there and the substitutions apply.
func TestGitLabRecipe(t *testing.T) {
	const path = "gitlab-ci.yml"
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var jobs map[string]struct {
		Script    []string
		Artifacts struct {
			Paths   []string
			Reports struct {
				JUnit string `yaml:"junit"`
			}
		}
	}
	if err := yaml.Unmarshal(src, &jobs); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	job, ok := jobs["rlconform"]
	if !ok || len(job.Script) == 0 {
		t.Fatalf("%s: no rlconform job with a script", path)
	}
	script := substitute(t, []string{strings.Join(job.Script, "\n")}, installRlconform, lenientRegression,
		substitution{old: "apt-get update -q && apt-get install -y -q --no-install-recommends redis-server nodejs npm",
			new: "command -v redis-server\ncommand -v node\ncommand -v npm"})[0]
	testtier.SkipUnlessFull(t, "runs the job as written")
	work, base := checkout(t, "refs/merge-requests/1/head")
	runStep(t, "script", work, []string{
		"CI_PROJECT_DIR=" + work,
		"CI_PIPELINE_SOURCE=merge_request_event",
		"CI_MERGE_REQUEST_TARGET_BRANCH_NAME=main",
		"TMPDIR=" + t.TempDir(),
	}, "sh", "-e", "-c", script)
	benchedBase(t, work, base)
	if len(job.Artifacts.Paths) == 0 || job.Artifacts.Reports.JUnit == "" {
		t.Errorf("%s: the job keeps no artifacts, or no JUnit report", path)
	}
	for _, p := range append(job.Artifacts.Paths, job.Artifacts.Reports.JUnit) {
		if _, err := os.Stat(filepath.Join(work, p)); err != nil {
			t.Errorf("artifacts name %s, which the job did not write: %v", p, err)
		}
	}
}

// checkout makes what a runner's checkout of a pull request leaves: a
// repository whose origin has a main branch and ref (two commits of this
// working tree, without history), holding ref alone, fetched at depth 1
// and checked out detached. It returns its directory and main's commit.
func checkout(t *testing.T, ref string) (work, base string) {
	t.Helper()
	root := strings.TrimSpace(git(t, ".", nil, "rev-parse", "--show-toplevel"))
	tmp := t.TempDir()
	// The working tree as it is, uncommitted changes and new files too.
	index := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	git(t, root, index, "read-tree", "HEAD")
	git(t, root, index, "add", "-A")
	tree := strings.TrimSpace(git(t, root, index, "write-tree"))
	commit := strings.TrimSpace(git(t, root, nil, "commit-tree", "-m", "the pull request", tree))
	base = strings.TrimSpace(git(t, root, nil, "commit-tree", "-m", "the base branch", tree))

	origin := filepath.Join(tmp, "origin.git")
	git(t, tmp, nil, "init", "-q", "--bare", origin)
	git(t, root, nil, "push", "-q", origin, base+":refs/heads/main", commit+":"+ref)

	work = filepath.Join(tmp, "work")
	git(t, tmp, nil, "init", "-q", work)
	git(t, work, nil, "remote", "add", "origin", "file://"+origin)
	git(t, work, nil, "fetch", "-q", "--no-tags", "--depth=1", "origin", "+"+ref+":refs/remotes/pull/merge")
	git(t, work, nil, "checkout", "-q", "--force", "refs/remotes/pull/merge")
	return work, base
}

// benchedBase checks that the recipe checked out the base branch's commit
// beside the pull request: not, say, the pull request itself again.
func benchedBase(t *testing.T, work, base string) {
	t.Helper()
	if list := git(t, work, nil, "worktree", "list", "--porcelain"); !strings.Contains(list, "HEAD "+base+"\n") {
		t.Errorf("no worktree holds the base branch's commit %s:\n%s", base, list)
	}
}

// git runs git in dir with env added and returns its output.
func git(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{
		"GIT_AUTHOR_NAME=rlconform", "GIT_AUTHOR_EMAIL=ci@rlconform.invalid",
		"GIT_COMMITTER_NAME=rlconform", "GIT_COMMITTER_EMAIL=ci@rlconform.invalid",
	}, env...)...)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

// runStep runs a step's command as script does; it fails the test with
// the step's name and output when the command exits non-zero.
func runStep(t *testing.T, name, dir string, env []string, command ...string) {
	t.Helper()
	began := time.Now()
	code, out := script(t, dir, env, command...)
	t.Logf("step %q: exit status %d in %s\n%s", name, code, time.Since(began).Round(time.Millisecond), out)
	if code != 0 {
		t.Fatalf("step %q failed: exit status %d (its output is above)", name, code)
	}
}
