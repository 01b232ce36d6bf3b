package accesslog

import (
	"errors"
	"fmt"

	"github.com/rlconform/rlconform/bench/k6"
)

// k6Log reads k6's JSON output (k6 run --out json=FILE) as rlconform
// bench --from-k6 does (package bench/k6): a request's points gathered,
// its interval from its end less its duration and the time it was
// blocked, widened to the timeout where k6's phases fall short.
type k6Log struct {
	r     *k6.Reader
	emit  func(*Request) error
	limit int
	req   Request
}

// The skip of a line k6's reader does not take.
const skipK6 Skip = "not a point of k6's JSON output, or out of its bounds"

func newK6(opts Options) (Parser, error) {
	p := &k6Log{limit: opts.LimitedStatus}
	p.r = k6.NewReader(k6.Options{UserTag: opts.User, LimitedStatus: opts.LimitedStatus, Timeout: opts.Timeout, OnRequest: p.request})
	p.r.Begin("")
	return p, nil
}

func (p *k6Log) request(q k6.Request) error {
	if len(q.User) > maxUser {
		return nil
	}
	p.req = Request{User: q.User, Start: q.Sent, End: q.Returned, Status: q.Status, Outcome: outcome(q.Status, p.limit), Line: q.Line}
	return p.emit(&p.req)
}

// errEmit marks an error of emit's, handed back as it is.
type errEmit struct{ err error }

func (e errEmit) Error() string { return e.err.Error() }

func (p *k6Log) wrap(emit func(*Request) error) {
	p.emit = func(r *Request) error {
		if err := emit(r); err != nil {
			return errEmit{err}
		}
		return nil
	}
}

func (p *k6Log) Parse(b []byte, n int64, emit func(*Request) error) error {
	p.wrap(emit)
	err := p.r.Feed(b, n)
	var e errEmit
	switch {
	case err == nil:
		return nil
	case errors.As(err, &e):
		return e.err
	}
	return skipK6
}

func (p *k6Log) Close(emit func(*Request) error) error {
	p.wrap(emit)
	err := p.r.End()
	var e errEmit
	if errors.As(err, &e) {
		return e.err
	}
	if err != nil {
		return skipK6
	}
	return nil
}

func (p *k6Log) Notes() []string {
	st := p.r.Stats()
	notes := []string{"k6: each request from its end less http_req_duration and http_req_blocked (which holds connecting and TLS) to its end"}
	if st.NegativePhase+st.FailedWrite > 0 {
		notes = append(notes, fmt.Sprintf("k6: %d requests with a negative phase (a clock step) and %d answered while k6 wrote them are widened to the request timeout", st.NegativePhase, st.FailedWrite))
	}
	if st.FromMetadata > 0 {
		notes = append(notes, fmt.Sprintf("k6: %d requests name their user in their metadata, not a tag: read from there", st.FromMetadata))
	}
	if st.Untagged+st.Incomplete > 0 {
		notes = append(notes, fmt.Sprintf("k6: %d requests without the user tag and %d without their duration or blocked point are not judged", st.Untagged, st.Incomplete))
	}
	return notes
}
