package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rlconform/rlconform/suite"
)

// The operations a card's shim may supply itself (card.Shim), as the
// catalogue's specs name what they need.
var shimOps = map[string]string{
	"configure": "Configure",
	"reset":     "Reset",
	"remaining": "GetRemainingRequests",
}

// checkShim says why c's Shim names an operation no spec needs.
func checkShim(c card) error {
	for _, op := range c.Shim {
		if _, ok := shimOps[op]; !ok {
			return fmt.Errorf("card %s: Shim %q: want configure, reset or remaining", c.Name, op)
		}
	}
	return nil
}

// onShim maps each spec that needs an operation card c's shim supplies
// itself to those operations' names ("Configure", "Reset"): its verdict
// is the shim's code's, not the library's.
func onShim(c card, specs []suite.SpecInfo) map[string]string {
	out := map[string]string{}
	for _, s := range specs {
		var ops []string
		for _, op := range c.Shim {
			if slices.Contains(s.Needs, op) {
				ops = append(ops, shimOps[op])
			}
		}
		if len(ops) > 0 {
			out[s.ID] = strings.Join(ops, " and ")
		}
	}
	return out
}

// shimLine is the section's line of the specs of r graded on c's own
// operations, with their verdicts; "" when none was.
func shimLine(c card, r runReport, on map[string]string) string {
	byOps := map[string][]string{}
	for _, res := range r.Results {
		if ops := on[res.ID]; ops != "" && res.Status != "skip" {
			byOps[ops] = append(byOps[ops], fmt.Sprintf("`%s` %s", res.ID, res.Status))
		}
	}
	if len(byOps) == 0 {
		return ""
	}
	var parts []string
	for _, ops := range slices.Sorted(maps.Keys(byOps)) {
		parts = append(parts, fmt.Sprintf("on its %s: %s", ops, strings.Join(byOps[ops], ", ")))
	}
	return fmt.Sprintf("  - graded on the card's own code, not the library's (its notes say what the shim does): %s\n", strings.Join(parts, "; "))
}
