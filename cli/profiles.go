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
		fmt.Fprintf(w, "  %s=%s: %s\n", p.Name, v.Params[p.Name], valueDoc(p, v.Params[p.Name]))
	}
	if alg.Cost != "" {
		fmt.Fprintf(w, "  cost n: %s\n", alg.Cost)
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

// valueDoc is what p's doc says of value: the part "value: ..." when the
// doc states each of p's values in turn ("read: ...; write: ..."), else
// the whole doc.
func valueDoc(p model.ParamInfo, value string) string {
	if len(p.Values) == 0 {
		return p.Doc
	}
	at := func(v string) int {
		if strings.HasPrefix(p.Doc, v+": ") {
			return 0
		}
		if i := strings.Index(p.Doc, "; "+v+": "); i >= 0 {
			return i + 2
		}
		return -1
	}
	start := at(value)
	if start < 0 {
		return p.Doc
	}
	end := len(p.Doc)
	for _, other := range p.Values {
		if i := at(other); i > start && i-2 < end {
			end = i - 2
		}
	}
	return strings.TrimPrefix(p.Doc[start:end], value+": ")
}
