//go:build unix

package ci

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rhysd/actionlint"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/rlconform/rlconform/internal/testaddr"
	"github.com/rlconform/rlconform/internal/testtier"
)

// actionUses is how the recipe names the action; the lint reads it from
// the tree instead (uses: ./).
const actionUses = "uses: rlconform/rlconform@v0"

// action is the part of action.yml the test reads.
type action struct {
	Inputs map[string]struct {
		Default string
	}
	Outputs map[string]struct {
		Value string
	}
	Runs struct {
		Using string
		Steps []struct {
			ID, Name, Shell, Run string
			Env                  map[string]string
		}
	}
}

// readAction reads the action's metadata at the root of the tree.
func readAction(t *testing.T, root string) action {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, "action.yml"))
	require.NoError(t, err)
	var a action
	require.NoError(t, yaml.Unmarshal(src, &a))
	return a
}

// root is the top of this tree.
func root(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(git(t, ".", nil, "rev-parse", "--show-toplevel"))
}

// TestActionTakesItsInputsAsText: action.yml is a composite action with
// the inputs and outputs docs/ci.md names, and no script of it holds an
// expression: every input reaches a script through the environment, so
// that an input is never shell code.
func TestActionTakesItsInputsAsText(t *testing.T) {
	a := readAction(t, root(t))
	assert.Equal(t, "composite", a.Runs.Using)
	var inputs, outputs []string
	for name := range a.Inputs {
		inputs = append(inputs, name)
	}
	for name := range a.Outputs {
		outputs = append(outputs, name)
	}
	assert.ElementsMatch(t, []string{"args", "target", "exec", "endpoint", "working-directory", "fail-on", "releases"}, inputs)
	assert.ElementsMatch(t, []string{"verdict", "exit-code", "report-json", "report-html"}, outputs)
	passed := map[string]bool{}
	for _, s := range a.Runs.Steps {
		assert.Equal(t, "bash", s.Shell, "step %q", s.Name)
		assert.NotContains(t, s.Run, "${{", "step %q: an expression in a script is shell code", s.Name)
		for _, v := range s.Env {
			for _, m := range regexp.MustCompile(`\$\{\{\s*inputs\.([a-z-]+)\s*}}`).FindAllStringSubmatch(v, -1) {
				passed[m[1]] = true
			}
		}
	}
	for _, name := range inputs {
		assert.True(t, passed[name], "input %s reaches a script through the environment", name)
	}
}

// TestGitHubActionRecipe lints docs/ci/github-action.yml with actionlint,
// the action read from this tree so that its inputs are checked against
// action.yml (a misspelt input is seen to fail the lint), and runs the
// job's steps: run: steps with bash -e, the action's own steps as a
// runner does (the action's path, its inputs through the environment, a
// GITHUB_STEP_SUMMARY and a GITHUB_OUTPUT of each step's own), then
// checks its outputs and the path the upload step names.
func TestGitHubActionRecipe(t *testing.T) {
	const path = "github-action.yml"
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(src), actionUses)
	local := strings.Replace(string(src), actionUses, "uses: ./", 1)
	assert.Empty(t, lintWith(t, local), "actionlint")
	assert.NotEmpty(t, lintWith(t, strings.Replace(local, "args:", "arg:", 1)), "a misspelt input fails the lint")

	var wf workflow
	require.NoError(t, yaml.Unmarshal(src, &wf))
	job := wf.Jobs["rlconform"]
	testtier.SkipShort(t, "runs the job's steps and the action's")
	work, _ := checkout(t, "refs/pull/1/merge")
	outputs := map[string]map[string]string{}
	for _, step := range job.Steps {
		switch {
		case step.Run != "":
			runStep(t, step.Name, filepath.Join(work, step.WorkingDirectory), nil, "bash", "-e", "-c", step.Run)
		case "uses: "+step.Uses == actionUses:
			with := step.With
			if !full { // the fast subset grades core only
				with["args"] += " --level core"
			}
			// The action's checkout is not the workspace: this tree's.
			run := runAction(t, root(t), work, with, "")
			require.Equal(t, 0, run.code, "the action's exit code\n%s", run.log)
			assert.Equal(t, "conformant", run.outputs["verdict"])
			assert.Equal(t, "0", run.outputs["exit-code"])
			assert.FileExists(t, run.outputs["report-json"])
			assert.FileExists(t, run.outputs["report-html"])
			assert.Contains(t, run.summary, "## rlconform:", "the Markdown summary is on the job's summary page")
			outputs[step.ID] = run.outputs
		}
	}
	expr := regexp.MustCompile(`\$\{\{\s*steps\.([a-z-]+)\.outputs\.([a-z-]+)\s*}}`)
	for _, step := range job.Steps {
		paths := expr.ReplaceAllStringFunc(step.With["path"], func(e string) string {
			m := expr.FindStringSubmatch(e)
			return outputs[m[1]][m[2]]
		})
		for _, p := range strings.Fields(paths) {
			assert.FileExists(t, p, "step %q uploads it", step.Uses)
		}
	}
}

