package suite

import (
	"fmt"
	"slices"
	"strings"
)

// Level groups specs by how much they demand. Levels are cumulative: a
// limiter conformant at strict also passes core.
type Level string

// The levels, in order.
const (
	Core   Level = "core"   // the eight behaviours every limiter must get right
	Strict Level = "strict" // an exact sliding window, under concurrency, on a shared store
	Robust Level = "robust" // odd input, key hygiene, store faults
	// All is every level: today the same specs as Robust, and whatever
	// level is added later.
	All Level = "all"
)

// Levels lists every level in order.
var levels = []Level{Core, Strict, Robust}

// ParseLevel parses core, strict, robust or all.
func ParseLevel(s string) (Level, error) {
	switch s {
	case string(Core), string(Strict), string(Robust), string(All):
		return Level(s), nil
	}
	return "", fmt.Errorf("unknown level %q: want core, strict, robust or all", s)
}

// includes reports whether a run at level l runs specs of level s.
func (l Level) includes(s Level) bool {
	return l == All || slices.Index(levels, s) <= slices.Index(levels, l)
}

// need is a capability, or a condition of the run, that a spec requires.
type need string

const (
	needClockBack need = "clock-step-back" // moves the clock back: never in real time
	needConfigure need = "configure"
	needRemaining need = "remaining"
	needReset     need = "reset"
	needShared    need = "shared-store"
	needInspect   need = "store-inspection"
	needOwnRedis  need = "owned-redis" // a Redis this run started, so it may stop it
	needInProcess need = "in-process"  // the target's methods get the grader's contexts themselves
)

// spec is one entry of the catalogue: a stable id, the rule it proves, and
// the body that proves it.
type spec struct {
	id    string
	level Level
	rule  string
	needs []need
	run   func(h *harness)
	// hint is the usual cause of a failure, printed with it.
	hint string
}

// retired maps the ids of retired specs to what replaced them: asking for
// one says so.
var retired = map[string]string{
	"core/sliding-expiry-realtime": "core/sliding-expiry, which is graded in real time when the target has no clock control",
}

// catalogue is every spec, in the order they run. Ids are stable: never
// rename one; retire it and add a new one.
func catalogue() []spec {
	return slices.Concat(coreSpecs(), strictSpecs(), robustSpecs())
}

// SpecInfo describes a spec for listings.
type SpecInfo struct {
	ID    string
	Level Level
	Rule  string
	Needs []string
}

// Specs lists the catalogue.
func Specs() []SpecInfo {
	var out []SpecInfo
	for _, s := range catalogue() {
		info := SpecInfo{ID: s.id, Level: s.level, Rule: s.rule}
		for _, n := range s.needs {
			info.Needs = append(info.Needs, string(n))
		}
		out = append(out, info)
	}
	return out
}

// labels are the Ginkgo labels of a spec: its level and what it needs.
func (s *spec) labels() []string {
	out := []string{string(s.level)}
	for _, n := range s.needs {
		out = append(out, "needs-"+string(n))
	}
	return out
}

// title is the spec's text in Ginkgo and in failure headers.
func (s *spec) title() string { return s.id + ": " + s.rule }

// hasLabel reports whether the spec carries any of labels (empty: all).
func (s *spec) hasLabel(labels []string) bool {
	if len(labels) == 0 {
		return true
	}
	for _, l := range s.labels() {
		if slices.Contains(labels, l) {
			return true
		}
	}
	return false
}

// matches reports whether the spec is selected by ids (exact ids or
// prefixes ending in "/"; empty selects all).
func (s *spec) matches(ids []string) bool {
	if len(ids) == 0 {
		return true
	}
	for _, id := range ids {
		if s.id == id || (strings.HasSuffix(id, "/") && strings.HasPrefix(s.id, id)) {
			return true
		}
	}
	return false
}
