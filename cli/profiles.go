package cli

import (
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