// lintWith lints a workflow with actionlint, in the project of this tree
// (so that uses: ./ is this tree's action), and returns what it found.
func lintWith(t *testing.T, src string) string {
	t.Helper()
	var out bytes.Buffer
	linter, err := actionlint.NewLinter(&out, &actionlint.LinterOptions{})
	require.NoError(t, err)
	project, err := actionlint.NewProject(root(t))
	require.NoError(t, err)
	errs, err := linter.Lint("github-action.yml", []byte(src), project)
	require.NoError(t, err)
	if len(errs) == 0 {
		return ""
	}
	return out.String()
}

// actionRun is what one run of the action did.
type actionRun struct {
	code    int
	outputs map[string]string
	summary string
	log     string
}

// runAction runs the action at actionPath as a runner runs a composite
// action, in workspace, with the inputs with (the others their
// defaults): each step's script with bash -e -o pipefail, its env with
// each expression of an input or of the action's path replaced, and a
// GITHUB_STEP_SUMMARY and a GITHUB_OUTPUT file of its own; it stops at
// the first step that fails. The action's outputs are evaluated from its
// steps'.
//
// ref is the action's ref (github.action_ref): empty, as for uses: ./, or
// a branch builds from source; a version tag installs the release. env
// is added to every step's (RUNNER_OS=Linux and RUNNER_ARCH=X64 unless it
// says otherwise).
func runAction(t *testing.T, actionPath, workspace string, with map[string]string, ref string, env ...string) actionRun {
	t.Helper()
	a := readAction(t, actionPath)
	for name := range with {
		require.Contains(t, a.Inputs, name, "the action has an input %s", name)
	}
	runnerTemp := t.TempDir()
	expr := regexp.MustCompile(`\$\{\{\s*([a-z._-]+)\s*}}`)
	var run actionRun
	steps := map[string]map[string]string{}
	for i, s := range a.Runs.Steps {
		dir := t.TempDir()
		summary, output := filepath.Join(dir, "summary"), filepath.Join(dir, "output")
		require.NoError(t, os.WriteFile(summary, nil, 0o644))
		require.NoError(t, os.WriteFile(output, nil, 0o644))
		env := append([]string{"GITHUB_WORKSPACE=" + workspace, "RUNNER_TEMP=" + runnerTemp, "GITHUB_STEP_SUMMARY=" + summary, "GITHUB_OUTPUT=" + output,
			"RUNNER_OS=Linux", "RUNNER_ARCH=X64"}, env...)
		for k, v := range s.Env {
			v = expr.ReplaceAllStringFunc(v, func(e string) string {
				name := expr.FindStringSubmatch(e)[1]
				switch name {
				case "github.action_path":
					return actionPath
				case "github.action_ref":
					return ref
				}
				input, ok := strings.CutPrefix(name, "inputs.")
				require.True(t, ok, "step %q: an expression the test does not evaluate: %s", s.Name, e)
				if v, given := with[input]; given {
					return v
				}
				return a.Inputs[input].Default
			})
			env = append(env, k+"="+v)
		}
		began := time.Now()
		code, log := script(t, workspace, env, "bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", s.Run)
		t.Logf("action step %d %q: exit %d in %v", i+1, s.Name, code, time.Since(began).Round(time.Millisecond))
		run.log += "step " + strconv.Itoa(i+1) + " " + s.Name + ":\n" + log
		sum, err := os.ReadFile(summary)
		require.NoError(t, err)
		run.summary += string(sum)
		steps[s.ID] = readOutputs(t, output)
		if run.code = code; code != 0 {
			break
		}
	}
	run.outputs = map[string]string{}
	out := regexp.MustCompile(`^\$\{\{\s*steps\.([a-z-]+)\.outputs\.([a-z-]+)\s*}}$`)
	for name, o := range a.Outputs {
		m := out.FindStringSubmatch(o.Value)
		require.NotNil(t, m, "output %s: %s", name, o.Value)
		if v, ok := steps[m[1]][m[2]]; ok {
			run.outputs[name] = v
		}
	}
	return run
}

