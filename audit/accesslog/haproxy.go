package accesslog

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// HAProxyFormat is the log-format docs/audit.md recommends for HAProxy:
// HTTP's (option httplog) with the captured request headers (%hr) after
// the status, where `http-request capture req.hdr(X-User) len 64` puts
// the user.
const HAProxyFormat = `%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %tsc %hr %{+Q}r`

// haproxy reads HAProxy's log: a log-format of HAProxy variables, each
// line with or without a syslog header before it. %tr is when the HTTP
// request began (its first byte, with ms), %Ta the ms from then to its
// last byte out (%t and %Tt, from the connection's accept, do as well):
// a request's interval is [%tr, %tr + %Ta + 2ms], both truncated. %tr has
// no zone: it is read in Options.Location (%trg and %trl have one, and
// whole seconds).
type haproxy struct {
	t       *template
	out     [][]byte
	start   string
	capture int // the capture of %hr that is the user, or -1
	limit   int
	loc     *time.Location
	dates   dateCache
	req     Request
}

func newHAProxy(opts Options) (Parser, error) {
	format := opts.LogFormat
	if format == "" {
		format = HAProxyFormat
	}
	lits, fields := split(strings.ReplaceAll(format, "%%", "\x00"), '%', haproxyField)
	for i := range lits {
		lits[i] = strings.ReplaceAll(lits[i], "\x00", "%")
	}
	p := &haproxy{limit: opts.LimitedStatus, loc: opts.Location, capture: -1}
	took := ""
	for _, pair := range [][2]string{{"tr", "Ta"}, {"trg", "Ta"}, {"trl", "Ta"}, {"t", "Tt"}} {
		if indexField(fields, pair[0]) >= 0 && indexField(fields, pair[1]) >= 0 {
			p.start, took = pair[0], pair[1]
			break
		}
	}
	if p.start == "" {
		return nil, fmt.Errorf("haproxy: the log-format has neither %%tr and %%Ta nor %%t and %%Tt: add them (%q)", HAProxyFormat)
	}
	u, err := p.user(opts.User, fields)
	if err != nil {
		return nil, err
	}
	t, err := compile(lits, fields, []string{p.start, took, "ST", u})
	if err != nil {
		return nil, fmt.Errorf("haproxy: %w", err)
	}
	p.t, p.out = t, make([][]byte, 4)
	return p, nil
}

// user is the variable that holds the user: --user as written (%ci,
// %[req.hdr(x-user)]), or capture.req.hdr(N): that sample fetch, or the
// Nth header captured in %hr.
func (p *haproxy) user(u string, fields []field) (string, error) {
	u = strings.TrimPrefix(u, "%")
	if u == "" {
		return "", fmt.Errorf("haproxy: name the user's variable (--user capture.req.hdr(0) for the first header captured, %%ci, %%[req.hdr(x-user)])")
	}
	if indexField(fields, u) >= 0 || indexField(fields, "["+u+"]") >= 0 {
		if indexField(fields, u) < 0 {
			u = "[" + u + "]"
		}
		return u, nil
	}
	if n, ok := strings.CutPrefix(u, "capture.req.hdr("); ok {
		k, err := strconv.Atoi(strings.TrimSuffix(n, ")"))
		if err == nil && k >= 0 && k < 64 && indexField(fields, "hr") >= 0 {
			p.capture = k
			return "hr", nil
		}
	}
	return "", fmt.Errorf("haproxy: the log-format has no %%%s (nor %%hr for a captured header)", u)
}

// haproxyField reads a variable: %[flags] then a name of letters, or a
// sample fetch in brackets.
func haproxyField(format string, i int) (field, int, bool) {
	j := i + 1
	var f field
	if j < len(format) && format[j] == '{' {
		k := strings.IndexByte(format[j:], '}')
		if k < 0 {
			return field{}, 0, false
		}
		f.quoted = strings.Contains(format[j:j+k], "Q")
		j += k + 1
	}
	if j < len(format) && format[j] == '[' {
		depth := 0
		for k := j; k < len(format); k++ {
			switch format[k] {
			case '[':
				depth++
			case ']':
				depth--
				if depth == 0 {
					f.name = format[j : k+1]
					return f, k + 1, true
				}
			}
		}
		return field{}, 0, false
	}
	k := j
	for k < len(format) && (format[k] >= 'a' && format[k] <= 'z' || format[k] >= 'A' && format[k] <= 'Z') {
		k++
	}
	if k == j {
		return field{}, 0, false
	}
	f.name = format[j:k]
	return f, k, true
}

func (p *haproxy) Parse(b []byte, n int64, emit func(*Request) error) error {
	if !p.t.match(b, p.out) {
		// A syslog header before the log-format's text.
		i := bytes.Index(b, []byte("]: "))
		if i < 0 || !p.t.match(b[i+3:], p.out) {
			return skipShape
		}
	}
	start, res, ok := p.dates.clf(p.out[0], p.loc)
	if !ok {
		return skipTime
	}
	took, _, ok := decimal(bytes.TrimPrefix(p.out[1], []byte{'+'}), time.Millisecond)
	if !ok || took > maxSpan {
		return skipDuration
	}
	st := 0
	if s := p.out[2]; len(s) > 0 && s[0] != '-' {
		var err error
		if st, err = status(s); err != nil {
			return err
		}
	}
	v := p.out[3]
	if p.capture >= 0 {
		v = nthCapture(v, p.capture)
	}
	u, err := user(v)
	if err != nil {
		return err
	}
	r := &p.req
	*r = Request{User: u, Start: start, End: start + res + took + time.Millisecond, Status: st, Outcome: outcome(st, p.limit), Line: n}
	if !span(r.Start, r.End) {
		return skipTime
	}
	return emit(r)
}

// nthCapture is the kth header of %hr's "{a|b|c}".
func nthCapture(v []byte, k int) []byte {
	v = bytes.TrimSuffix(bytes.TrimPrefix(v, []byte{'{'}), []byte{'}'})
	for i := 0; i < k; i++ {
		j := bytes.IndexByte(v, '|')
		if j < 0 {
			return nil
		}
		v = v[j+1:]
	}
	if j := bytes.IndexByte(v, '|'); j >= 0 {
		v = v[:j]
	}
	return v
}

func (p *haproxy) Close(func(*Request) error) error { return nil }

func (p *haproxy) Notes() []string {
	notes := []string{"haproxy: each request from %tr to %tr + %Ta + 2ms (%tr is when its first byte came, %Ta the time to its last byte out, both in ms, truncated)"}
	switch p.start {
	case "t":
		notes[0] = "haproxy: each request from %t to %t + %Tt + 2ms (the connection's accept, and the time from it to the end)"
	case "trg", "trl":
		notes = append(notes, fmt.Sprintf("haproxy: %%%s has whole seconds: every interval is a second wider than the request (log %%tr for ms)", p.start))
	}
	if p.start == "tr" || p.start == "t" {
		notes = append(notes, fmt.Sprintf("haproxy: %%%s has no zone: read as %s", p.start, p.loc))
	}
	return notes
}
