package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rlconform/rlconform/suite"
)

// writeReport writes docs/cards.md: notes/_intro.md, one table, and a
// section per card (notes/NAME.md, then what the runs said). wall is how
// long the whole run took with parallel cards graded at once (0: not
// known, for a run read back with -from).
//
// want is expected.txt's verdicts: a failure it lists as flaky is shown
// so, with its rate.
func writeReport(dir, path string, gs []*graded, wall time.Duration, parallel int, want map[[2]string]string) error {
	intro, err := os.ReadFile(filepath.Join(dir, "notes", "_intro.md"))
	if err != nil {
		return fmt.Errorf("the report's introduction: %w", err)
	}
	var b strings.Builder
	b.WriteString("<!-- Written by make cards (cards/cmd/cards) from cards/notes: edit those. -->\n")
	b.Write(intro)
	b.WriteString("\n| card | version graded | served | `identify` | its own profile | as a sliding log | at another scale | time |\n|---|---|---|---|---|---|---|---|\n")
	notes := map[string][]byte{}
	for _, g := range gs {
		if notes[g.card.Name], err = os.ReadFile(filepath.Join(dir, "notes", g.card.Name+".md")); err != nil {
			return fmt.Errorf("card %s: its notes: %w", g.card.Name, err)
		}
	}
	var total time.Duration
	for _, g := range gs {
		own, log := g.runs[0], g.runs[len(g.runs)-1]
		note := string(notes[g.card.Name])
		fmt.Fprintf(&b, "| [%s](#%s) | %s | %s | %s | %s | %s | %s | %ds |\n", g.card.Name, anchor(g.card.Name), g.version, g.card.Served,
			g.identify.name(), "`"+own.Profile+"`: "+summary(own, note, qualifiers(g.card, note,
				flakyRates(want[[2]string{g.card.Name, "run " + own.Profile}]), own.with("fail"))),
			brief(log), scalesCell(g, note, want), int(g.took.Seconds()+0.5))
		total += g.took
	}
	fmt.Fprintf(&b, "\nGrading all %d cards took %v here (two cores, shared), the sum of the times above", len(gs), total.Round(time.Second))
	if wall > 0 {
		fmt.Fprintf(&b, "; graded %d at a time, the run took %v", parallel, wall.Round(time.Second))
	}
	b.WriteString(".\n")
	if v := gradedBy(gs); v != "" {
		fmt.Fprintf(&b, "Graded by rlconform %s.\n", v)
	}
	for _, g := range gs {
		fmt.Fprintf(&b, "\n## %s\n\n%s: %s. Served: %s.\n\n", g.card.Name, g.card.Library, g.version, g.card.Served)
		b.Write(notes[g.card.Name])
		b.WriteString("\n### What rlconform said\n\n")
		if g.card.NoIdentify {
			b.WriteString("- `rlconform identify`: not run for this card (its notes say why)\n")
		} else {
			fmt.Fprintf(&b, "- `rlconform identify`: %s\n", identifyLine(g.identify))
		}
		own := g.runs[0]
		for i, r := range g.runs {
			fmt.Fprintf(&b, "- `rlconform run --level all --profile %s` (%ds): %s\n", r.Profile, int(r.took.Seconds()+0.5), r.Verdict)
			if i > 0 {
				// The sliding log, for reference: the ids, and which of
				// them the library's own algorithm does not explain.
				if fails := r.with("fail"); len(fails) > 0 {
					byStatus := map[string][]string{}
					for _, id := range fails {
						st := own.status(id)
						byStatus[st] = append(byStatus[st], "`"+id+"`")
					}
					fmt.Fprintf(&b, "  - fails `%s`; under its own profile", strings.Join(sorted(fails), "`, `"))
					sep := " "
					for _, st := range []string{"pass", "skip", "fail", "inconclusive", "error"} {
						if ids := byStatus[st]; len(ids) > 0 {
							fmt.Fprintf(&b, "%s%s: %s", sep, map[string]string{"pass": "these pass", "skip": "not graded", "fail": "fail (above)",
								"inconclusive": "inconclusive (above)", "error": "could not be graded"}[st], strings.Join(ids, ", "))
							sep = "; "
						}
					}
					b.WriteString("\n")
				}
				continue
			}
			for _, id := range r.with("fail") {
				fmt.Fprintf(&b, "  - `%s`: %s\n", id, escape(r.message(id)))
			}
			for _, id := range r.with("inconclusive") {
				fmt.Fprintf(&b, "  - `%s` inconclusive: %s\n", id, escape(r.message(id)))
			}
			b.WriteString(shimLine(g.card, r, onShim(g.card, suite.Specs())))
		}
		for _, sg := range g.scaled {
			fmt.Fprintf(&b, "- at %s: `rlconform identify --limit %s --window %s`: %s\n", perScale(sg.scale), scaleN(sg.scale), scaleW(sg.scale), identifyLine(sg.identify))
			fmt.Fprintf(&b, "- at %s: `rlconform run --level all --profile %s --limit %s --window %s` (%ds): %s\n", perScale(sg.scale), sg.run.Profile, scaleN(sg.scale), scaleW(sg.scale), int(sg.run.took.Seconds()+0.5), sg.run.Verdict)
			for _, id := range sg.run.with("fail") {
				fmt.Fprintf(&b, "  - `%s`: %s\n", id, escape(sg.run.message(id)))
			}
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// identifyLine is what identify said, with its qualifiers: what the
// limiter's GetRemainingRequests and Configure do otherwise than the
// profile that explains its decisions.
func identifyLine(r identifyReport) string {
	line := strings.ToUpper(r.Outcome) + ": no profile gives every answer"
	if len(r.Fits) > 0 {
		var fits []string
		for _, f := range r.Fits {
			s := "`" + f.shown() + "` (" + f.Description + ")"
			if len(f.SameDecisions) > 0 {
				s += ", deciding as `" + strings.Join(f.SameDecisions, "`, `") + "`"
			}
			if f.RemainingDiffers != "" {
				s += "; GetRemainingRequests answers otherwise: " + escape(f.RemainingDiffers)
			}
			if f.ChangeUnjudged && r.Configure == nil {
				s += "; the answers after a change of configuration were not judged (none of the profile's readings gives them)"
			}
			fits = append(fits, s)
		}
		line = strings.ToUpper(r.Outcome) + ": " + strings.Join(fits, "; ")
	}
	if r.Configure != nil {
		line += "; Configure does otherwise: " + escape(r.Configure.Does)
	}
	return line
}

// summary is a run's outcome in a table cell: each failure with the
// class its card's note gives it, and what qualifies it (qualifiers).
func summary(r runReport, note string, qualified map[string]string) string {
	fails, inc := r.with("fail"), r.with("inconclusive")
	s := strings.ReplaceAll(r.Outcome, "-", " ")
	if len(fails) > 0 {
		s += ": fails " + classed(fails, noteClasses(note), qualified)
	}
	if len(inc) > 0 {
		s += fmt.Sprintf(" (%d inconclusive)", len(inc))
	}
	return s
}

// brief is a run's outcome and how many specs failed, for the sliding
// log's column (the section lists them).
func brief(r runReport) string {
	s := strings.ReplaceAll(r.Outcome, "-", " ")
	if n := len(r.with("fail")); n > 0 {
		s += fmt.Sprintf(" (%d fail)", n)
	}
	return s
}

// anchor is the GitHub anchor of a card's "## name" heading.
func anchor(name string) string { return strings.ToLower(name) }

// escape keeps a message on its line of Markdown.
func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// status is the status of spec id in r.
func (r runReport) status(id string) string {
	for _, res := range r.Results {
		if res.ID == id {
			return res.Status
		}
	}
	return "skip"
}

// gradedBy is the version of rlconform the runs' reports name, each once
// (one, unless a kept run mixes gradings).
func gradedBy(gs []*graded) string {
	var vs []string
	for _, g := range gs {
		for _, r := range g.runs {
			if r.Version != "" && !slices.Contains(vs, r.Version) {
				vs = append(vs, r.Version)
			}
		}
	}
	return strings.Join(vs, ", ")
}

// scalesCell is the table's cell of a card's further scales: at each,
// identify and its own profile's outcome, and whether the profile holds
// at one scale only; "—" for a card graded at one.
func scalesCell(g *graded, note string, want map[[2]string]string) string {
	if len(g.scaled) == 0 {
		return "—"
	}
	var cells []string
	ownHolds := len(g.runs[0].with("fail")) == 0
	for _, sg := range g.scaled {
		what := at("run "+sg.run.Profile, sg.scale)
		cell := fmt.Sprintf("%s: %s; `%s`: %s", perScale(sg.scale), sg.identify.name(), sg.run.Profile,
			summary(sg.run, note, qualifiers(g.card, note, flakyRates(want[[2]string{g.card.Name, what}]), sg.run.with("fail"))))
		if holds := len(sg.run.with("fail")) == 0; holds != ownHolds {
			where := fmt.Sprintf("%d per %v", g.runs[0].Limit, g.runs[0].window())
			if holds {
				where = perScale(sg.scale)
			}
			cell += "; **its own profile holds at " + where + " only**"
		}
		cells = append(cells, cell)
	}
	return strings.Join(cells, "<br>")
}

// perScale is a scale "N/W" as the page says it: "100 per 1s".
func perScale(scale string) string { return scaleN(scale) + " per " + scaleW(scale) }

func scaleN(scale string) string { n, _, _ := strings.Cut(scale, "/"); return n }

func scaleW(scale string) string { _, w, _ := strings.Cut(scale, "/"); return w }
