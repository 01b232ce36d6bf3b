package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/result"
)

// Need is a capability, or a condition of the run, that a spec requires.
type Need string

const (
	NeedClockBack Need = "clock-step-back" // moves the clock back: never in real time
	NeedConfigure Need = "configure"
	NeedAnyWindow Need = "configure-any-window" // Configure over the contract's range of windows (not only Capabilities.UnitWindows)
	NeedRemaining Need = "remaining"
	NeedReset     Need = "reset"
	NeedShared    Need = "shared-store"
	NeedInspect   Need = "store-inspection"
	NeedOwnRedis  Need = "owned-redis" // a store the run may stop and freeze: a Redis it started, or Target.StoreFault
	NeedInProcess Need = "in-process"  // the target's methods get the grader's contexts themselves
	NeedOpaqueIDs Need = "opaque-ids"  // the limiter receives the user ids as given
	NeedEndpoint  Need = "endpoint"    // answers carry HTTP rate-limit fields
	NeedUsers     Need = "users"       // several users, each with a limit of its own
	NeedCost      Need = "cost"        // weighted requests (contract.CostLimiter)
)

// Spec is one entry of the catalogue: a stable id, the rule it proves, and
// the body that proves it.
type Spec struct {
	ID    string
	Level result.Level
	Rule  string
	Needs []Need
	Run   func(h *Harness)
	// Hint is the usual cause of a failure of a sliding log, printed with it.
	Hint string
	// HintAllProfiles: the hint holds whatever the algorithm (the rule is
	// not about when requests count), so it is given under every profile,
	// not the profile's rules.
	HintAllProfiles bool
	// RealTimeHint, when set, replaces hint without clock control, where
	// more causes give the same failure.
	RealTimeHint string
	// General is the rule as every profile states it, when rule is the
	// sliding log's own wording.
	General string
	// LogOnly, when set, is why the spec grades the sliding log alone;
	// rtLogOnly why it does without clock control.
	LogOnly, RTLogOnly string
	// Reconfigures: the spec changes the limit or the window under users
	// with history: graded under a profile that states how a change reads
	// (model.Variant.LimitChangeGraded), against every honest reading it
	// names.
	Reconfigures bool
	// MinDecided is how many answers (or rounds) the spec must decide to
	// pass: with fewer it is inconclusive, never passed. Specs that judge
	// answers one by one decide each one on the fake clock; those whose
	// answers can all turn out unknown (calls without an answer) or
	// undecided (in real time) set it.
	MinDecided int
	// Aims: in real time the spec's catch rests on requests landing
	// within a round trip of an instant it aims at (a window's edge, one
	// millisecond), so on a target whose lanes are processes beside the
	// grader's (Target.Lanes) it runs alone: specs beside it, on the same
	// cores, spread its requests past what it aims at (measured: four
	// --exec cards at once, four lanes each, missed symfony's
	// boundary-burst-epoch twice and its same-millisecond-burst once).
	Aims bool
}

// ruleFor is the rule the spec checks under a profile.
func (s *Spec) ruleFor(p model.Variant) string {
	if !p.IsSlidingLog() && s.General != "" {
		return s.General
	}
	return s.Rule
}

// outside says why the spec does not grade profile p (with or without a
// clock), or "" when it does.
func (s *Spec) outside(p model.Variant, clock bool) string {
	switch alg := p.Algorithm(); {
	case slices.Contains(s.Needs, NeedCost) && (alg == nil || alg.Cost == ""):
		return fmt.Sprintf("not part of profile %s: it states no rule for weighted requests", p.Name)
	case p.IsSlidingLog():
		return ""
	case s.LogOnly != "":
		return fmt.Sprintf("not part of profile %s: %s", p.Name, s.LogOnly)
	case s.Reconfigures && !p.LimitChangeGraded():
		return fmt.Sprintf("not part of profile %s: it changes the configuration under users with history, and the profile states no reading of a change", p.Name)
	case s.RTLogOnly != "" && !clock:
		return fmt.Sprintf("not part of profile %s without clock control: %s", p.Name, s.RTLogOnly)
	}
	return ""
}

// retired maps the ids of retired specs to what replaced them: asking for
// one says so.
var retired = map[string]string{
	"core/sliding-expiry-realtime": "core/sliding-expiry, which is graded in real time when the target has no clock control",
}

// Catalogue is every spec, in the order they run. Ids are stable: never
// rename one; retire it and add a new one. Package specs holds rlconform's
// (specs.All); the entry points below grade a target with one.
type Catalogue []Spec

// ProfileSpecs lists the catalogue as it grades a profile
// (model.ParseVariant: NAME[:key=value,...]; "" is the sliding log): each
// rule as the profile states it, and why a spec does not grade it.
func (cat Catalogue) ProfileSpecs(profile string) ([]SpecInfo, error) {
	p, err := model.ParseVariant(profile)
	if err != nil {
		return nil, err
	}
	var out []SpecInfo
	for _, s := range cat {
		info := SpecInfo{ID: s.ID, Level: s.Level, Rule: s.ruleFor(p), NotGraded: s.outside(p, true)}
		if info.NotGraded == "" {
			info.NotGradedInRealTime = s.outside(p, false)
		}
		for _, n := range s.Needs {
			info.Needs = append(info.Needs, string(n))
		}
		out = append(out, info)
	}
	return out, nil
}

// labels are the Ginkgo labels of a spec: its level and what it needs.
func (s *Spec) labels() []string {
	out := []string{string(s.Level)}
	for _, n := range s.Needs {
		out = append(out, "needs-"+string(n))
	}
	return out
}

// title is the spec's text in Ginkgo and in failure headers.
func (s *Spec) title() string { return s.ID + ": " + s.Rule }

// titleFor is the title under profile p.
func (s *Spec) titleFor(p model.Variant) string { return s.ID + ": " + s.ruleFor(p) }

// hasLabel reports whether the spec carries any of labels (empty: all).
func (s *Spec) hasLabel(labels []string) bool {
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
func (s *Spec) matches(ids []string) bool {
	if len(ids) == 0 {
		return true
	}
	for _, ID := range ids {
		if s.ID == ID || (strings.HasSuffix(ID, "/") && strings.HasPrefix(s.ID, ID)) {
			return true
		}
	}
	return false
}
