package result

import (
	"slices"
	"strings"
	"time"
)

// Identification is what Identify found: the profiles (with parameters)
// that explain every answer of its probes, and those ruled out, each by
// the first answer it would not give.
type Identification struct {
	Target string
	// Limit and Window are the configuration the probes ran with.
	Limit  int
	Window time.Duration
	Mode   Mode
	// Burst is how many requests a fresh user got at one instant (in real
	// time: in one quick burst).
	Burst int
	// Fits explain every answer, one group for the profiles that decide
	// alike on every history with one configuration (a raised limit may
	// tell them apart, and then has; windows on the epoch's grid and on
	// Go's are one group only when every window the probes used is the
	// same on both); RuledOut are the others.
	Fits     []Fit
	RuledOut []RuledOut
	// Mistakes, when no profile fits, are the classic mistakes of a
	// sliding log that give every decision (in real time, with instants
	// taken at the sending, the answer or half-way: a diagnosis, not a
	// verdict).
	Mistakes []string `json:",omitempty"`
	// Configure, when set, says what the limiter's Configure does where it
	// is not what the fitting profiles say: the fits explain every answer
	// with it set apart (in steady state), and this is how Configure reads.
	Configure *ConfigureFinding `json:",omitempty"`
	// Unjudged are the profiles no answer fitted nor ruled out: the search
	// of their states ran past identify's budget of steps (slow round
	// trips widen every instant a search follows). With no fit, they make
	// the identification undecided (Undecided), never "none fits".
	Unjudged []string `json:",omitempty"`
	// Probes are the specs whose histories were replayed.
	Probes []string
	Notes  []string
	// Graded are the probes of the catalogue as each was graded, under
	// the default profile and the configuration it ran with: a run given
	// this identification (Config.Prior) takes the passing ones instead
	// of grading them again, when it grades them alike.
	Graded []Graded `json:",omitempty"`
	// At is when the probes ended.
	At time.Time
}

// Undecided reports whether no profile fits while some were not judged:
// one of those may be the limiter's, so nothing can be said.
func (id *Identification) Undecided() bool {
	return len(id.Fits) == 0 && len(id.Unjudged) > 0
}

// Graded is a spec's result with what it was graded under: the profile,
// and the limit and window the spec began with.
type Graded struct {
	Result  Result
	Profile string
	Limit   int
	Window  time.Duration
}

// ConfigureFinding is what a limiter's Configure does, found apart from
// the algorithm it runs in steady state.
type ConfigureFinding struct {
	// Does says what Configure does, e.g. that it forgets every user's
	// history.
	Does string
	// Evidence is the first answer the fitting profile's own Configure
	// would not give, and the user's operations up to it.
	Evidence RuledOut
}

// Fit is a profile that explains every decision of the probes.
type Fit struct {
	Profile     string
	Description string
	// SameDecisions are profiles that decide, and answer
	// GetRemainingRequests, as this one does on every history with one
	// configuration (a GCRA and a continuously refilled token bucket of
	// the same burst; a fixed window counting denied requests or not), and
	// that no answer of the probes told apart: with this one, one
	// identification.
	SameDecisions []string `json:",omitempty"`
	// Decided counts the answers this profile left no doubt about (in
	// real time, the others fit whatever the instants).
	Decided int
	// RemainingDiffers, when set, says how GetRemainingRequests answered
	// otherwise than the profile does, though every decision fits.
	RemainingDiffers string `json:",omitempty"`
	// Readings are the profile's readings of a change of configuration
	// that explain every answer, when it has several.
	Readings []string `json:",omitempty"`
	// ChangeUnjudged: none of the profile's readings gives the answers
	// after a change of configuration; those answers were not judged (a
	// reading rlconform does not model may give them).
	ChangeUnjudged bool `json:",omitempty"`
	// Undecided are the parameters of Profile whose value no answer
	// decided: a profile of the group (SameDecisions) of the same
	// algorithm takes another value, and decides alike. Profile holds one
	// of the values (it parses, for --profile); Name shows each as "?",
	// and Description names the values.
	Undecided []UndecidedParam `json:",omitempty"`
}

// UndecidedParam is a parameter of a fit that no answer decided.
type UndecidedParam struct {
	Param string
	// Values are the values the fit's group holds, any of which gives
	// every answer.
	Values []string
	// Why says why no probe told them apart.
	Why string
}

// Name is the fit as found: Profile with the value of each parameter no
// answer decided shown as "?" (fixed-window:align=epoch,count-denied=?).
func (f Fit) Name() string {
	name, params, ok := strings.Cut(f.Profile, ":")
	if len(f.Undecided) == 0 || !ok {
		return f.Profile
	}
	parts := strings.Split(params, ",")
	for i, p := range parts {
		k, _, _ := strings.Cut(p, "=")
		if slices.ContainsFunc(f.Undecided, func(u UndecidedParam) bool { return u.Param == k }) {
			parts[i] = k + "=?"
		}
	}
	return name + ":" + strings.Join(parts, ",")
}

// RuledOut is a profile that does not explain the probes, with the
// shortest evidence: the first answer it would not give, and the user's
// operations up to it.
type RuledOut struct {
	Profile     string
	Description string
	Probe       string
	Step        int
	At          time.Duration
	Operation   string
	Got, Want   string
	Timeline    []string
}
