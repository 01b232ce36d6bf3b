package main

import (
	"bufio"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// verdictLine is a line of expected.txt: card, what was graded (identify,
// or a run's profile), and what it said:
//
//	redis_rate	identify	identified gcra:burst=limit
//	redis_rate	run gcra	fails: -
//
//	throttled-goredis	run gcra:burst=limit	fails: robust/key-hygiene | flaky: core/concurrent-4
//
//	redis_rate	run sliding-log	outcome: not-conformant
//
// A run's verdict against the card's own profile is the set of specs that
// failed; against the sliding log, for reference, its outcome. Graded in real time on
// a loaded machine, a spec may come out inconclusive (never a pass, never
// a failure): an expected failure that is inconclusive this time is not a
// difference; a failure not expected, an expected failure that passed, or
// an error is. So is an identification other than the expected one,
// unless it is ambiguous among profiles that include it (the answers that
// tell them apart undecided in real time). A race the library loses only
// sometimes is listed after "flaky:": it may fail or pass (the card's notes confirm it apart from
// rlconform); -update keeps that list. An identification such a race
// sways lists its alternatives after " | or: " (see identifyOr).
type verdictLine struct{ card, what, verdict string }

func verdictLines(gs []*graded) []verdictLine {
	var ls []verdictLine
	for _, g := range gs {
		for _, gr := range g.gradings() {
			v := ""
			if gr.identify != nil {
				v = gr.identify.name()
			} else {
				v = runVerdict(gr.i, *gr.run)
			}
			ls = append(ls, verdictLine{g.card.Name, gr.what, v})
		}
	}
	return ls
}

// grading is one line's worth of a card's gradings: an identification,
// or the i-th run (0: of its own profile).
type grading struct {
	what     string
	identify *identifyReport
	run      *runReport
	i        int
}

// gradings are g's gradings as expected.txt names them: identify, its
// runs, then each further scale's identify and run of its own profile.
func (g *graded) gradings() []grading {
	var out []grading
	if !g.card.NoIdentify {
		out = append(out, grading{what: "identify", identify: &g.identify})
	}
	for i := range g.runs {
		out = append(out, grading{what: "run " + g.runs[i].Profile, run: &g.runs[i], i: i})
	}
	for i := range g.scaled {
		sg := &g.scaled[i]
		out = append(out, grading{what: at("identify", sg.scale), identify: &sg.identify},
			grading{what: at("run "+sg.run.Profile, sg.scale), run: &sg.run})
	}
	return out
}

// runVerdict is what expected.txt keeps of a card's i-th run: the specs
// its own profile fails; of the sliding log's run (for reference: another
// algorithm's, whose failures in real time vary with the instants), its
// outcome.
func runVerdict(i int, r runReport) string {
	if i > 0 {
		return "outcome: " + r.Outcome
	}
	return failsVerdict(r.with("fail"))
}

func failsVerdict(ids []string) string {
	if len(ids) == 0 {
		return "fails: -"
	}
	return "fails: " + strings.Join(sorted(ids), " ")
}

// parseVerdict splits a run's expected verdict into the specs that must
// fail and those that may.
func parseVerdict(v string) (fails, flaky map[string]bool, err error) {
	must, may, _ := strings.Cut(v, " | ")
	ids, ok := strings.CutPrefix(must, "fails: ")
	if !ok {
		return nil, nil, fmt.Errorf("expected verdict %q is not 'fails: ...[ | flaky: ...]'", v)
	}
	fails, flaky = map[string]bool{}, map[string]bool{}
	if ids != "-" {
		for _, id := range strings.Fields(ids) {
			fails[id] = true
		}
	}
	if may != "" {
		if !strings.HasPrefix(may, "flaky: ") {
			return nil, nil, fmt.Errorf("expected verdict %q: after ' | ' want 'flaky: ...'", v)
		}
		for id := range flakyRates(v) {
			flaky[id] = true
		}
	}
	return fails, flaky, nil
}

// flakyRates are the specs a run's expected verdict v lists as flaky,
// each with how often it was seen failing when the list says it
// ("core/reconfigure~1/6": once in six gradings), else "".
func flakyRates(v string) map[string]string {
	_, may, _ := strings.Cut(v, " | ")
	ids, _ := strings.CutPrefix(may, "flaky: ")
	rates := map[string]string{}
	for _, item := range strings.Fields(ids) {
		id, rate, _ := strings.Cut(item, "~")
		rates[id] = rate
	}
	return rates
}

// withFlaky is a run's verdict keeping the flaky specs of old, with
// their rates.
func withFlaky(r runReport, old string) string {
	_, flaky, err := parseVerdict(old)
	if err != nil || len(flaky) == 0 {
		return failsVerdict(r.with("fail"))
	}
	var must []string
	for _, id := range r.with("fail") {
		if !flaky[id] {
			must = append(must, id)
		}
	}
	var may []string
	for id, rate := range flakyRates(old) {
		if rate != "" {
			id += "~" + rate
		}
		may = append(may, id)
	}
	return failsVerdict(must) + " | flaky: " + strings.Join(sorted(may), " ")
}

func readExpected(path string) (map[[2]string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the expected verdicts: %w", err)
	}
	defer f.Close()
	want := map[[2]string]string{}
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, "\t")
		if len(parts) != 3 {
			return nil, fmt.Errorf("%s:%d: want card<TAB>what<TAB>verdict, got %q", path, n, line)
		}
		want[[2]string{parts[0], parts[1]}] = parts[2]
	}
	return want, s.Err()
}

