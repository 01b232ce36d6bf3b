package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/rlconform/rlconform/suite"
)

// What a card's note says a failing spec shows, in the words of its
// Deviations: a bullet names the specs before its first colon, then
// classes them in bold ("- `robust/cost-negative`: **bug** (…)").
const (
	classBug       = "bug"              // the library breaks what it claims
	classDeviation = "honest deviation" // a limitation or trade-off, said so
	classDesign    = "documented design"
)

// classWords maps the bold words a note uses to a class.
var classWords = map[string]string{
	"bug":                      classBug,
	"limitation":               classDeviation,
	"deviation":                classDeviation,
	"trade-off of the default": classDeviation,
	"trade-off":                classDeviation,
	"by design":                classDesign,
}

var (
	bulletHead = regexp.MustCompile(`(?s)^- (.*?):\s+(?:the same\s+)?\*\*([^*]+)\*\*`)
	specID     = regexp.MustCompile("`([a-z]+/[a-z0-9-]+)`")
)

// noteClasses reads the classes a card's note gives its failing specs:
// spec id to class. A bullet whose bold words are no class gives none.
func noteClasses(note string) map[string]string {
	out := map[string]string{}
	for _, b := range strings.Split("\n"+note, "\n- ") {
		m := bulletHead.FindStringSubmatch("- " + b)
		if m == nil {
			continue
		}
		class, ok := classWords[strings.ToLower(strings.TrimSpace(m[2]))]
		if !ok {
			continue
		}
		for _, id := range specID.FindAllStringSubmatch(m[1], -1) {
			if _, seen := out[id[1]]; !seen {
				out[id[1]] = class
			}
		}
	}
	return out
}

// noteRepros are the specs whose bullet in a card's note cites a
// cards/repro test: failures confirmed apart from rlconform.
func noteRepros(note string) map[string]bool {
	out := map[string]bool{}
	for _, b := range strings.Split("\n"+note, "\n- ") {
		m := bulletHead.FindStringSubmatch("- " + b)
		if m == nil || !strings.Contains(b, "cards/repro") {
			continue
		}
		for _, id := range specID.FindAllStringSubmatch(m[1], -1) {
			out[id[1]] = true
		}
	}
	return out
}

// qualifiers says, of the failures of card c's own run, what the page
// adds to their class: flaky (expected.txt's flaky list, with its rate),
// graded on an operation the card's shim supplies (card.Shim), and, for
// a card whose store expires keys in real time under the grader's fake
// clock, whether its note confirms the failure apart.
func qualifiers(c card, note string, flaky map[string]string, fails []string) map[string]string {
	repro := noteRepros(note)
	on := onShim(c, suite.Specs())
	out := map[string]string{}
	for _, id := range fails {
		var q []string
		if rate, ok := flaky[id]; ok {
			if seen, of, ok := strings.Cut(rate, "/"); ok {
				q = append(q, "flaky, seen failing in "+seen+" of "+of+" gradings")
			} else {
				q = append(q, "flaky")
			}
		}
		if ops := on[id]; ops != "" {
			q = append(q, "graded on the card's own "+ops+", not the library's")
		}
		if c.FakeClockOnStore {
			if repro[id] {
				q = append(q, "confirmed by its repro")
			} else {
				q = append(q, "seen on the fake clock only: its store expires keys in real time")
			}
		}
		if len(q) > 0 {
			out[id] = strings.Join(q, "; ")
		}
	}
	return out
}

// classed is the failing specs with the class the note gives each.
func classed(fails []string, classes, qualified map[string]string) string {
	var parts []string
	for _, id := range sorted(fails) {
		c := classes[id]
		if c == "" {
			c = "not classed in its note"
		}
		if q := qualified[id]; q != "" {
			c += "; " + q
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", id, c))
	}
	return strings.Join(parts, ", ")
}
