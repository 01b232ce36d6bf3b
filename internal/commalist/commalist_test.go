package commalist

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCommasAndRepeats(t *testing.T) {
	var l List
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Var(&l, "id", "")
	require.NoError(t, fs.Parse([]string{"-id", "core/, strict/reset,,", "-id", "robust/"}))
	assert.Equal(t, List{"core/", "strict/reset", "robust/"}, l)
	assert.Equal(t, "core/,strict/reset,robust/", l.String())
}
