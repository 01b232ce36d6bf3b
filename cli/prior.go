package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/result"
)

// Bounds on what run --from-identify takes from a file: its size, and
// how old an identification may be for its passes to stand for the
// limiter as it is now.
const (
	maxPriorBytes = 8 << 20
	maxPriorAge   = time.Hour
)

// priorJSON is as much of identify's JSON (report.IdentificationJSON) as
// a run takes from it.
type priorJSON struct {
	Version  string              `json:"version"`
	Target   string              `json:"target"`
	Limit    int                 `json:"limit"`
	WindowMs int64               `json:"window_ms"`
	Mode     string              `json:"mode"`
	Graded   []report.GradedJSON `json:"graded"`
	At       string              `json:"at"`
}

// readPrior reads the identification of path (rlconform identify --json)
// for run --from-identify. A file that cannot be read or is not an
// identification is an error; one the run should not take from (another
// version of rlconform, older than maxPriorAge, or with no graded probes)
// returns nil and says why, and the run grades every spec.
func readPrior(path, version string, now time.Time) (*result.Identification, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("--from-identify: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPriorBytes+1))
	if err != nil {
		return nil, "", fmt.Errorf("--from-identify: %w", err)
	}
	if len(data) > maxPriorBytes {
		return nil, "", fmt.Errorf("--from-identify %s: over %d MiB: not an identification rlconform wrote", path, maxPriorBytes>>20)
	}
	var p priorJSON
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, "", fmt.Errorf("--from-identify %s: not rlconform identify's JSON: %w", path, err)
	}
	if p.Target == "" || p.At == "" {
		return nil, "", fmt.Errorf("--from-identify %s: not rlconform identify's JSON (no target, or no \"at\": written by a version before --from-identify)", path)
	}
	at, err := time.Parse(time.RFC3339Nano, p.At)
	if err != nil {
		return nil, "", fmt.Errorf("--from-identify %s: \"at\": %w", path, err)
	}
	switch age := now.Sub(at); {
	case p.Version != version:
		return nil, fmt.Sprintf("--from-identify: every spec graded: the identification was made by rlconform %s, this is %s", p.Version, version), nil
	case age > maxPriorAge || age < -time.Minute:
		return nil, fmt.Sprintf("--from-identify: every spec graded: the identification was made at %s, not within the last %v", at.Format(time.RFC3339), maxPriorAge), nil
	}
	id, err := p.identification(at)
	if err != nil {
		return nil, "", fmt.Errorf("--from-identify %s: %w", path, err)
	}
	return id, "", nil
}

// identification is p as the run takes it, every probe validated.
func (p priorJSON) identification(at time.Time) (*result.Identification, error) {
	id := &result.Identification{Target: p.Target, Limit: p.Limit, Window: time.Duration(p.WindowMs) * time.Millisecond, Mode: result.Mode(p.Mode), At: at}
	if id.Mode != result.FakeClock && id.Mode != result.RealTime {
		return nil, fmt.Errorf("mode %q: want %q or %q", p.Mode, result.FakeClock, result.RealTime)
	}
	for i, g := range p.Graded {
		if g.ID == "" || g.Profile == "" || g.Limit < 1 || g.WindowMs < 1 || g.WindowMs > int64(100*365*24*time.Hour/time.Millisecond) {
			return nil, fmt.Errorf("graded[%d]: want an id, a profile, a limit and a window of at least 1 ms", i)
		}
		if g.Mode != p.Mode {
			return nil, errors.New("graded probes in another mode than the identification's")
		}
		id.Graded = append(id.Graded, result.Graded{
			// The message is not taken: the file is text from outside.
			Result:  result.Result{ID: g.ID, Status: result.Status(g.Status), Mode: result.Mode(g.Mode)},
			Profile: g.Profile, Limit: g.Limit, Window: time.Duration(g.WindowMs) * time.Millisecond})
	}
	return id, nil
}
