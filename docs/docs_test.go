// Package docs checks the README and the pages of docs/ against the tree:
// the README opens with the two commands CI runs, stays one screen long,
// every relative link resolves (to a file, and to a heading of it), and
// every verdict example counts today's catalogue.
package docs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/rlconform/rlconform/suite"
)

// readmeMaxLines bounds the README: it orients in one screen, and the rest
// lives in docs/ (issue #25).
const readmeMaxLines = 200

// pages returns the README and every page of docs/, as paths from docs/.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no pages in docs/: %v", err)
	}
	return append([]string{"../README.md"}, docs...)
}

func read(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return string(raw)
}

// prose returns the lines of a Markdown page outside fenced code blocks,
// and the first fenced block's lines.
func prose(text string) (lines, firstBlock []string) {
	inFence, seen := false, false
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			if inFence {
				seen = true
			}
			inFence = !inFence
			continue
		}
		switch {
		case !inFence:
			lines = append(lines, line)
		case !seen:
			firstBlock = append(firstBlock, line)
		}
	}
	return lines, firstBlock
}

// TestReadmeOpensWithTheTwoCommands: the README's first commands are the
// main job and the test command, both make targets, and .ci/run runs the
// README's test command.
func TestReadmeOpensWithTheTwoCommands(t *testing.T) {
	_, block := prose(read(t, "../README.md"))
	var cmds []string
	for _, line := range block {
		if cmd, _, _ := strings.Cut(line, "#"); strings.TrimSpace(cmd) != "" {
			cmds = append(cmds, strings.TrimSpace(cmd))
		}
	}
	want := []string{"make conformance", "make test"}
	if fmt.Sprint(cmds) != fmt.Sprint(want) {
		t.Fatalf("the README's first code block runs %q, want %q", cmds, want)
	}
	makefile := read(t, "../Makefile")
	for _, target := range []string{"conformance", "test"} {
		if !regexp.MustCompile(`(?m)^` + target + `:`).MatchString(makefile) {
			t.Errorf("the Makefile has no target %q, which the README opens with", target)
		}
	}
	if !regexp.MustCompile(`(?m)^make test$`).MatchString(read(t, "../.ci/run")) {
		t.Errorf(".ci/run does not run the README's test command, make test")
	}
}

// TestReadmeIsOneScreen: the README stays short; the rest goes to docs/.
func TestReadmeIsOneScreen(t *testing.T) {
	n := strings.Count(read(t, "../README.md"), "\n")
	if n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail to a page of docs/ and link it", n, readmeMaxLines)
	}
}

var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestLinksResolve: every relative link of the README and of docs/ names a
// file or directory of the tree, and a #fragment names a heading of the
// page it points to.
func TestLinksResolve(t *testing.T) {
	for _, page := range pages(t) {
		lines, _ := prose(read(t, page))
		for _, m := range linkRE.FindAllStringSubmatch(strings.Join(lines, "\n"), -1) {
			if err := checkLink(page, m[1]); err != nil {
				t.Errorf("%s: link %s: %v", page, m[1], err)
			}
		}
	}
}

// checkLink checks one link of page.
func checkLink(page, link string) error {
	if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
		return nil
	}
	path, frag, _ := strings.Cut(link, "#")
	target := page
	if path != "" {
		target = filepath.Join(filepath.Dir(page), path)
	}
	if _, err := os.Stat(target); err != nil {
		return fmt.Errorf("no such file: %w", err)
	}
	if frag == "" {
		return nil
	}
	if !strings.HasSuffix(target, ".md") {
		return fmt.Errorf("a #fragment on a file that is not Markdown")
	}
	raw, err := os.ReadFile(target)
	if err != nil {
		return fmt.Errorf("reading %s: %w", target, err)
	}
	anchors := headingAnchors(string(raw))
	if !anchors[frag] {
		return fmt.Errorf("%s has no heading with the anchor #%s", target, frag)
	}
	return nil
}

// headingAnchors returns the anchors GitHub gives a page's headings:
// lower-cased, punctuation dropped, spaces made hyphens, a repeated one
// suffixed -1, -2, ...
func headingAnchors(text string) map[string]bool {
	lines, _ := prose(text)
	anchors, seen := map[string]bool{}, map[string]int{}
	for _, line := range lines {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a]++
			a += "-" + strconv.Itoa(n)
		} else {
			seen[a] = 1
		}
		anchors[a] = true
	}
	return anchors
}

// verdictRE matches the counts of a whole run, across a line break too:
// its verdict ("CONFORMANT at all: 28 of 30 graded"; a run narrowed by
// --id, --label or --level counts what it selected), its start ("grading
// reference, 30 specs") and the README's "catalogue (30 specs)".
var verdictRE = regexp.MustCompile(`\bat\s+all:\s+\d+\s+of\s+(\d+)\s+graded|grading\s[^,\n]+,\s+(\d+)\s+specs|catalogue\s+\((\d+)\s+specs\)`)

// TestVerdictExamplesCountTheCatalogue: every example of a whole run in the
// README and docs/ counts as many specs as the catalogue has today.
func TestVerdictExamplesCountTheCatalogue(t *testing.T) {
	want := len(suite.Specs())
	found := 0
	for _, page := range pages(t) {
		text := read(t, page)
		for _, m := range verdictRE.FindAllStringSubmatchIndex(text, -1) {
			example := text[m[0]:m[1]]
			var n string
			for g := 2; g < len(m); g += 2 {
				if m[g] >= 0 {
					n = text[m[g]:m[g+1]]
				}
			}
			got, err := strconv.Atoi(n)
			if err != nil {
				t.Fatalf("%s: %q: %v", page, example, err)
			}
			found++
			if got != want {
				t.Errorf("%s: %q counts %d specs; the catalogue has %d (rlconform list)", page, example, got, want)
			}
		}
	}
	if found == 0 {
		t.Fatal("no verdict example found: the pattern no longer matches the docs")
	}
}
