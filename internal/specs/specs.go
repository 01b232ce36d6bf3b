// Package specs is rlconform's catalogue: each spec's id, level, rule, what
// it needs and the body that proves the rule, driving the engine's
// harness. Package suite hands the catalogue to the engine.
package specs

import (
	"slices"

	"github.com/rlconform/rlconform/internal/engine"
)

// All is every spec, in the order they run. Ids are stable: never rename
// one; retire it (engine's retired ids) and add a new one.
func All() engine.Catalogue {
	return slices.Concat(coreSpecs(), strictSpecs(), costSpecs(), robustSpecs(), httpSpecs())
}
