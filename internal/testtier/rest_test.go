package testtier

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tieredCalls are the functions of this package whose call makes a test
// do more in the full tier than in the default one.
var tieredCalls = []string{"Sample", "Seeds", "Runs", "SkipUnlessFull", "Full"}

// TestRestListsEveryTieredTest keeps rest.txt whole: make test-full runs
// only the tests it lists (with RLCONFORM_FULL=rest), so a test whose
// full tier does more than its default one (it calls Sample, Seeds, Runs,
// SkipUnlessFull or Full, itself or through a function or variable of its
// package) and is not listed would never run its rest; a listed test that
// no longer has one would run twice for nothing.
func TestRestListsEveryTieredTest(t *testing.T) {
	root := moduleRoot(t)
	listed := readRestList(t, filepath.Join(root, "internal", "testtier", "rest.txt"))
	found := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata" ||
			fileExists(filepath.Join(path, "go.mod"))) {
			return filepath.SkipDir // another module (cards/), or no Go of ours
		}
		if !d.IsDir() {
			return nil
		}
		tests, err := tieredTests(path)
		if len(tests) > 0 {
			rel, _ := filepath.Rel(root, path)
			found["./"+filepath.ToSlash(rel)] = tests
		}
		return err
	})
	require.NoError(t, err)
	for pkg, tests := range found {
		for _, name := range tests {
			if !slices.Contains(listed[pkg], name) {
				t.Errorf("%s %s does more in the full tier than in the default one: add the line %q to internal/testtier/rest.txt, or make test-full never runs its rest", pkg, name, pkg+" "+name)
			}
		}
	}
	for pkg, tests := range listed {
		for _, name := range tests {
			if !slices.Contains(found[pkg], name) {
				t.Errorf("internal/testtier/rest.txt lists %s %s, which has no part beyond the default tier (or no longer exists): remove the line", pkg, name)
			}
		}
	}
}

// tieredTests returns the top-level tests of the package in dir that do
// more in the full tier, sorted.
func tieredTests(dir string) ([]string, error) {
	pkgs, err := parseTests(dir)
	if err != nil {
		return nil, err
	}
	var tests []string
	for _, files := range pkgs {
		refs := map[string][]string{} // a package-level name and the names it refers to
		tiered := map[string]bool{}
		for _, f := range files {
			for _, decl := range f.Decls {
				for name, node := range declared(decl) {
					ast.Inspect(node, func(n ast.Node) bool {
						switch n := n.(type) {
						case *ast.SelectorExpr:
							if x, ok := n.X.(*ast.Ident); ok && x.Name == "testtier" && slices.Contains(tieredCalls, n.Sel.Name) {
								tiered[name] = true
							}
						case *ast.Ident:
							refs[name] = append(refs[name], n.Name)
						}
						return true
					})
				}
			}
		}
		for changed := true; changed; {
			changed = false
			for name, used := range refs {
				if !tiered[name] && slices.ContainsFunc(used, func(u string) bool { return tiered[u] && u != name }) {
					tiered[name], changed = true, true
				}
			}
		}
		for name := range tiered {
			if strings.HasPrefix(name, "Test") && name != "TestMain" {
				tests = append(tests, name)
			}
		}
	}
	slices.Sort(tests)
	return tests, nil
}

// parseTests parses the test files of dir, by package (p and p_test).
func parseTests(dir string) (map[string][]*ast.File, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	out := map[string][]*ast.File{}
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return nil, err
		}
		out[f.Name.Name] = append(out[f.Name.Name], f)
	}
	return out, nil
}

// declared maps the package-level names decl declares (functions, and
// variables with their initializers) to the node that defines each.
func declared(decl ast.Decl) map[string]ast.Node {
	out := map[string]ast.Node{}
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil && d.Body != nil {
			out[d.Name.Name] = d.Body
		}
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			if v, ok := spec.(*ast.ValueSpec); ok {
				for _, n := range v.Names {
					out[n.Name] = v
				}
			}
		}
	}
	return out
}

// readRestList reads rest.txt: "PACKAGE TEST" a line, # comments.
func readRestList(t *testing.T, path string) map[string][]string {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		require.Len(t, fields, 2, "rest.txt: %q is not \"PACKAGE TEST\"", line)
		out[fields[0]] = append(out[fields[0]], fields[1])
	}
	require.NoError(t, sc.Err())
	return out
}

func moduleRoot(t *testing.T) string {
	dir, err := filepath.Abs(".")
	require.NoError(t, err)
	for !fileExists(filepath.Join(dir, "go.mod")) {
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above the test")
		dir = parent
	}
	return dir
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
