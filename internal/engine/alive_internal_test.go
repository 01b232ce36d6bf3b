package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/result"
)

// A target whose first liveness probe is lost on the way (a reset) is not
// taken for dead: it is asked again; one that never answers is.
func TestStillAliveAsksAgain(t *testing.T) {
	calls := 0
	flaky := Target{Name: "flaky", Alive: func(context.Context) error {
		calls++
		if calls == 1 {
			return fmt.Errorf("%w: EOF", contract.ErrNoAnswer)
		}
		return nil
	}}
	failed := result.Result{ID: "core/x", Status: result.Failed}
	assert.NoError(t, (&runner{}).stillAlive(t.Context(), flaky, failed))
	assert.Equal(t, 2, calls)
	dead := Target{Name: "dead", Alive: func(context.Context) error { return errors.New("connection refused") }}
	assert.ErrorContains(t, (&runner{}).stillAlive(t.Context(), dead, failed), "dead stopped answering during core/x")
}
