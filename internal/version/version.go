// Package version says which rlconform this is: the module's version,
// the commit it was built from, the Go that built it, and the version of
// the catalogue (a hash of every spec's id, level, needs and rule), so
// that a report says which grader, and which rules, judged it.
package version

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/rlconform/rlconform/grade"
)

// stamped and stampedCommit are the version and commit a source build is
// stamped with (the Makefile's -ldflags -X, with git describe and git
// rev-parse: a machine may build with -buildvcs=false); empty otherwise.
// The linker sets them once, before main: they are never written at run
// time.
var stamped, stampedCommit string

// Info is which rlconform this is.
type Info struct {
	// Version is the module's version: the one stamped at build time,
	// else the one go install …@vX.Y.Z records, else "(devel)".
	Version string
	// Commit is the commit built from (12 hex digits), with ", modified"
	// when the work tree had changes; empty when the build recorded none.
	Commit string
	// Go is the Go version that built it.
	Go string
	// Catalogue is the catalogue's version: 12 hex digits of a SHA-256
	// of every spec's id, level, needs and rule, by id.
	Catalogue string
	// Specs is how many specs the catalogue has.
	Specs int
}

// Of is the Info of this build, with the catalogue specs.
func Of(specs []grade.SpecInfo) Info {
	info := Info{Version: "(devel)", Go: runtime.Version(), Catalogue: Catalogue(specs), Specs: len(specs)}
	bi, ok := debug.ReadBuildInfo()
	if ok && bi.Main.Version != "" {
		info.Version = bi.Main.Version
	}
	if stamped != "" {
		info.Version = stamped
	}
	if ok {
		info.Commit = commit(bi.Settings)
	}
	if info.Commit == "" && stampedCommit != "" {
		info.Commit = stampedCommit[:min(12, len(stampedCommit))]
	}
	return info
}

// commit is the revision a build recorded, shortened, with ", modified"
// for a work tree with changes.
func commit(settings []debug.BuildSetting) string {
	var rev, modified string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return rev[:min(12, len(rev))] + modified
}

// Catalogue is the version of a catalogue: 12 hex digits of a SHA-256 of
// every spec's id, level, needs and rule, by id (the order the catalogue
// runs them in is no rule). A spec added, retired or reworded changes it.
func Catalogue(specs []grade.SpecInfo) string {
	byID := slices.SortedFunc(slices.Values(specs), func(a, b grade.SpecInfo) int { return strings.Compare(a.ID, b.ID) })
	h := sha256.New()
	for _, s := range byID {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\n", s.ID, s.Level, strings.Join(s.Needs, ","), s.Rule)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// String is the version in one line, as every report carries it:
// "v0.1.0 (commit 0123456789ab, catalogue 0123456789ab)".
func (i Info) String() string {
	var more []string
	if i.Commit != "" {
		more = append(more, "commit "+i.Commit)
	}
	more = append(more, "catalogue "+i.Catalogue)
	return i.Version + " (" + strings.Join(more, ", ") + ")"
}

// Long is the version as rlconform version prints it, a line each.
func (i Info) Long() string {
	commit := i.Commit
	if commit == "" {
		commit = "(not recorded: built outside a git checkout, or by go run)"
	}
	return fmt.Sprintf("rlconform %s\ncommit    %s\ngo        %s\ncatalogue %s (%d specs)\n", i.Version, commit, i.Go, i.Catalogue, i.Specs)
}
