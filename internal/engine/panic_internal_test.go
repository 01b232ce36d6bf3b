package engine

import (
	"reflect"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A panic in the grader's own code is a fault of ours (exit 2), never a
// verdict on the target: graders must recognise the engine's functions
// wherever the package lives, and not a target's.
func TestGradersOwnCode(t *testing.T) {
	own := runtime.FuncForPC(reflect.ValueOf(newRunner).Pointer()).Name()
	assert.True(t, graders(own), own)
	assert.True(t, graders("github.com/rlconform/rlconform/internal/specs.configRange"))
	assert.True(t, graders("github.com/rlconform/rlconform/model/lincheck.Profile.func3"))
	assert.False(t, graders("github.com/rlconform/rlconform/reference.(*Limiter).AllowRequest"))
	assert.False(t, graders("github.com/rlconform/rlconform/model.(*Limiter).AllowRequest"), "the model may be the target")
	assert.False(t, graders("example.com/mine.(*Limiter).AllowRequest"))
}
