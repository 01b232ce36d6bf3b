package main

import (
	"os"
	"strings"
	"testing"

	"github.com/rlconform/rlconform/suite"
)

// Every card's Shim names operations a spec needs, and its notes say what
// the shim does for each ("the shim's own Configure", …), so that the
// page's "graded on the card's own" has its explanation beside it.
func TestShimOperationsAreDeclaredAndExplained(t *testing.T) {
	for _, c := range cards {
		if err := checkShim(c); err != nil {
			t.Error(err)
			continue
		}
		if len(c.Shim) == 0 {
			continue
		}
		note, err := os.ReadFile("../../notes/" + c.Name + ".md")
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range c.Shim {
			if !strings.Contains(string(note), "shim's own "+shimOps[op]) {
				t.Errorf("card %s: Shim has %s, and its notes never say \"the shim's own %s\"", c.Name, op, shimOps[op])
			}
		}
	}
}

// A spec that needs an operation the shim supplies is graded on the
// shim's code: its failure says so, and the section lists it with its
// verdict; specs that need none, and skipped ones, are not listed.
func TestSpecsOnTheShimsOwnOperationsAreShownSo(t *testing.T) {
	c := card{Name: "x", Shim: []string{"configure"}}
	on := onShim(c, suite.Specs())
	if on["core/reconfigure"] != "Configure" || on["core/allow-within-limit"] != "" {
		t.Fatalf("onShim: core/reconfigure %q, core/allow-within-limit %q", on["core/reconfigure"], on["core/allow-within-limit"])
	}
	q := qualifiers(c, "", nil, []string{"core/reconfigure", "core/block-over-limit"})
	if !strings.Contains(q["core/reconfigure"], "graded on the card's own Configure, not the library's") || q["core/block-over-limit"] != "" {
		t.Errorf("qualifiers: %v", q)
	}
	r := runReport{Results: []runResult{{ID: "core/reconfigure", Status: "pass"}, {ID: "strict/lowered-limit", Status: "skip"}, {ID: "core/allow-within-limit", Status: "pass"}}}
	line := shimLine(c, r, on)
	if !strings.Contains(line, "on its Configure: `core/reconfigure` pass") || strings.Contains(line, "lowered-limit") || strings.Contains(line, "allow-within") {
		t.Errorf("shimLine: %q", line)
	}
	if shimLine(card{Name: "y"}, r, onShim(card{Name: "y"}, suite.Specs())) != "" {
		t.Error("a card with no Shim has a line")
	}
}