// readOutputs reads a GITHUB_OUTPUT file: name=value lines, and
// name<<DELIMITER blocks.
func readOutputs(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := sc.Text()
		if name, delim, ok := strings.Cut(line, "<<"); ok && !strings.Contains(name, "=") {
			var value []string
			for sc.Scan() && sc.Text() != delim {
				value = append(value, sc.Text())
			}
			out[name] = strings.Join(value, "\n")
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		require.True(t, ok, "GITHUB_OUTPUT: %q is neither name=value nor name<<DELIMITER", line)
		out[name] = value
	}
	return out
}

// script runs command in dir with env added, the local rlconform first
// on PATH and npm kept off the network where its cache will do, for at
// most 10 minutes, and returns its exit code and output.
func script(t *testing.T, dir string, env []string, command ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		// npm ci takes the packages from npm's cache (make node-deps filled
		// it) without asking the registry again, and sends no audit: a
		// registry that stalls (once for 5 minutes here) stalls no test.
		"npm_config_prefer_offline=true", "npm_config_audit=false", "npm_config_fund=false"), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// The command's processes (the services --exec starts, too) go with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return ee.ExitCode(), out.String()
	}
	require.NoError(t, err, "%s", out.String())
	return 0, out.String()
}

// mutantService is an --exec command that serves a mutant rlconform
// fails (strict/boundary-burst-epoch) on the run's Redis.
const mutantService = `REDIS_URL="$RLCONFORM_REDIS_URL" exec rlconform serve --addr "127.0.0.1:$PORT" --prefix "$RLCONFORM_KEY_PREFIX" --impl mutant:fixed-window-epoch`

// TestActionExitsWithRlconformsStatus: on a limiter that is wrong, the
// action exits 1 and says not-conformant, unless fail-on never lets the
// step pass (its outputs still say what happened); an unknown fail-on is
// refused (exit 2), and inputs that would be shell code are text: no
// command in them runs.
func TestActionExitsWithRlconformsStatus(t *testing.T) {
	testtier.SkipShort(t, "runs the action")
	top := root(t)
	work := t.TempDir()
	failing := map[string]string{"exec": mutantService, "args": "--id strict/boundary-burst-epoch"}
	for _, tt := range []struct {
		name    string
		with    map[string]string
		code    int
		verdict string
		rlcode  string
		reports bool
	}{
		{"not conformant", failing, 1, "not-conformant", "1", true},
		{"report only", with(failing, "fail-on", "never"), 0, "not-conformant", "1", true},
		{"undecided passes fail-on not-conformant", map[string]string{"target": "http://" + testaddr.Refused(t), "fail-on": "not-conformant"}, 0, "undecided", "2", true},
		{"unknown fail-on", with(failing, "fail-on", "sometimes"), 2, "", "", false},
		{"inputs are text", map[string]string{"target": "$(touch pwned-target)", "args": "--level core; touch pwned-args `touch pwned-tick`"}, 2, "undecided", "2", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run := runAction(t, top, work, tt.with, "")
			assert.Equal(t, tt.code, run.code, run.log)
			assert.Equal(t, tt.verdict, run.outputs["verdict"], run.log)
			assert.Equal(t, tt.rlcode, run.outputs["exit-code"], run.log)
			if tt.reports {
				assert.FileExists(t, run.outputs["report-html"])
			}
			entries, err := os.ReadDir(work)
			require.NoError(t, err)
			assert.False(t, slices.ContainsFunc(entries, func(e os.DirEntry) bool { return strings.HasPrefix(e.Name(), "pwned") }),
				"no command of an input ran")
		})
	}
}

// with is m with name set to value.
func with(m map[string]string, name, value string) map[string]string {
	out := map[string]string{name: value}
	for k, v := range m {
		if k != name {
			out[k] = v
		}
	}
	return out
}
