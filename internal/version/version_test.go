package version

import (
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rlconform/rlconform/grade"
	"github.com/rlconform/rlconform/result"
)

// buildSettings are what this test binary's build recorded.
func buildSettings() []debug.BuildSetting {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Settings
	}
	return nil
}

var catalogue = []grade.SpecInfo{
	{ID: "core/allow-within-limit", Level: result.Core, Rule: "N requests in a window are allowed"},
	{ID: "strict/raised-limit", Level: result.Strict, Rule: "a raised limit applies to the history", Needs: []string{"configure"}},
}

// The catalogue's version is stable for the same specs, and changes
// when a spec is added, removed, reworded, moved to another level or
// needs something else.
func TestCatalogueChangesWithTheRules(t *testing.T) {
	v := Catalogue(catalogue)
	assert.Len(t, v, 12)
	assert.Equal(t, v, Catalogue(slices.Clone(catalogue)), "stable")
	assert.Equal(t, v, Catalogue([]grade.SpecInfo{catalogue[1], catalogue[0]}), "the order the specs run in is no rule")
	changed := map[string]func(s []grade.SpecInfo) []grade.SpecInfo{
		"a spec added":   func(s []grade.SpecInfo) []grade.SpecInfo { return append(s, grade.SpecInfo{ID: "robust/new"}) },
		"a spec retired": func(s []grade.SpecInfo) []grade.SpecInfo { return s[:1] },
		"a rule reworded": func(s []grade.SpecInfo) []grade.SpecInfo {
			s[0].Rule += "."
			return s
		},
		"another level": func(s []grade.SpecInfo) []grade.SpecInfo {
			s[0].Level = result.Strict
			return s
		},
		"another need": func(s []grade.SpecInfo) []grade.SpecInfo {
			s[1].Needs = []string{"reset"}
			return s
		},
	}
	for name, change := range changed {
		s := slices.Clone(catalogue)
		s[1].Needs = slices.Clone(s[1].Needs)
		assert.NotEqual(t, v, Catalogue(change(s)), name)
	}
}

// A build says its version: the stamped one first, else the module's,
// else (devel); its commit as recorded; and the catalogue's version in
// the one line every report carries.
func TestInfo(t *testing.T) {
	i := Of(catalogue)
	assert.Equal(t, runtime.Version(), i.Go)
	assert.Equal(t, 2, i.Specs)
	assert.Contains(t, i.String(), "catalogue "+Catalogue(catalogue))
	assert.Contains(t, i.Long(), "catalogue "+Catalogue(catalogue)+" (2 specs)")

	stamped, stampedCommit = "v0.1.0-3-gabcdef", "abcdef0123456789"
	t.Cleanup(func() { stamped, stampedCommit = "", "" })
	assert.Equal(t, "v0.1.0-3-gabcdef", Of(catalogue).Version)
	assert.True(t, strings.HasPrefix(Of(catalogue).String(), "v0.1.0-3-gabcdef (commit "))
	if c := commit(buildSettings()); c == "" {
		assert.Equal(t, "abcdef012345", Of(catalogue).Commit, "the stamped commit, shortened, when the build recorded none")
	}

	assert.Equal(t, "0123456789ab, modified", commit([]debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}))
	assert.Equal(t, "0123456789ab", commit([]debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "false"}}))
	assert.Empty(t, commit(nil))
}
