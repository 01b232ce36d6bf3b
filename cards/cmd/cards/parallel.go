package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// gradeAll grades the cards, up to parallel of them at once, and returns
// what each said in the cards' order. Each card is graded by a grader of
// its own (its own directory for reports, its own count of gradings);
// what a card starts (a Redis, a service, a gateway) is its own too, on
// ports of its own. A card that could not be graded is an error, after
// the others have finished.
//
// When again is not nil, a card whose grading it says differs from what
// is expected is graded once more at once, in its lane, beside the cards
// still being graded rather than after them all: seconds holds that
// second grading at the card's index (nil for the others).
func gradeAll(g *grader, selected []card, parallel int, again func(*graded) bool) (results, seconds []*graded, err error) {
	parallel = max(1, min(parallel, len(selected)))
	results, seconds = make([]*graded, len(selected)), make([]*graded, len(selected))
	errs := make([]error, len(selected))
	next := make(chan int)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i], errs[i] = gradeOne(g, selected[i])
				if errs[i] == nil && again != nil && again(results[i]) {
					fmt.Fprintf(os.Stderr, "cards: %s differs from what is expected: graded once more, now\n", selected[i].Name)
					again := *g
					again.again = "-again"
					seconds[i], errs[i] = gradeOne(&again, selected[i])
				}
			}
		}()
	}
	for i := range selected {
		if g.ctx.Err() != nil {
			errs[i] = fmt.Errorf("card %s: not graded: %w", selected[i].Name, g.ctx.Err())
			continue
		}
		next <- i
	}
	close(next)
	wg.Wait()
	var failed []error
	for _, err := range errs {
		if err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) > 0 {
		return nil, nil, fmt.Errorf("%d card(s) could not be graded: %w", len(failed), errors.Join(failed...))
	}
	return results, seconds, nil
}

// gradeOne grades c with a grader of its own, in a directory of its own
// under g's.
func gradeOne(g *grader, c card) (*graded, error) {
	own := *g
	dir, err := os.MkdirTemp(g.tmp, c.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("card %s: %w", c.Name, err)
	}
	own.tmp = dir
	fmt.Fprintf(os.Stderr, "cards: grading %s\n", c.Name)
	r, err := own.grade(c)
	if err != nil {
		err = fmt.Errorf("card %s: %w", c.Name, err)
		fmt.Fprintln(os.Stderr, "cards:", err)
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "cards: %s took %v: %s\n", c.Name, r.took.Round(time.Second), findings(r))
	if r.identify.Outcome == "identified" || r.identify.Outcome == "ambiguous" {
		// Another profile fit where the card's own did not: the answers
		// that ruled it out, for a difference (or a flake) to be read.
		if why := ruledOutWhy(r.identify.text, "identified "+c.Profile); why != "" {
			fmt.Fprintf(os.Stderr, "cards: %s: identify ruled out the card's own profile:%s\n", c.Name, why)
		}
	}
	return r, nil
}

// findings says in one line what a card's gradings found, as expected.txt
// keeps it: what identify named, then each run's verdict.
func findings(r *graded) string {
	var parts []string
	for _, l := range verdictLines([]*graded{r}) {
		parts = append(parts, l.what+": "+l.verdict)
	}
	return strings.Join(parts, "; ")
}

// regrader gives secondChance the second gradings of cards: those
// gradeAll already made (seconds, at the index of the card's first grading
// in gs), else graded now as gradeAll does, parallel at once.
func (g *grader) regrader(gs, seconds []*graded, parallel int) func([]card) ([]*graded, error) {
	return func(cs []card) ([]*graded, error) {
		made := map[string]*graded{}
		for i, s := range seconds {
			if s != nil {
				made[gs[i].card.Name] = s
			}
		}
		var missing []card
		for _, c := range cs {
			if made[c.Name] == nil {
				missing = append(missing, c)
			}
		}
		if len(missing) > 0 {
			now, _, err := gradeAll(g, missing, parallel, nil)
			if err != nil {
				return nil, err
			}
			for _, r := range now {
				made[r.card.Name] = r
			}
		}
		out := make([]*graded, len(cs))
		for i, c := range cs {
			out[i] = made[c.Name]
		}
		return out, nil
	}
}

// secondChance grades once more, with regrade, each card of gs whose
// verdicts differ from want, and returns the differences that held. A
// card graded in real time beside three others can meet a race or an
// edge only sometimes; a difference that a second grading does not repeat
// is said on log as flaky (to be listed after "flaky:" once the card's
// notes say why), not failed, and the second grading replaces the first
// in gs. A difference that holds fails the run, in the second grading's
// words.
func secondChance(want map[[2]string]string, gs []*graded, regrade func([]card) ([]*graded, error), log io.Writer) ([]string, error) {
	var again []card
	var at []int
	for i, gr := range gs {
		if len(compare(want, gs[i:i+1])) > 0 {
			again, at = append(again, gr.card), append(at, i)
		}
	}
	if len(again) == 0 {
		return nil, nil
	}
	fmt.Fprintf(log, "cards: %d card(s) differed from what is expected: each graded once more, to tell a change from a flake\n", len(again))
	regraded, err := regrade(again)
	if err != nil {
		return nil, err
	}
	var held []string
	for k, gr := range regraded {
		first := compare(want, gs[at[k]:at[k]+1])
		gs[at[k]] = gr
		if second := compare(want, []*graded{gr}); len(second) > 0 {
			held = append(held, second...)
			continue
		}
		fmt.Fprintf(log, "cards: %s differed once, then graded as expected (flaky: list the spec after \"flaky:\" in expected.txt, and say why in the card's notes):\n", gr.card.Name)
		for _, d := range first {
			fmt.Fprintln(log, "  "+d)
		}
	}
	return held, nil
}
