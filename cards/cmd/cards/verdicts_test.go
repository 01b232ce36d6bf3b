package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// report makes a run's report from id=status pairs.
func report(t *testing.T, profile string, statuses ...string) runReport {
	t.Helper()
	var results []map[string]string
	for _, s := range statuses {
		id, st, _ := strings.Cut(s, "=")
		results = append(results, map[string]string{"id": id, "status": st, "message": id + " said so\nmore"})
	}
	b, err := json.Marshal(map[string]any{"profile": profile, "outcome": "not-conformant", "results": results})
	if err != nil {
		t.Fatal(err)
	}
	var r runReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCompareRun(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		statuses   []string
		differs    string // "" when the verdict is as expected
	}{
		{"same failures", "fails: a/x b/y", []string{"a/x=fail", "b/y=fail", "c/z=pass"}, ""},
		{"nothing fails, as expected", "fails: -", []string{"a/x=pass", "b/y=skip"}, ""},
		{"an expected failure inconclusive in real time", "fails: a/x b/y", []string{"a/x=inconclusive", "b/y=fail"}, ""},
		{"a new failure", "fails: a/x", []string{"a/x=fail", "b/y=fail"}, "b/y failed, expected to pass: b/y said so"},
		{"an expected failure passed", "fails: a/x b/y", []string{"a/x=fail", "b/y=pass"}, `b/y expected to fail, but its status is "pass"`},
		{"an expected failure not graded", "fails: a/x", []string{"a/x=skip"}, `a/x expected to fail, but its status is "skip"`},
		{"an error", "fails: -", []string{"a/x=error"}, "a/x could not be graded"},
		{"a malformed expectation", "passes", nil, "is not 'fails: ..."},
		{"a flaky spec failed", "fails: a/x | flaky: b/y", []string{"a/x=fail", "b/y=fail"}, ""},
		{"a flaky spec passed", "fails: a/x | flaky: b/y", []string{"a/x=fail", "b/y=pass"}, ""},
		{"a flaky spec does not excuse another", "fails: - | flaky: b/y", []string{"c/z=fail"}, "c/z failed, expected to pass"},
		{"a malformed flaky list", "fails: - | b/y", nil, "want 'flaky: ...'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := compareRun(tc.want, report(t, "gcra", tc.statuses...))
			switch {
			case tc.differs == "" && err != nil:
				t.Errorf("compareRun(%q) = %v, want no difference", tc.want, err)
			case tc.differs != "" && (err == nil || !strings.Contains(err.Error(), tc.differs)):
				t.Errorf("compareRun(%q) = %v, want a difference saying %q", tc.want, err, tc.differs)
			}
		})
	}
}

