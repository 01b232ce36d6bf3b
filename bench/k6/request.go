package k6

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/rlconform/rlconform/bench"
)

// request turns a gathered request (with its duration and blocked
// points) into a decision, when it names its user.
func (r *Reader) request(q *pending) error {
	r.stats.Requests++
	var t requestTags
	if err := r.tags(q.tags, &t); err != nil {
		return err
	}
	if !t.hasUser || len(t.user) == 0 {
		var m requestTags
		if err := r.tags(q.meta, &m); err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
		if !m.hasUser || len(m.user) == 0 {
			r.stats.Untagged++
			return nil
		}
		t.user, t.hasUser = m.user, true
		r.stats.FromMetadata++
	}
	if !t.hasStatus {
		return errors.New("a request without the status tag: k6 was run with --system-tags that leave it out (keep status and error_code)")
	}
	status, err := strconv.Atoi(string(t.status))
	if err != nil {
		return fmt.Errorf("status tag %q: %w", t.status, err)
	}
	req := Request{User: t.user, Status: status, Returned: time.Duration(q.end), Line: q.line}
	req.Sent = req.Returned - millis(max(0, q.duration)+max(0, q.blocked))
	switch {
	case q.negative:
		req.Widened = "a negative phase"
		r.stats.NegativePhase++
	case q.has&(hasSending|hasWaiting) == hasSending|hasWaiting && q.sending == 0 && q.waiting == 0:
		req.Widened = "a failed write"
		r.stats.FailedWrite++
	}
	if req.Widened != "" {
		req.Sent = min(req.Sent, req.Returned-r.opts.Timeout)
	}
	switch {
	case status >= 200 && status < 300:
		req.Outcome = bench.Allowed
	case status == r.opts.LimitedStatus:
		req.Outcome = bench.Denied
	default:
		req.Outcome = bench.Errored
	}
	r.stats.Decisions++
	if r.opts.OnRequest != nil {
		return r.opts.OnRequest(req)
	}
	return r.keep(req, &t, millis(max(0, q.duration)))
}

// tags reads the tags a request is judged by from raw (tags or metadata:
// flat objects of strings), with the fast scanner or encoding/json.
func (r *Reader) tags(raw []byte, t *requestTags) error {
	*t = requestTags{}
	if len(raw) == 0 {
		return nil
	}
	err := tagsOf(raw, r.opts.UserTag, t)
	if err == nil {
		return nil
	}
	if !errors.Is(err, errSlow) {
		return fmt.Errorf("tags %.200s: %w", raw, err)
	}
	// Escapes, or values not strings: encoding/json reads them.
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("tags %.200s: %w", raw, err)
	}
	*t = requestTags{}
	for k, dst := range map[string]*[]byte{r.opts.UserTag: &t.user, "status": &t.status, "error_code": &t.errorCode, "error": &t.error, "url": &t.url} {
		if v, ok := m[k]; ok && v != nil {
			*dst = fmt.Append(nil, v)
			t.hasUser = t.hasUser || k == r.opts.UserTag
			t.hasStatus = t.hasStatus || k == "status"
		}
	}
	return nil
}

// keep adds req to the recording.
func (r *Reader) keep(req Request, t *requestTags, latency time.Duration) error {
	u, ok := r.users[string(req.User)]
	if !ok && len(r.rec.UserIDs) == math.MaxInt32 {
		return fmt.Errorf("more than %d users", math.MaxInt32)
	}
	if !ok {
		user := string(req.User)
		u = int32(len(r.rec.UserIDs))
		r.users[user] = u
		r.rec.UserIDs = append(r.rec.UserIDs, user)
	}
	if req.Outcome == bench.Errored {
		kind, example := errorKind(req.Status, t)
		r.rec.Errors[kind]++
		if _, seen := r.rec.ErrorExamples[kind]; !seen {
			r.rec.ErrorExamples[kind] = example
		}
	}
	r.rec.Decisions = append(r.rec.Decisions, bench.Decision{User: u, Outcome: req.Outcome, Sent: req.Sent, Returned: req.Returned})
	r.rec.Latency = append(r.rec.Latency, latency)
	return nil
}

// errorKind names the kind of a failed request as bench does (timeout,
// connection, status, other), from k6's status and error_code tags (k6's
// error codes: 1050 a request timeout, 1100–1199 DNS, 1200–1299 TCP,
// 1300–1399 TLS).
func errorKind(status int, t *requestTags) (string, string) {
	if status != 0 {
		return "status", fmt.Sprintf("HTTP %d from %s", status, t.url)
	}
	msg := string(t.error)
	if msg == "" {
		msg = "no answer"
	}
	if len(t.errorCode) > 0 {
		msg += " (error_code " + string(t.errorCode) + ")"
	}
	code, _ := strconv.Atoi(string(t.errorCode))
	switch {
	case code == 1050:
		return "timeout", msg
	case code >= 1100 && code < 1400:
		return "connection", msg
	}
	return "other", msg
}
