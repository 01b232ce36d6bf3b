package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/result"
)

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
	needOpaqueIDs need = "opaque-ids"  // the limiter receives the user ids as given
	needEndpoint  need = "endpoint"    // answers carry HTTP rate-limit fields
	needUsers     need = "users"       // several users, each with a limit of its own
)

// spec is one entry of the catalogue: a stable id, the rule it proves, and
// the body that proves it.
type spec struct {
	id    string
	level result.Level
	rule  string
	needs []need
	run   func(h *harness)
	// hint is the usual cause of a failure of a sliding log, printed with it.
	hint string
	// hintAllProfiles: the hint holds whatever the algorithm (the rule is
	// not about when requests count), so it is given under every profile,
	// not the profile's rules.
	hintAllProfiles bool
	// realTimeHint, when set, replaces hint without clock control, where
	// more causes give the same failure.
	realTimeHint string
	// general is the rule as every profile states it, when rule is the
	// sliding log's own wording.
	general string
	// logOnly, when set, is why the spec grades the sliding log alone;
	// rtLogOnly why it does without clock control.
	logOnly, rtLogOnly string
	// limitChange: the spec changes the limit under users with history,
	// which some profiles leave to the implementation.
	limitChange bool
	// minDecided is how many answers (or rounds) the spec must decide to
	// pass: with fewer it is inconclusive, never passed. Specs that judge
	// answers one by one decide each one on the fake clock; those whose
	// answers can all turn out unknown (calls without an answer) or
	// undecided (in real time) set it.
	minDecided int
}

// ruleFor is the rule the spec checks under a profile.
func (s *spec) ruleFor(p model.Spec) string {
	if !p.IsSlidingLog() && s.general != "" {
		return s.general
	}
	return s.rule
}

// outside says why the spec does not grade profile p (with or without a
// clock), or "" when it does.
func (s *spec) outside(p model.Spec, clock bool) string {
	switch {
	case p.IsSlidingLog():
		return ""
	case s.logOnly != "":
		return fmt.Sprintf("not part of profile %s: %s", p.Name, s.logOnly)
	case s.limitChange && !p.LimitChangeGraded():
		return fmt.Sprintf("not part of profile %s: it changes the limit under users with history, and whether a bucket or arrival time is settled at the old rate up to the change or refilled at the new one differs between honest implementations", p.Name)
	case s.rtLogOnly != "" && !clock:
		return fmt.Sprintf("not part of profile %s without clock control: %s", p.Name, s.rtLogOnly)
	}
	return ""
}

// retired maps the ids of retired specs to what replaced them: asking for
// one says so.
var retired = map[string]string{
	"core/sliding-expiry-realtime": "core/sliding-expiry, which is graded in real time when the target has no clock control",
}

// catalogue is every spec, in the order they run. Ids are stable: never
// rename one; retire it and add a new one.
func catalogue() []spec {
	return slices.Concat(coreSpecs(), strictSpecs(), robustSpecs(), httpSpecs())
}

// SpecInfo is suite.SpecInfo, field for field.
type SpecInfo struct {
	ID                  string
	Level               result.Level
	Rule                string
	Needs               []string
	NotGraded           string `json:",omitempty"`
	NotGradedInRealTime string `json:",omitempty"`
}

// Specs lists the catalogue, with the rules of the sliding log.
func Specs() []SpecInfo {
	out, _ := ProfileSpecs("")
	return out
}

// ProfileSpecs lists the catalogue as it grades a profile
// (model.ParseSpec: NAME[:key=value,...]; "" is the sliding log): each
// rule as the profile states it, and why a spec does not grade it.
func ProfileSpecs(profile string) ([]SpecInfo, error) {
	p, err := model.ParseSpec(profile)
	if err != nil {
		return nil, err
	}
	var out []SpecInfo
	for _, s := range catalogue() {
		info := SpecInfo{ID: s.id, Level: s.level, Rule: s.ruleFor(p), NotGraded: s.outside(p, true)}
		if info.NotGraded == "" {
			info.NotGradedInRealTime = s.outside(p, false)
		}
		for _, n := range s.needs {
			info.Needs = append(info.Needs, string(n))
		}
		out = append(out, info)
	}
	return out, nil
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

// titleFor is the title under profile p.
func (s *spec) titleFor(p model.Spec) string { return s.id + ": " + s.ruleFor(p) }

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
