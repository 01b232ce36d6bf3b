package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rlconform/rlconform/model"
)

// TestListProfileSaysEachValueAndTheCostRule: list --profile gives each
// parameter's meaning for the value shown (count-denied=false does not
// read as counting denied requests), and the rule of a request of cost n.
func TestListProfileSaysEachValueAndTheCostRule(t *testing.T) {
	code, out, _ := rlconform(t, "list", "--profile", "fixed-window")
	assert.Equal(t, ExitConformant, code)
	assert.Contains(t, out, "  count-denied=false: only allowed requests are counted\n")
	assert.Contains(t, out, "  query=read: a query of what remains changes nothing\n")
	assert.Contains(t, out, "  cost n: allowed when count + n <= N")
	code, out, _ = rlconform(t, "list", "--profile", "sliding-counter:count-denied=true,admit=at-most")
	assert.Equal(t, ExitConformant, code)
	assert.Contains(t, out, "  count-denied=true: denied requests are counted too\n")
	assert.Contains(t, out, "  admit=at-most: allowed while the estimate including this request is at most N (estimate + 1 <= N)\n")
	for _, alg := range model.Builtin().All() {
		_, out, _ = rlconform(t, "list", "--profile", alg.Name)
		assert.Contains(t, out, "  cost n: "+alg.Cost+"\n", alg.Name)
	}
}

// TestValueDoc: the part of a doc for one value, or the whole doc when it
// does not state each value.
func TestValueDoc(t *testing.T) {
	p := model.ParamInfo{Name: "x", Values: []string{"a", "ab", "b"}, Doc: "a: first; ab: second (a: not this); b: third"}
	assert.Equal(t, "first", valueDoc(p, "a"))
	assert.Equal(t, "second (a: not this)", valueDoc(p, "ab"))
	assert.Equal(t, "third", valueDoc(p, "b"))
	whole := model.ParamInfo{Name: "y", Values: []string{"false", "true"}, Doc: "denied requests count"}
	assert.Equal(t, "denied requests count", valueDoc(whole, "false"))
	number := model.ParamInfo{Name: "burst", Doc: "the burst B"}
	assert.Equal(t, "the burst B", valueDoc(number, "7"))
}
