package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rlconform/rlconform/result"
)

// Identification writes what rlconform identify found, for people: the
// profiles that explain every answer, then those ruled out with the
// answer that rules each out and the user's operations leading to it.
func Identification(w io.Writer, id *result.Identification) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (limit %d, window %v, %s; a fresh user got %d at once)\n", id.Target, id.Limit, id.Window, id.Mode, id.Burst)
	switch len(id.Fits) {
	case 0:
		if id.Undecided() {
			profiles := "1 profile"
			if len(id.Unjudged) > 1 {
				profiles = fmt.Sprintf("%d profiles", len(id.Unjudged))
			}
			fmt.Fprintf(&b, "UNDECIDED: no profile judged explains every answer, but %s could not be judged (below) and may explain them all\n", profiles)
		} else {
			b.WriteString("NONE FITS: no profile explains every answer (each is ruled out below)\n")
		}
	case 1:
		if id.Configure != nil || id.Fits[0].RemainingDiffers != "" {
			b.WriteString("IDENTIFIED: " + apart(id) + "\n")
		} else if len(id.Fits[0].SameDecisions) > 0 {
			b.WriteString("IDENTIFIED: one group of profiles that decide alike explains every answer\n")
		} else {
			b.WriteString("IDENTIFIED: one profile explains every answer\n")
		}
	default:
		fmt.Fprintf(&b, "AMBIGUOUS: %d profiles explain every answer; these probes cannot tell them apart\n", len(id.Fits))
	}
	for _, f := range id.Fits {
		fmt.Fprintf(&b, "  fits      %s: %s (%d answers decided)\n", f.Name(), f.Description, f.Decided)
		for _, u := range f.Undecided {
			fmt.Fprintf(&b, "            %s=? (%s): %s\n", u.Param, strings.Join(u.Values, " or "), u.Why)
		}
		if len(f.SameDecisions) > 0 {
			fmt.Fprintf(&b, "            decides as %s on every history with one configuration: no answer tells them apart\n", strings.Join(f.SameDecisions, ", "))
		}
		if f.RemainingDiffers != "" {
			fmt.Fprintf(&b, "            GetRemainingRequests answers otherwise: %s\n", f.RemainingDiffers)
		}
		switch {
		case len(f.Readings) == 1:
			fmt.Fprintf(&b, "            reads a change of configuration as %s (reconfigure=%s)\n", f.Readings[0], f.Readings[0])
		case len(f.Readings) > 1:
			fmt.Fprintf(&b, "            reads a change of configuration as %s: the probes cannot tell these readings apart\n", strings.Join(f.Readings, " or "))
		case f.ChangeUnjudged:
			b.WriteString("            reads a change of configuration as none of the profile's readings does: the answers after it were not judged\n")
		}
	}
	if c := id.Configure; c != nil {
		r := c.Evidence
		fmt.Fprintf(&b, "  configure %s\n", c.Does)
		if r.Probe != "" {
			fmt.Fprintf(&b, "    by %s step %d at %s: %s = %s, the profile says %s\n", r.Probe, r.Step, offset(r.At), r.Operation, r.Got, r.Want)
			for _, t := range r.Timeline {
				fmt.Fprintf(&b, "      %s\n", t)
			}
		}
	}
	// Profiles ruled out by the same answer share one block.
	done := make([]bool, len(id.RuledOut))
	for i, r := range id.RuledOut {
		if done[i] {
			continue
		}
		names := []string{r.Profile}
		for j := i + 1; j < len(id.RuledOut); j++ {
			o := id.RuledOut[j]
			if !done[j] && o.Probe == r.Probe && o.Step == r.Step && o.Want == r.Want {
				done[j] = true
				names = append(names, o.Profile)
			}
		}
		says := "the profile says"
		if len(names) > 1 {
			says = "they say"
		}
		fmt.Fprintf(&b, "  ruled out %s\n    by %s step %d at %s: %s = %s, %s %s\n", strings.Join(names, ", "), r.Probe, r.Step, offset(r.At), r.Operation, r.Got, says, r.Want)
		for _, t := range r.Timeline {
			fmt.Fprintf(&b, "      %s\n", t)
		}
	}
	if len(id.Unjudged) > 0 {
		fmt.Fprintf(&b, "  not judged %s: neither fits nor ruled out: the search of their states ran past identify's budget of steps (slow round trips widen every instant a search follows; a loaded machine makes them slow)\n", strings.Join(id.Unjudged, ", "))
	}
	for _, m := range id.Mistakes {
		fmt.Fprintf(&b, "  closest: every decision is what %s would give\n", m)
	}
	for _, n := range id.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func offset(d time.Duration) string {
	if ms := d.Milliseconds(); ms < 0 {
		return fmt.Sprintf("%dms", ms)
	}
	return fmt.Sprintf("+%dms", d.Milliseconds())
}

