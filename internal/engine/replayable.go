package engine

import (
	"fmt"
	"time"

	"github.com/rlconform/rlconform/model"
)

// replayable is a profile's model as the engine drives it: beyond
// model.Profile, it explains a user's state for a failure, forks, and
// names a user's state (the porcupine model keeps one of each). Every
// model that model.Spec.New returns has these methods.
type replayable interface {
	model.Profile
	Explain(now, base time.Time, user string) string
	Clone() model.Profile
	StateKey(user string) string
}

// newModel is spec's model with a configuration, as the engine drives it.
func newModel(spec model.Spec, n int, w time.Duration) (replayable, error) {
	p, err := spec.New(n, w)
	if err != nil {
		return nil, err
	}
	r, ok := p.(replayable)
	if !ok {
		return nil, fmt.Errorf("the model of profile %s cannot be replayed (a bug of the grader)", spec)
	}
	return r, nil
}

// slidingLogModel is the sliding log's model, whose entries the specs of
// entries later than now and the differential read.
type SlidingLogModel interface {
	replayable
	// Log is the entries of user that count at now, oldest first.
	Log(now time.Time, user string) []time.Time
	// Active counts user's entries in (now-W, now]; Unexpired those
	// later than now-W, entries later than now included.
	Active(now time.Time, user string) int
	Unexpired(now time.Time, user string) int
}
