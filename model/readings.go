package model

import (
	"fmt"
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
// a change one user may be read as the reading says and another, whose
// state had expired, afresh (the reading "fresh", where there is one).
type Readings struct {
	names  []string // each model's reading; "" for a variant with one
	models []Replayable
	// out holds, per user, the readings its answers ruled out.
	out map[string][]bool
}

// NewReadings is the readings of v, each configured with n and w.
func NewReadings(v Variant, n int, w time.Duration) (*Readings, error) {
	r := &Readings{out: map[string][]bool{}}
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
	return r, nil
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

// Each applies f to every reading's model.
func (r *Readings) Each(f func(Replayable)) {
	for _, m := range r.models {
		f(m)
	}
}

// Answers applies op, an operation of user, to every reading's model and
// returns the answers of the readings user still follows, the first
// reading's first.
func (r *Readings) Answers(user string, op func(Replayable) string) []string {
	var out []string
	for i, m := range r.models {
		a := op(m)
		if !r.ruledOut(user, i) {
			out = append(out, a)
		}
	}
	return out
}

// Keep keeps, of the readings user follows, those whose answer (of
// Answers) is got, and reports whether one did; when none did, it keeps
// them all, for the failure.
func (r *Readings) Keep(user string, answers []string, got string) bool {
	follows := r.following(user)
	if !slices.Contains(answers, got) {
		return false
	}
	if !slices.ContainsFunc(answers, func(a string) bool { return a != got }) {
		return true // every one gave it
	}
	out := r.out[user]
	if out == nil {
		out = make([]bool, len(r.models))
		r.out[user] = out
	}
	for k, i := range follows {
		if answers[k] != got {
			out[i] = true
		}
	}
	return true
}

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

// Followed names the readings the answers kept, when they ruled some
// out: "Configure read as relay (of the readings relay, finish, rekey,
// fresh)", or per user when users' answers kept different readings.
func (r *Readings) Followed() string {
	if len(r.models) < 2 || len(r.out) == 0 {
		return ""
	}
	every := slices.Clone(r.names) // the readings every user follows
	some := map[string]bool{}
	for user := range r.out {
		var names []string
		for _, i := range r.following(user) {
			names = append(names, r.names[i])
			some[r.names[i]] = true
		}
		every = slices.DeleteFunc(every, func(n string) bool { return !slices.Contains(names, n) })
	}
	all := strings.Join(r.names, ", ")
	if len(every) > 0 {
		return fmt.Sprintf("Configure read as %s (of the readings %s)", strings.Join(every, " or "), all)
	}
	var names []string
	for _, n := range r.names {
		if some[n] {
			names = append(names, n)
		}
	}
	return fmt.Sprintf("Configure read as %s, depending on the user (of the readings %s)", strings.Join(names, " or "), all)
}
