package engine

import (
	"time"

	"github.com/rlconform/rlconform/model"
)

// Model is a profile's model as the engine drives it and a spec reads it
// (Harness.Model): the profile, with what the grader needs of it to
// replay and explain (model.Replayable).
type Model = model.Replayable

// SlidingLogModel is the sliding log's model, whose entries the specs of
// entries later than now and the differential read.
type SlidingLogModel interface {
	Model
	// Log is the entries of user that count at now, oldest first.
	Log(now time.Time, user string) []time.Time
	// Active counts user's entries in (now-W, now]; Unexpired those
	// later than now-W, entries later than now included.
	Active(now time.Time, user string) int
	Unexpired(now time.Time, user string) int
}