func TestCompareIdentifyAndMissing(t *testing.T) {
	c, _ := byName("x-time-rate")
	g := &graded{card: c, identify: identifyReport{Outcome: "identified"}, runs: []runReport{report(t, "token-bucket", "a/x=pass")}}
	g.identify.Fits = append(g.identify.Fits, identifiedFit{Profile: "token-bucket"})
	want := map[[2]string]string{{"x-time-rate", "identify"}: "identified token-bucket", {"x-time-rate", "run token-bucket"}: "fails: -"}
	if d := compare(want, []*graded{g}); len(d) != 0 {
		t.Errorf("compare = %q, want no difference", d)
	}
	want[[2]string{"x-time-rate", "identify"}] = "identified gcra:burst=limit"
	if d := compare(want, []*graded{g}); len(d) != 1 || !strings.Contains(d[0], `"identified token-bucket", expected "identified gcra:burst=limit"`) {
		t.Errorf("compare = %q, want the identification's difference", d)
	}
	// The difference says what ruled the expected profile out, from
	// identify's text.
	g.identify.text = "IDENTIFIED\n  fits      token-bucket\n  ruled out sliding-log, gcra:burst=limit\n    by core/x step 3: denied\n      +0ms  allowed\n  ruled out fixed-window\n    by core/y\n"
	if d := compare(want, []*graded{g}); len(d) != 1 || !strings.HasSuffix(d[0], "\n      ruled out sliding-log, gcra:burst=limit\n        by core/x step 3: denied\n          +0ms  allowed") {
		t.Errorf("compare = %q, want why the expected profile was ruled out", d)
	}
	g.identify.text = ""
	// Ambiguous among fits that include the expected one: undecided in
	// real time, no difference; ambiguous among others, a difference.
	want[[2]string{"x-time-rate", "identify"}] = "identified token-bucket"
	g.identify.Outcome = "ambiguous"
	g.identify.Fits = append(g.identify.Fits, g.identify.Fits[0])
	g.identify.Fits[1].Profile = "gcra:burst=limit"
	if d := compare(want, []*graded{g}); len(d) != 0 {
		t.Errorf("compare = %q, want no difference for an ambiguity that includes the expected fit", d)
	}
	g.identify.Fits[0].Name = "token-bucket:capacity=?"
	want[[2]string{"x-time-rate", "identify"}] = "identified token-bucket:capacity=?"
	if d := compare(want, []*graded{g}); len(d) != 0 {
		t.Errorf("compare = %q, want no difference for an ambiguity that includes the expected fit, by its name", d)
	}
	g.identify.Fits[0].Name = ""
	want[[2]string{"x-time-rate", "identify"}] = "identified fixed-window"
	if d := compare(want, []*graded{g}); len(d) != 1 || !strings.Contains(d[0], `"ambiguous token-bucket | gcra:burst=limit", expected "identified fixed-window"`) {
		t.Errorf("compare = %q, want the identification's difference", d)
	}
	g.identify.Outcome, g.identify.Fits = "identified", g.identify.Fits[:1]
	// The sliding log's run, for reference, is compared by its outcome.
	g.runs = append(g.runs, report(t, "sliding-log", "a/x=fail"))
	want[[2]string{"x-time-rate", "identify"}] = "identified token-bucket"
	want[[2]string{"x-time-rate", "run sliding-log"}] = "outcome: not-conformant"
	if d := compare(want, []*graded{g}); len(d) != 0 {
		t.Errorf("compare = %q, want no difference", d)
	}
	want[[2]string{"x-time-rate", "run sliding-log"}] = "outcome: conformant"
	if d := compare(want, []*graded{g}); len(d) != 1 || !strings.Contains(d[0], "not-conformant, expected conformant") {
		t.Errorf("compare = %q, want the outcome's difference", d)
	}
	g.runs = g.runs[:1]
	want[[2]string{"x-time-rate", "identify"}] = "identified gcra:burst=limit"
	delete(want, [2]string{"x-time-rate", "run sliding-log"})
	delete(want, [2]string{"x-time-rate", "run token-bucket"})
	if d := compare(want, []*graded{g}); len(d) != 2 || !strings.Contains(d[1], "no expected verdict") {
		t.Errorf("compare = %q, want a missing verdict reported", d)
	}
}

func TestExpectedRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "expected.txt")
	c, _ := byName("redis_rate")
	g := &graded{card: c, identify: identifyReport{Outcome: "none-fits"}, runs: []runReport{report(t, "gcra", "b/y=fail", "a/x=fail")}}
	if err := updateExpected(path, verdictLines([]*graded{g}), []*graded{g}); err != nil {
		t.Fatal(err)
	}
	want, err := readExpected(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := want[[2]string{"redis_rate", "run gcra"}]; got != "fails: a/x b/y" {
		t.Errorf("read back %q, want the failures sorted", got)
	}
	if d := compare(want, []*graded{g}); len(d) != 0 {
		t.Errorf("a run compared with its own verdicts differs: %q", d)
	}
	// -update keeps the flaky list, and lists a flaky spec there only.
	old, _ := os.ReadFile(path)
	if err := os.WriteFile(path, []byte(strings.Replace(string(old), "fails: a/x b/y", "fails: a/x | flaky: b/y", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := updateExpected(path, verdictLines([]*graded{g}), []*graded{g}); err != nil {
		t.Fatal(err)
	}
	if want, _ = readExpected(path); want[[2]string{"redis_rate", "run gcra"}] != "fails: a/x | flaky: b/y" {
		t.Errorf("after -update: %q, want the flaky list kept", want[[2]string{"redis_rate", "run gcra"}])
	}
	// An identification among the expected alternatives is no difference,
	// and -update keeps the alternatives; one outside them is.
	old, _ = os.ReadFile(path)
	if err := os.WriteFile(path, []byte(strings.Replace(string(old), "\tnone-fits\n", "\tidentified gcra | or: none-fits\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if want, _ = readExpected(path); len(compare(want, []*graded{g})) != 0 {
		t.Errorf("none-fits differs from %q", want[[2]string{"redis_rate", "identify"}])
	}
	if err := updateExpected(path, verdictLines([]*graded{g}), []*graded{g}); err != nil {
		t.Fatal(err)
	}
	if want, _ = readExpected(path); want[[2]string{"redis_rate", "identify"}] != "identified gcra | or: none-fits" {
		t.Errorf("after -update: %q, want the alternatives kept", want[[2]string{"redis_rate", "identify"}])
	}
	g.identify = identifyReport{Outcome: "identified", Fits: []identifiedFit{{Profile: "fixed-window"}}}
	if d := compare(want, []*graded{g}); len(d) != 1 || !strings.Contains(d[0], `"identified fixed-window", expected "identified gcra | or: none-fits"`) {
		t.Errorf("compare = %q, want the identification outside the alternatives", d)
	}
	if err := os.WriteFile(path, []byte("redis_rate only two fields\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readExpected(path); err == nil {
		t.Error("readExpected took a malformed line")
	}
}

// An identification names the parameters no probe decided as "?", as
// identify's headline does, never a value it picked among equals.
func TestIdentifyVerdictShowsUndecidedParameters(t *testing.T) {
	r := identifyReport{Outcome: "identified", Fits: []identifiedFit{{
		Profile: "fixed-window:align=epoch,count-denied=false,query=read",
		Name:    "fixed-window:align=?,count-denied=?,query=read",
	}}}
	if got, want := r.name(), "identified fixed-window:align=?,count-denied=?,query=read"; got != want {
		t.Errorf("name() = %q, want %q", got, want)
	}
	if got := identifyLine(r); !strings.Contains(got, "`fixed-window:align=?,count-denied=?,query=read`") {
		t.Errorf("identifyLine = %q, want the undecided parameters shown", got)
	}
	r.Fits[0].Name = "" // a report from before names were written
	if got, want := r.name(), "identified fixed-window:align=epoch,count-denied=false,query=read"; got != want {
		t.Errorf("name() = %q, want %q", got, want)
	}
}

// TestEveryExpectedFailureIsClassed keeps the cards page honest about
// what a failure is: every spec a card's own profile is expected to fail,
// or may fail (flaky), is classed in its note as a bug, an honest
// deviation or a documented design.
func TestEveryExpectedFailureIsClassed(t *testing.T) {
	want, err := readExpected("../../expected.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cards {
		lines := ownLines(want, c)
		if len(lines) == 0 {
			t.Errorf("card %s: expected.txt has no line for its own profile %s", c.Name, c.Profile)
			continue
		}
		note, err := os.ReadFile("../../notes/" + c.Name + ".md")
		if err != nil {
			t.Fatal(err)
		}
		classes := noteClasses(string(note))
		for what, v := range lines {
			fails, flaky, err := parseVerdict(v)
			if err != nil {
				t.Errorf("card %s %s: %v", c.Name, what, err)
				continue
			}
			for id := range fails {
				if classes[id] == "" {
					t.Errorf("card %s fails %s (%s), which notes/%s.md does not class: a Deviations bullet naming it, then **bug**, **limitation** (or **deviation**) or **by design**", c.Name, id, what, c.Name)
				}
			}
			for id := range flaky {
				if classes[id] == "" {
					t.Errorf("card %s may fail %s (flaky, %s), which notes/%s.md does not class: a Deviations bullet naming it, then **bug**, **limitation** (or **deviation**) or **by design**", c.Name, id, what, c.Name)
				}
			}
		}
		for _, scale := range c.Scales {
			if _, ok := want[[2]string{c.Name, at("identify", scale)}]; !ok {
				t.Errorf("card %s: expected.txt has no line for identify at its scale %s", c.Name, scale)
			}
		}
	}
}

// ownLines are the expected verdicts of c's runs on its own profile
// (named in full in expected.txt, as the run reports it), at every scale.
func ownLines(want map[[2]string]string, c card) map[string]string {
	out := map[string]string{}
	for k, v := range want {
		if k[0] == c.Name && strings.HasPrefix(k[1], "run ") && (k[1] != "run sliding-log" || c.Profile == "sliding-log") {
			out[k[1]] = v
		}
	}
	return out
}

func TestNoteClasses(t *testing.T) {
	got := noteClasses("**Deviations**:\n- `robust/cost-negative`: **bug** (a negative cost).\n- `core/a`, and most runs `strict/b` and\n  `strict/c`: **limitation** (whole seconds).\n- `strict/d`: the same race, **bug**.\n- `core/e`: **by design**.\n")
	want := map[string]string{"robust/cost-negative": classBug, "core/a": classDeviation, "strict/b": classDeviation, "strict/c": classDeviation, "core/e": classDesign}
	if len(got) != len(want) {
		t.Errorf("noteClasses = %v, want %v", got, want)
	}
	for id, c := range want {
		if got[id] != c {
			t.Errorf("noteClasses[%s] = %q, want %q", id, got[id], c)
		}
	}
}

// TestFindingsSayWhatWasFound: the line the cards print as each card ends
// says what identify named and what each run failed, as expected.txt does.
func TestFindingsSayWhatWasFound(t *testing.T) {
	r := &graded{card: card{Name: "c"},
		identify: identifyReport{Outcome: "identified", Fits: []identifiedFit{{Profile: "gcra:burst=limit"}}},
		runs:     []runReport{{Profile: "gcra:burst=limit"}, {Profile: "sliding-log", Outcome: "not-conformant"}}}
	r.runs[0].Results = append(r.runs[0].Results, runResult{ID: "robust/cost-negative", Status: "fail"})
	want := "identify: identified gcra:burst=limit; run gcra:burst=limit: fails: robust/cost-negative; run sliding-log: outcome: not-conformant"
	if got := findings(r); got != want {
		t.Errorf("findings = %q\nwant       %q", got, want)
	}
}

// A difference a second grading does not repeat is said as flaky and the
// second grading kept; one it repeats is returned; a card that agreed the
// first time is not graded again.
func TestSecondChance(t *testing.T) {
	c, _ := byName("x-time-rate")
	d, _ := byName("governor")
	e, _ := byName("guava")
	want := map[[2]string]string{}
	for _, name := range []string{"x-time-rate", "governor", "guava"} {
		want[[2]string{name, "identify"}] = "none-fits"
		want[[2]string{name, "run gcra"}] = "fails: -"
	}
	grading := func(k card, failed ...string) *graded {
		return &graded{card: k, identify: identifyReport{Outcome: "none-fits"}, runs: []runReport{report(t, "gcra", failed...)}}
	}
	gs := []*graded{grading(c, "a/x=fail"), grading(d, "a/x=fail"), grading(e, "a/x=pass")}
	var asked []string
	regrade := func(cs []card) ([]*graded, error) {
		var out []*graded
		for _, k := range cs {
			asked = append(asked, k.Name)
			if k.Name == "governor" {
				out = append(out, grading(k, "a/x=fail")) // a change: it holds
			} else {
				out = append(out, grading(k, "a/x=pass")) // a flake
			}
		}
		return out, nil
	}
	var log strings.Builder
	held, err := secondChance(want, gs, regrade, &log)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(asked, ",") != "x-time-rate,governor" {
		t.Errorf("graded again %q, want x-time-rate,governor", asked)
	}
	if len(held) != 1 || !strings.Contains(held[0], "governor run gcra: a/x failed, expected to pass") {
		t.Errorf("held = %q, want governor's difference", held)
	}
	if !strings.Contains(log.String(), "x-time-rate differed once, then graded as expected") || !strings.Contains(log.String(), "x-time-rate run gcra: a/x failed") {
		t.Errorf("log = %q, want x-time-rate said flaky with its first difference", log.String())
	}
	if d := compare(want, gs[:1]); len(d) != 0 {
		t.Errorf("x-time-rate's second grading was not kept: %q", d)
	}
}

// A flaky spec may carry its rate in expected.txt (id~1/6): the
// verdicts read the id alone, -update keeps the rate, and the page shows
// a failure listed flaky as flaky, with its rate (issue 64).
func TestFlakyRates(t *testing.T) {
	v := "fails: a/x | flaky: b/y~1/6 c/z"
	fails, flaky, err := parseVerdict(v)
	if err != nil || !fails["a/x"] || !flaky["b/y"] || !flaky["c/z"] || len(flaky) != 2 {
		t.Fatalf("parseVerdict(%q) = %v, %v, %v", v, fails, flaky, err)
	}
	rates := flakyRates(v)
	if rates["b/y"] != "1/6" || rates["c/z"] != "" {
		t.Errorf("flakyRates(%q) = %v", v, rates)
	}
	failed := []string{"a/x", "b/y", "c/z"}
	got := classed(failed, map[string]string{"a/x": "bug", "b/y": "bug"}, qualifiers(card{}, "", rates, failed))
	for _, want := range []string{"a/x (bug)", "b/y (bug; flaky, seen failing in 1 of 6 gradings)", "c/z (not classed in its note; flaky)"} {
		if !strings.Contains(got, want) {
			t.Errorf("classed: %q, want %q in it", got, want)
		}
	}
	r := runReport{Results: []runResult{{ID: "a/x", Status: "fail"}}}
	if kept := withFlaky(r, v); kept != "fails: a/x | flaky: b/y~1/6 c/z" {
		t.Errorf("withFlaky = %q, want the rates kept", kept)
	}
}

// A card whose store expires keys in real time under the grader's fake
// clock has its failures said "seen on the fake clock only", unless its
// note confirms one by a cards/repro test (issue 64: bucket4j-redis's
// core/reconfigure called 6 minutes later on a key of a 60 s TTL).
func TestFakeClockOnStoreFailuresAreQualified(t *testing.T) {
	note := "**Deviations**:\n- `a/x`: **bug** (…; `cards/repro` `TestX`).\n- `b/y`: **by design** (…).\n"
	q := qualifiers(card{FakeClockOnStore: true}, note, nil, []string{"a/x", "b/y"})
	if q["a/x"] != "confirmed by its repro" || !strings.HasPrefix(q["b/y"], "seen on the fake clock only") {
		t.Errorf("qualifiers = %v", q)
	}
	if q := qualifiers(card{}, note, nil, []string{"a/x", "b/y"}); len(q) != 0 {
		t.Errorf("a card on the fake clock alone: qualifiers = %v, want none", q)
	}
}

// A card's further scale is graded, compared and written as its own
// lines ("identify at 100/1s", "run PROFILE at 100/1s"), and the page's
// cell says where its own profile holds at one scale only.
func TestScalesAreGradedApart(t *testing.T) {
	c, _ := byName("guava")
	fit := identifyReport{Outcome: "identified", Fits: []identifiedFit{{Profile: "smooth-bursty:stored=1s"}}}
	g := &graded{card: c, identify: fit, runs: []runReport{report(t, "smooth-bursty:stored=1s", "a/x=pass"), report(t, "sliding-log", "a/x=fail")},
		scaled: []scaledGrading{{scale: "100/1s", identify: identifyReport{Outcome: "none-fits"}, run: report(t, "smooth-bursty:stored=1s", "a/x=fail")}}}
	g.runs[0].Limit, g.runs[0].WindowMs = 5, 60_000
	var whats []string
	for _, l := range verdictLines([]*graded{g}) {
		whats = append(whats, l.what+": "+l.verdict)
	}
	wantLines := []string{"identify: identified smooth-bursty:stored=1s", "run smooth-bursty:stored=1s: fails: -", "run sliding-log: outcome: " + g.runs[1].Outcome,
		"identify at 100/1s: none-fits", "run smooth-bursty:stored=1s at 100/1s: fails: a/x"}
	if strings.Join(whats, "\n") != strings.Join(wantLines, "\n") {
		t.Errorf("verdictLines:\n%s\nwant\n%s", strings.Join(whats, "\n"), strings.Join(wantLines, "\n"))
	}
	want := map[[2]string]string{}
	for _, l := range verdictLines([]*graded{g}) {
		want[[2]string{l.card, l.what}] = l.verdict
	}
	if d := compare(want, []*graded{g}); len(d) != 0 {
		t.Errorf("compare = %q, want no difference", d)
	}
	want[[2]string{"guava", "run smooth-bursty:stored=1s at 100/1s"}] = "fails: -"
	if d := compare(want, []*graded{g}); len(d) != 1 || !strings.Contains(d[0], "at 100/1s: a/x failed, expected to pass") {
		t.Errorf("compare = %q, want the scale's difference", d)
	}
	cell := scalesCell(g, "", nil)
	for _, s := range []string{"100 per 1s: none-fits", "fails a/x", "**its own profile holds at 5 per 1m0s only**"} {
		if !strings.Contains(cell, s) {
			t.Errorf("scalesCell = %q, want %q in it", cell, s)
		}
	}
	if cell := scalesCell(&graded{card: card{}}, "", nil); cell != "—" {
		t.Errorf("a card of one scale: %q", cell)
	}
}

// A difference in what identify named shows why the expected profiles
// were not: the answers that ruled them out, and the profiles identify
// could not judge within its budget.
func TestRuledOutWhy(t *testing.T) {
	text := strings.Join([]string{
		"UNDECIDED: no profile judged explains every answer, but 1 profile could not be judged (below) and may explain them all",
		"  ruled out sliding-log",
		"    by strict/raised-limit step 9 at +39ms: AllowRequest(\"u\") = allowed, the profile says denied",
		"      +7ms  Configure(2, 1s) = ok",
		"  ruled out gcra:burst=limit",
		"    by core/within-limit step 1 at +0ms: AllowRequest(\"u\") = denied, the profile says allowed",
		"  not judged fixed-window:align=first-second,count-denied=false,query=read: neither fits nor ruled out",
	}, "\n")
	got := ruledOutWhy(text, "identified sliding-log | or: identified token-bucket")
	for _, want := range []string{"ruled out sliding-log\n        by strict/raised-limit step 9", "+7ms  Configure(2, 1s) = ok", "not judged fixed-window:align=first-second"} {
		if !strings.Contains(got, want) {
			t.Errorf("ruledOutWhy = %q, want it to show %q", got, want)
		}
	}
	if strings.Contains(got, "gcra") {
		t.Errorf("ruledOutWhy = %q: gcra was not expected, and is not to be shown", got)
	}
}

// With -realtime-identify print, what identify names in real time is
// not a difference: it is printed where it differs. A name given on the
// card's clock is compared still.
func TestRealtimeIdentifyPrintedNotCompared(t *testing.T) {
	c, _ := byName("x-time-rate")
	g := &graded{card: c, identify: identifyReport{Outcome: "identified", Mode: "real-time", uncompared: true,
		Fits: []identifiedFit{{Profile: "fixed-window:align=first-second"}}}}
	want := map[[2]string]string{{"x-time-rate", "identify"}: "identified token-bucket"}
	if d := compare(want, []*graded{g}); len(d) != 0 {
		t.Errorf("compare = %q, want no difference for a name not compared", d)
	}
	if d := uncompared(want, []*graded{g}); len(d) != 1 || !strings.Contains(d[0], `"identified fixed-window:align=first-second", expected "identified token-bucket"`) {
		t.Errorf("uncompared = %q, want the name printed", d)
	}
	g.identify.Fits[0].Profile = "token-bucket"
	if d := uncompared(want, []*graded{g}); len(d) != 0 {
		t.Errorf("uncompared = %q, want nothing where the name is as expected", d)
	}
	g.identify.uncompared, g.identify.Fits[0].Profile = false, "gcra"
	if d := compare(want, []*graded{g}); len(d) != 1 {
		t.Errorf("compare = %q, want the difference of a name that is compared", d)
	}
}