// IdentificationJSON writes what rlconform identify found as JSON.
func IdentificationJSON(w io.Writer, id *result.Identification, meta Meta) error {
	type undecided struct {
		Param  string   `json:"param"`
		Values []string `json:"values"`
		Why    string   `json:"why"`
	}
	type fit struct {
		// Profile is one profile of the fit's group (it parses); Name is
		// the fit as found, "?" for each value in Undecided.
		Profile          string      `json:"profile"`
		Name             string      `json:"name"`
		Undecided        []undecided `json:"undecided,omitempty"`
		Description      string      `json:"description"`
		SameDecisions    []string    `json:"same_decisions,omitempty"`
		Decided          int         `json:"decided"`
		RemainingDiffers string      `json:"remaining_differs,omitempty"`
		Readings         []string    `json:"readings,omitempty"`
		ChangeUnjudged   bool        `json:"change_unjudged,omitempty"`
	}
	type ruledOut struct {
		Profile     string   `json:"profile"`
		Description string   `json:"description"`
		Probe       string   `json:"probe"`
		Step        int      `json:"step"`
		AtMs        int64    `json:"at_ms"`
		Operation   string   `json:"operation"`
		Got         string   `json:"got"`
		Want        string   `json:"want"`
		Timeline    []string `json:"timeline"`
	}
	type configure struct {
		Does     string   `json:"does"`
		Evidence ruledOut `json:"evidence"`
	}
	out := struct {
		Version   string     `json:"version,omitempty"`
		Catalogue string     `json:"catalogue,omitempty"`
		Target    string     `json:"target"`
		Limit     int        `json:"limit"`
		WindowMs  int64      `json:"window_ms"`
		Mode      string     `json:"mode"`
		Burst     int        `json:"burst"`
		Outcome   string     `json:"outcome"`
		Fits      []fit      `json:"fits"`
		RuledOut  []ruledOut `json:"ruled_out"`
		Mistakes  []string   `json:"mistakes,omitempty"`
		// Configure is what Configure does, found apart from the
		// algorithm in steady state.
		Configure *configure `json:"configure,omitempty"`
		Unjudged  []string   `json:"unjudged,omitempty"`
		Probes    []string   `json:"probes"`
		Notes     []string   `json:"notes,omitempty"`
		// Graded are the catalogue's probes as each was graded, for
		// rlconform run --from-identify; At is when the probes ended.
		Graded []GradedJSON `json:"graded,omitempty"`
		At     string       `json:"at,omitempty"`
	}{Version: meta.Version, Catalogue: meta.Catalogue, Target: id.Target, Limit: id.Limit, WindowMs: id.Window.Milliseconds(), Mode: string(id.Mode), Burst: id.Burst,
		Fits: []fit{}, RuledOut: []ruledOut{}, Mistakes: id.Mistakes, Unjudged: id.Unjudged, Probes: id.Probes, Notes: id.Notes}
	switch len(id.Fits) {
	case 0:
		out.Outcome = "none-fits"
		if id.Undecided() {
			out.Outcome = "undecided"
		}
	case 1:
		out.Outcome = "identified"
	default:
		out.Outcome = "ambiguous"
	}
	for _, f := range id.Fits {
		jf := fit{Profile: f.Profile, Name: f.Name(), Description: f.Description, SameDecisions: f.SameDecisions, Decided: f.Decided,
			RemainingDiffers: f.RemainingDiffers, Readings: f.Readings, ChangeUnjudged: f.ChangeUnjudged}
		for _, u := range f.Undecided {
			jf.Undecided = append(jf.Undecided, undecided{u.Param, u.Values, u.Why})
		}
		out.Fits = append(out.Fits, jf)
	}
	for _, r := range id.RuledOut {
		out.RuledOut = append(out.RuledOut, ruledOut{r.Profile, r.Description, r.Probe, r.Step, r.At.Milliseconds(), r.Operation, r.Got, r.Want, r.Timeline})
	}
	if c := id.Configure; c != nil {
		r := c.Evidence
		out.Configure = &configure{c.Does, ruledOut{r.Profile, r.Description, r.Probe, r.Step, r.At.Milliseconds(), r.Operation, r.Got, r.Want, r.Timeline}}
	}
	for _, g := range id.Graded {
		out.Graded = append(out.Graded, GradedJSON{ID: g.Result.ID, Status: string(g.Result.Status), Mode: string(g.Result.Mode),
			Profile: g.Profile, Limit: g.Limit, WindowMs: g.Window.Milliseconds(), Message: g.Result.Message})
	}
	if !id.At.IsZero() {
		out.At = id.At.UTC().Format(time.RFC3339Nano)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// GradedJSON is a probe of the catalogue as identify's JSON holds it: the
// spec, its status and mode, and the profile, limit and window it was
// graded under.
type GradedJSON struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Mode     string `json:"mode"`
	Profile  string `json:"profile"`
	Limit    int    `json:"limit"`
	WindowMs int64  `json:"window_ms"`
	Message  string `json:"message,omitempty"`
}

// apart is the headline of one fit that explains every decision, where
// Configure or GetRemainingRequests answer otherwise: read apart, as
// rlconform run --profile fails them (core/reconfigure, core/remaining).
func apart(id *result.Identification) string {
	if id.Fits[0].RemainingDiffers == "" {
		return "one profile explains every answer in steady state; Configure does otherwise (below)"
	}
	if id.Configure == nil {
		return "one profile explains every allow and deny answer; GetRemainingRequests answers otherwise (below)"
	}
	return "one profile explains every allow and deny answer in steady state; GetRemainingRequests and Configure answer otherwise (below)"
}
