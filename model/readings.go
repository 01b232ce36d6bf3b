package model

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Readings follows a variant's models, one per honest reading of a change
// of configuration ([Variant.Readings]). Every operation is applied to
// each model; an answer keeps, for its user, the readings that give it
// (Keep), and a grader fails an answer none of that user's readings
// gives. Until a Configure changes a user's history they all answer
// alike, so a variant with one reading is followed exactly as its one
// model.
//
// The readings are kept per user, not for the whole limiter: a store
// forgets a user whose state no longer matters (its key's TTL), so after
// a change one user may be read as a reading says and another, whose
// state had expired, afresh.
//
// The readings modelled are those libraries were found doing; others are
// honest too (a store keyed by the window's start finds an earlier
// window's counter again, even after a change back). So while a user's
// history from before a change of the window may still matter (its
// transition: the longest lifetime any reading gives it, plus two of the
// longest windows configured, for a key kept past that lifetime), an
// answer no reading gives is undecided, not wrong, and the user is not
// graded again until it is reset. After its transition every reading has
// forgotten that history and they all answer alike: an answer none gives
// is wrong. A user no longer graded is graded again, as a fresh user,
// once it has been idle that long (every honest store has forgotten it).
// A change of the limit alone starts no transition, nor does any change
// under a variant with one reading (the sliding log: the contract says
// what a change does).
type Readings struct {
	names  []string // each model's reading; "" for a variant with one
	models []Replayable
	// out holds, per user, the readings its answers ruled out.
	out map[string][]bool
	// users are the users seen; transition is when each one's history
	// from before the latest change stops mattering under every reading;
	// off are the users no longer graded (until reset).
	users      map[string]bool
	transition map[string]time.Time
	off        map[string]time.Time // until when, idle, a user is not graded
	longest    time.Duration        // the longest window configured
	most       int                  // MostRemaining under the configuration in force
}

// Verdict is what Keep makes of an answer.
type Verdict int

// The verdicts of an answer.
const (
	// Explained: a reading the user follows gives it.
	Explained Verdict = iota
	// Wrong: no reading gives it, and the user's transition is over.
	Wrong
	// Unjudged: no modelled reading gives it during the user's
	// transition, or the user is no longer graded.
	Unjudged
)

// NewReadings is the readings of v, each configured with n and w.
func NewReadings(v Variant, n int, w time.Duration) (*Readings, error) {
	r := &Readings{out: map[string][]bool{}, users: map[string]bool{}, transition: map[string]time.Time{}, off: map[string]time.Time{}, longest: w}
	vs := v.Readings()
	for _, rv := range vs {
		m, err := rv.New(n, w)
		if err != nil {
			return nil, err
		}
		name := ""
		if len(vs) > 1 || v.Reading() != "" {
			name = rv.Reading()
		}
		r.names, r.models = append(r.names, name), append(r.models, m)
	}
	r.most = freshRemaining(r.models)
	return r, nil
}

// freshRemaining is the most any of models allows a user it never saw.
func freshRemaining(models []Replayable) int {
	most := 0
	for _, m := range models {
		n, _ := m.Clone().Remaining(time.Time{}, "\x00rlconform: a user never seen")
		most = max(most, n)
	}
	return most
}

// Primary is the model of the first reading: the one a grader reads when
// no user is in question.
func (r *Readings) Primary() Replayable { return r.models[0] }

// For is the model of the first reading user's answers still follow: the
// one a failure of user quotes.
func (r *Readings) For(user string) Replayable {
	for i, m := range r.models {
		if !r.ruledOut(user, i) {
			return m
		}
	}
	return r.models[0]
}

func (r *Readings) ruledOut(user string, i int) bool {
	out := r.out[user]
	return out != nil && out[i]
}

// Reset forgets user in every reading: it is graded afresh.
func (r *Readings) Reset(user string) {
	for _, m := range r.models {
		m.Reset(user)
	}
	delete(r.out, user)
	delete(r.transition, user)
	delete(r.off, user)
}

// Configure applies a change of configuration at now to every reading,
// and, when the window changes, starts the transition of every user with
// history. (A change of the limit alone keeps every count, window and
// bucket where it was in every reading found, or forgets the user: its
// answers are graded against the readings at once.)
func (r *Readings) Configure(now time.Time, n int, w time.Duration) error {
	windowChanged := w != r.models[0].Window()
	for _, m := range r.models {
		if err := m.Configure(now, n, w); err != nil {
			return err
		}
	}
	r.longest = max(r.longest, w)
	r.most = freshRemaining(r.models)
	if len(r.models) < 2 || !windowChanged {
		return nil
	}
	for user := range r.users {
		var life time.Duration
		for _, m := range r.models {
			life = max(life, m.Lifetime(now, user))
		}
		if end := now.Add(transitionSpan(life, r.longest)); end.After(r.transition[user]) {
			r.transition[user] = end
		}
	}
	return nil
}