const expectedHeader = `# The verdicts make cards expects, one line per grading: card, what was
# graded, what it said. A run's verdict is the set of specs that failed.
# Written by 'go run ./cmd/cards -update' (make cards-update); edit only
# with the card's notes (cards/notes/NAME.md), which say why each fails.
`

func updateExpected(path string, lines []verdictLine, gs []*graded) error {
	want := map[[2]string]string{}
	if _, err := os.Stat(path); err == nil {
		if want, err = readExpected(path); err != nil {
			return err
		}
	}
	old := maps.Clone(want)
	for _, l := range lines {
		want[[2]string{l.card, l.what}] = l.verdict
	}
	for _, g := range gs {
		for _, gr := range g.gradings() {
			key := [2]string{g.card.Name, gr.what}
			o, ok := old[key]
			switch {
			case !ok:
			case gr.identify != nil && strings.Contains(o, identifyOr) && identifyMatches(o, *gr.identify):
				// An identification among the expected alternatives keeps them.
				want[key] = o
			case gr.run != nil && strings.HasPrefix(o, "fails: "):
				want[key] = withFlaky(*gr.run, o)
			}
		}
	}
	var b strings.Builder
	b.WriteString(expectedHeader)
	for _, c := range cards {
		for _, what := range whats(want, c.Name) {
			fmt.Fprintf(&b, "%s\t%s\t%s\n", c.Name, what, want[[2]string{c.Name, what}])
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// whats are the gradings of card in want: identify first, then the runs.
func whats(want map[[2]string]string, card string) []string {
	var ws []string
	for k := range want {
		if k[0] == card && k[1] != "identify" {
			ws = append(ws, k[1])
		}
	}
	slices.Sort(ws)
	if _, ok := want[[2]string{card, "identify"}]; ok {
		ws = append([]string{"identify"}, ws...)
	}
	return ws
}

// compare returns the differences between the expected verdicts and
// those of gs, one line each.
func compare(want map[[2]string]string, gs []*graded) []string {
	var diff []string
	for _, g := range gs {
		name := g.card.Name
		for _, gr := range g.gradings() {
			w, ok := want[[2]string{name, gr.what}]
			switch {
			case !ok && gr.identify != nil:
				diff = append(diff, fmt.Sprintf("%s %s: no expected verdict; it said %q", name, gr.what, gr.identify.name()))
			case !ok:
				diff = append(diff, fmt.Sprintf("%s %s: no expected verdict; it said %q", name, gr.what, runVerdict(gr.i, *gr.run)))
			case gr.identify != nil && gr.identify.uncompared:
			case gr.identify != nil:
				if !identifyMatches(w, *gr.identify) {
					diff = append(diff, identifyDiff(name, gr.what, w, *gr.identify))
				}
			default:
				if d := compareGrading(w, *gr.run); d != "" {
					diff = append(diff, fmt.Sprintf("%s %s: %s", name, gr.what, d))
				}
			}
		}
	}
	return diff
}

// uncompared returns how what identify named, where compare did not
// compare it (identifyReport.uncompared), differs from what is expected,
// one line each.
func uncompared(want map[[2]string]string, gs []*graded) []string {
	var out []string
	for _, g := range gs {
		for _, gr := range g.gradings() {
			w, ok := want[[2]string{g.card.Name, gr.what}]
			if gr.identify != nil && gr.identify.uncompared && (!ok || !identifyMatches(w, *gr.identify)) {
				out = append(out, identifyDiff(g.card.Name, gr.what, w, *gr.identify))
			}
		}
	}
	return out
}

// identifyDiff says how what identify named in card's grading what
// differs from w, the expected.
func identifyDiff(card, what, w string, r identifyReport) string {
	return fmt.Sprintf("%s %s: %q, expected %q", card, what, r.name(), w) + ruledOutWhy(r.text, w)
}

// ruledOutWhy is what identify's text says ruled out the profiles want
// expects (its alternatives), indented, for a difference to show the
// answers that decided it: at most ruledOutLines lines each; then the
// profiles identify could not judge (its line "not judged"); "" when the
// text says neither.
func ruledOutWhy(text, want string) string {
	var b strings.Builder
	lines := strings.Split(text, "\n")
	for _, alt := range strings.Split(want, identifyOr) {
		p, ok := strings.CutPrefix(alt, "identified ")
		if !ok {
			continue
		}
		for i, l := range lines {
			out, ok := strings.CutPrefix(l, "  ruled out ")
			if !ok || !slices.Contains(strings.Split(out, ", "), p) {
				continue
			}
			b.WriteString("\n    " + l)
			for _, more := range lines[i+1 : min(len(lines), i+1+ruledOutLines)] {
				if !strings.HasPrefix(more, "    ") {
					break
				}
				b.WriteString("\n    " + more)
			}
		}
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "  not judged ") {
			b.WriteString("\n    " + l)
		}
	}
	return b.String()
}

// ruledOutLines bounds the lines of why a profile was ruled out that a
// difference shows: the answer and a short timeline.
const ruledOutLines = 14

// compareGrading is how run r differs from its expected verdict w, or "".
func compareGrading(w string, r runReport) string {
	if outcome, ok := strings.CutPrefix(w, "outcome: "); ok {
		if r.Outcome != outcome {
			return fmt.Sprintf("%s, expected %s (%s)", r.Outcome, outcome, r.Verdict)
		}
		return ""
	}
	if d := compareRun(w, r); d != nil {
		return strings.ReplaceAll(d.Error(), "\n", "\n    ")
	}
	return ""
}

// identifyOr separates an expected identification's alternatives: a
// library that loses a race only sometimes is identified as its
// algorithm when identify's probes do not meet the race, and as none
// when they do (its notes confirm the race apart from rlconform):
//
//	symfony-fixed-window	identify	none-fits | or: identified token-bucket:...
const identifyOr = " | or: "

// identifyMatches reports whether identify's report r is one that want
// expects: one of its alternatives, or ambiguous among fits that include
// one.
func identifyMatches(want string, r identifyReport) bool {
	for _, alt := range strings.Split(want, identifyOr) {
		if r.name() == alt || ambiguousAmong(alt, r) {
			return true
		}
	}
	return false
}

// ambiguousAmong reports whether identify came out ambiguous among fits
// that include the profile want identifies: in real time on a loaded
// machine, the answers that tell two profiles apart may all be undecided,
// which is no verdict (as an expected failure that comes out inconclusive
// is not a difference). Any other outcome, or fits without the expected
// profile, is a difference.
func ambiguousAmong(want string, r identifyReport) bool {
	p, ok := strings.CutPrefix(want, "identified ")
	if !ok || r.Outcome != "ambiguous" {
		return false
	}
	for _, f := range r.Fits {
		if f.shown() == p || f.Profile == p {
			return true
		}
	}
	return false
}

func compareRun(want string, r runReport) error {
	expected, flaky, err := parseVerdict(want)
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range r.with("fail") {
		if !expected[id] && !flaky[id] {
			errs = append(errs, fmt.Errorf("%s failed, expected to pass: %s", id, r.message(id)))
		}
	}
	for _, id := range r.with("error") {
		errs = append(errs, fmt.Errorf("%s could not be graded: %s", id, r.message(id)))
	}
	for id := range expected {
		st := ""
		for _, res := range r.Results {
			if res.ID == id {
				st = res.Status
			}
		}
		if st != "fail" && st != "inconclusive" {
			errs = append(errs, fmt.Errorf("%s expected to fail, but its status is %q", id, st))
		}
	}
	return errors.Join(errs...)
}
