package model

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Readings follows a variant's models, one per honest reading of a change
// of configuration ([Variant.Readings]): a limiter follows one of them.
// Every operation is applied to each model; an answer keeps the readings
// that give it (Keep), and a grader fails an answer none gives. Until a
// Configure changes a user's history they all answer alike, so a variant
// with one reading is followed exactly as its one model.
type Readings struct {
	names  []string // each model's reading; "" for a variant with one
	models []Replayable
	all    []string // every reading the variant has, in order
}

// NewReadings is the readings of v, each configured with n and w.
func NewReadings(v Variant, n int, w time.Duration) (*Readings, error) {
	r := &Readings{}
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
	r.all = slices.Clone(r.names)
	return r, nil
}

// Primary is the first reading still followed: the one a failure quotes.
func (r *Readings) Primary() Replayable { return r.models[0] }

// Each applies f to every reading still followed.
func (r *Readings) Each(f func(Replayable)) {
	for _, m := range r.models {
		f(m)
	}
}

// Answers applies op to every reading still followed and returns each
// one's answer.
func (r *Readings) Answers(op func(Replayable) string) []string {
	out := make([]string, len(r.models))
	for i, m := range r.models {
		out[i] = op(m)
	}
	return out
}

// Keep keeps the readings whose answer (of Answers) is got and reports
// whether one did; when none did, it keeps them all, for the failure.
func (r *Readings) Keep(answers []string, got string) bool {
	var names []string
	var models []Replayable
	for i, a := range answers {
		if a == got {
			names, models = append(names, r.names[i]), append(models, r.models[i])
		}
	}
	if len(models) == 0 {
		return false
	}
	r.names, r.models = names, models
	return true
}

// Disagree says, when the readings still followed gave different answers,
// what each gave: "; the readings differ: relay says denied, finish says
// allowed". "" when they agree.
func (r *Readings) Disagree(answers []string) string {
	if len(answers) < 2 || !slices.ContainsFunc(answers, func(a string) bool { return a != answers[0] }) {
		return ""
	}
	var parts []string
	for i, a := range answers {
		parts = append(parts, r.names[i]+" says "+a)
	}
	return "; the profile's readings of a change of configuration differ: " + strings.Join(parts, ", ")
}

// Followed names the readings a target's answers kept, when they rule
// some out: "Configure read as relay (of relay, finish, rekey, fresh)".
func (r *Readings) Followed() string {
	if len(r.all) < 2 || len(r.names) == len(r.all) {
		return ""
	}
	return fmt.Sprintf("Configure read as %s (of the readings %s)", strings.Join(r.names, " or "), strings.Join(r.all, ", "))
}
