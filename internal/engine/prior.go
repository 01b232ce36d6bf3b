package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/rlconform/rlconform/result"
)

// prior is the result of s that the run's Config.Prior already holds for
// t: a pass of the same spec, graded on the target of the same name, in
// the same mode, under the run's profile with the limit and window the
// spec would begin with now. A failure, an inconclusive or skipped
// result, or one graded otherwise is graded again.
func (r *runner) prior(t Target, s *Spec) (result.Result, bool) {
	id := r.cfg.Prior
	if id == nil || id.Target != t.Name {
		return result.Result{}, false
	}
	mode, window := result.RealTime, r.specWindow(t)
	if t.Capabilities.Clock {
		mode = result.FakeClock
	}
	if id.Mode != mode {
		return result.Result{}, false
	}
	for _, g := range id.Graded {
		if g.Result.ID == s.ID && g.Result.Status == result.Passed && g.Result.Mode == mode &&
			g.Profile == r.profile.String() && g.Limit == r.cfg.Limit && g.Window == window {
			r.mu.Lock()
			r.reused = append(r.reused, s.ID)
			r.mu.Unlock()
			return g.Result, true
		}
	}
	return result.Result{}, false
}

// specWindow is the window a spec of t begins with now: the real-time
// window without clock control.
func (r *runner) specWindow(t Target) time.Duration {
	if t.Capabilities.Clock {
		return r.cfg.Window
	}
	return r.cfg.RealTimeWindow
}

// takenFrom is the message of a result taken from the prior
// identification.
func takenFrom(g result.Result, limit int, window time.Duration) string {
	msg := fmt.Sprintf("passed as identify probed it (limit %d, window %v, the same profile): not graded again", limit, window)
	if m := strings.TrimSpace(g.Message); m != "" {
		msg += "\n" + m
	}
	return msg
}

// reusedNote says which specs the run took from its prior
// identification, if any.
func (r *runner) reusedNote() []string {
	if len(r.reused) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%d spec(s) passed as identify probed them, graded alike, and were not graded again: %s", len(r.reused), strings.Join(r.reused, ", "))}
}
