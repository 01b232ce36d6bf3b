package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/rlconform/rlconform/model"
)

// profileNames lists the built-in algorithms with their parameters and
// values, for the help of --profile: "sliding-log, fixed-window
// (align=epoch|go-zero|..., ...), ...".
func profileNames() string {
	var out []string
	for _, alg := range model.Builtin().All() {
		var params []string
		for _, p := range alg.Params {
			values := p.Values
			if values == nil {
				values = []string{"N", "limit"}
			}
			params = append(params, p.Name+"="+strings.Join(values, "|"))
		}
		if len(params) == 0 {
			out = append(out, alg.Name)
			continue
		}
		out = append(out, alg.Name+" ("+strings.Join(params, ", ")+")")
	}
	return strings.Join(out, ", ")
}

// describeProfile prints what --profile names, before the listing: the
// algorithm, the value of each parameter with what it means, and the
// readings of a change of configuration graded.
func describeProfile(w io.Writer, profile string) {
	v, err := model.ParseVariant(profile)
	if err != nil {
		return // the listing reports it
	}
	alg := v.Algorithm()
	fmt.Fprintf(w, "profile %s: %s\n", v, alg.Summary)
	for _, p := range alg.Params {
		if p.Name == model.ReconfigureParam {
			continue
		}
		fmt.Fprintf(w, "  %s=%s: %s\n", p.Name, v.Params[p.Name], p.Doc)
	}
	if len(alg.Readings) > 1 {
		graded := "every reading below: a user's answers after a change must all be one reading's"
		if r := v.Reading(); r != "" {
			graded = "this reading alone"
		}
		fmt.Fprintf(w, "  %s=%s: a change of the limit or the window is graded against %s\n", model.ReconfigureParam, v.Params[model.ReconfigureParam], graded)
		for _, r := range alg.Readings {
			if pinned := v.Reading(); pinned != "" && pinned != r.Name {
				continue
			}
			fmt.Fprintf(w, "    %s: %s", r.Name, r.Doc)
			if r.Seen != "" {
				fmt.Fprintf(w, " (%s)", r.Seen)
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintln(w)
}
