package plural

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCountTakesAnSExceptForOne(t *testing.T) {
	assert.Equal(t, "1 spec", Count(1, "spec"))
	assert.Equal(t, "0 specs", Count(0, "spec"))
	assert.Equal(t, "3 specs", Count(3, "spec"))
	assert.Equal(t, "-1 specs", Count(-1, "spec"))
	assert.Equal(t, "1048577 lines", Count(int64(1<<20+1), "line"))
}
