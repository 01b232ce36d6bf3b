package main

import (
	"fmt"
	"regexp"
	"strings"
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

// classed is the failing specs with the class the note gives each.
func classed(fails []string, classes map[string]string, flaky map[string]string) string {
	var parts []string
	for _, id := range sorted(fails) {
		c := classes[id]
		if c == "" {
			c = "not classed in its note"
		}
		if rate, ok := flaky[id]; ok {
			c += "; flaky"
			if rate != "" {
				c += ", seen failing " + rate + " gradings"
			}
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", id, c))
	}
	return strings.Join(parts, ", ")
}
