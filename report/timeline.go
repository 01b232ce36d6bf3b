package report

import "github.com/rlconform/rlconform/result"

// jsonTimeline is a failure's timeline (or concurrent history) in the
// JSON report: every operation, as data.
type jsonTimeline struct {
	Limit      int      `json:"limit"`
	WindowMs   float64  `json:"window_ms"`
	Instances  int      `json:"instances"`
	UserTag    string   `json:"user_tag,omitempty"`
	Total      int      `json:"total"`
	ShrunkFrom int      `json:"shrunk_from,omitempty"`
	Ops        []jsonOp `json:"ops"`
}

// jsonOp is one operation of a timeline.
type jsonOp struct {
	Step      int     `json:"step"`
	AtMs      float64 `json:"at_ms"`
	UntilMs   float64 `json:"until_ms,omitempty"`
	Instance  int     `json:"instance"`
	User      string  `json:"user,omitempty"`
	Kind      string  `json:"kind"`
	Op        string  `json:"op"`
	Got       string  `json:"got"`
	Want      string  `json:"want,omitempty"`
	Count     int     `json:"count"`
	Undecided bool    `json:"undecided,omitempty"`
	Unordered bool    `json:"unordered,omitempty"`
	Limit     int     `json:"limit,omitempty"`
	WindowMs  float64 `json:"window_ms,omitempty"`
}

// timelineJSON is tl in the JSON report (nil for nil).
func timelineJSON(tl *result.Timeline) *jsonTimeline {
	if tl == nil {
		return nil
	}
	out := &jsonTimeline{Limit: tl.Limit, WindowMs: ms(tl.Window), Instances: tl.Instances, UserTag: tl.UserTag,
		Total: tl.Total, ShrunkFrom: tl.ShrunkFrom, Ops: make([]jsonOp, 0, len(tl.Ops))}
	for _, o := range tl.Ops {
		out.Ops = append(out.Ops, jsonOp{Step: o.Step, AtMs: ms(o.At), UntilMs: ms(o.Until), Instance: o.Instance, User: o.User,
			Kind: string(o.Kind), Op: o.Op, Got: o.Got, Want: o.Want, Count: o.Count, Undecided: o.Undecided, Unordered: o.Unordered,
			Limit: o.Limit, WindowMs: ms(o.Window)})
	}
	return out
}