// forgotten is how long from now user's state may still matter in a
// store: the longest lifetime any reading gives it, plus two of the
// longest windows configured (a key kept past that lifetime).
func (r *Readings) forgotten(now time.Time, user string) time.Time {
	var life time.Duration
	for _, m := range r.models {
		life = max(life, m.Lifetime(now, user))
	}
	return now.Add(transitionSpan(life, r.longest))
}

// transitionSpan is how long a state whose lifetime is life may still
// matter in a store: life plus two of the longest windows configured (a
// key kept past that lifetime), saturated (windows reach 100 years).
func transitionSpan(life, longest time.Duration) time.Duration {
	if longest > (math.MaxInt64-life)/2 {
		return math.MaxInt64
	}
	return life + 2*longest
}

// Answers applies op, an operation of user at now, to every reading's
// model and returns the answers of the readings user still follows, the
// first reading's first.
func (r *Readings) Answers(user string, now time.Time, op func(Replayable) string) []string {
	r.users[user] = true
	if until, off := r.off[user]; off && !now.Before(until) {
		r.Reset(user) // idle long enough: every honest store has forgotten it
	}
	var out []string
	for i, m := range r.models {
		a := op(m)
		if !r.ruledOut(user, i) {
			out = append(out, a)
		}
	}
	if until, off := r.off[user]; off {
		if f := r.forgotten(now, user); f.After(until) {
			r.off[user] = f
		}
	}
	return out
}

// Keep judges got, user's answer at now, against the answers (of
// Answers) of the readings user follows, and keeps those that give it.
func (r *Readings) Keep(user string, now time.Time, answers []string, got string) Verdict {
	_, off := r.off[user]
	switch {
	case off:
		return Unjudged
	case !slices.Contains(answers, got):
		if now.Before(r.transition[user]) {
			r.off[user] = r.forgotten(now, user)
			return Unjudged
		}
		return Wrong
	case !slices.ContainsFunc(answers, func(a string) bool { return a != got }):
		return Explained // every one gave it
	}
	out := r.out[user]
	if out == nil {
		out = make([]bool, len(r.models))
		r.out[user] = out
	}
	for k, i := range r.following(user) {
		if answers[k] != got {
			out[i] = true
		}
	}
	return Explained
}

// MostRemaining is the most requests any reading allows a fresh user
// under the configuration in force: no reading leaves a user with history
// more (no reading keeps an old, higher limit).
func (r *Readings) MostRemaining() int { return r.most }

// following are the indices of the readings user still follows.
func (r *Readings) following(user string) []int {
	var out []int
	for i := range r.models {
		if !r.ruledOut(user, i) {
			out = append(out, i)
		}
	}
	return out
}

// Disagree says, when the readings user follows gave different answers,
// what each gave: "; the profile's readings of a change of configuration
// differ: relay says denied, finish says allowed". "" when they agree.
func (r *Readings) Disagree(user string, answers []string) string {
	if len(answers) < 2 || !slices.ContainsFunc(answers, func(a string) bool { return a != answers[0] }) {
		return ""
	}
	var parts []string
	for k, i := range r.following(user) {
		parts = append(parts, r.names[i]+" says "+answers[k])
	}
	return "; the profile's readings of a change of configuration differ: " + strings.Join(parts, ", ")
}

// Kept are the readings every user's answers kept (all of them when the
// variant has one, or no answer told them apart).
func (r *Readings) Kept() []string {
	every := slices.Clone(r.names)
	for user := range r.out {
		var names []string
		for _, i := range r.following(user) {
			names = append(names, r.names[i])
		}
		every = slices.DeleteFunc(every, func(n string) bool { return !slices.Contains(names, n) })
	}
	return every
}

// Followed names the readings the answers kept, when they ruled some
// out: "Configure read as relay (of the readings relay, finish, rekey,
// fresh)", or per user when users' answers kept different readings.
func (r *Readings) Followed() string {
	if len(r.models) < 2 || len(r.out) == 0 {
		return ""
	}
	all := strings.Join(r.names, ", ")
	if every := r.Kept(); len(every) > 0 {
		return fmt.Sprintf("Configure read as %s (of the readings %s)", strings.Join(every, " or "), all)
	}
	some := map[string]bool{}
	for user := range r.out {
		for _, i := range r.following(user) {
			some[r.names[i]] = true
		}
	}
	var names []string
	for _, n := range r.names {
		if some[n] {
			names = append(names, n)
		}
	}
	return fmt.Sprintf("Configure read as %s, depending on the user (of the readings %s)", strings.Join(names, " or "), all)
}
