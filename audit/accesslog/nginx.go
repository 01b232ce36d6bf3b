package accesslog

import (
	"fmt"
	"strings"
	"time"
)

// NginxFormat is the log_format docs/audit.md recommends for nginx: the
// end in milliseconds ($msec), the time the request took ($request_time)
// and the user (here $http_x_user, the X-User header).
const NginxFormat = `$remote_addr [$time_local] "$request" $status $body_bytes_sent $msec $request_time "$http_x_user"`

// nginx reads nginx's access log: a log_format of nginx variables. The
// end of a request is $msec (seconds with milliseconds, when the log line
// was written) or, coarser, $time_local or $time_iso8601 (whole seconds);
// $request_time is the time from its first byte read, in ms, on the same
// clock (so the start is the end less it, exactly). A request's interval
// is [end − $request_time, end + 1ms] with $msec, [end − $request_time,
// end + 1s] with whole seconds.
type nginx struct {
	t     *template
	out   [][]byte
	end   string // the variable of the end
	limit int
	dates dateCache
	loc   *time.Location
	req   Request
}

func newNginx(opts Options) (Parser, error) {
	format := opts.LogFormat
	if format == "" {
		return nil, fmt.Errorf("nginx: give the log_format string (--log-format), for example %q", NginxFormat)
	}
	lits, fields := split(format, '$', nginxField)
	u := strings.TrimPrefix(strings.Trim(opts.User, "{}"), "$")
	u = strings.Trim(u, "{}")
	if u == "" {
		return nil, fmt.Errorf("nginx: name the variable of the user (--user $http_x_user, $remote_addr, $cookie_NAME)")
	}
	p := &nginx{limit: opts.LimitedStatus, loc: opts.Location}
	for _, end := range []string{"msec", "time_iso8601", "time_local"} {
		if indexField(fields, end) >= 0 {
			p.end = end
			break
		}
	}
	switch {
	case p.end == "":
		return nil, fmt.Errorf("nginx: the log format has no $msec (nor $time_local, $time_iso8601): add $msec, the end of each request in ms (%q)", NginxFormat)
	case indexField(fields, "request_time") < 0:
		return nil, fmt.Errorf("nginx: the log format has no $request_time: add it, the time each request took (%q)", NginxFormat)
	case indexField(fields, "status") < 0:
		return nil, fmt.Errorf("nginx: the log format has no $status")
	}
	t, err := compile(lits, fields, []string{p.end, "request_time", "status", u})
	if err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}
	p.t, p.out = t, make([][]byte, 4)
	return p, nil
}

// nginxField reads a variable, $name or ${name}.
func nginxField(format string, i int) (field, int, bool) {
	j := i + 1
	if j < len(format) && format[j] == '{' {
		k := strings.IndexByte(format[j:], '}')
		if k < 2 {
			return field{}, 0, false
		}
		return field{name: format[j+1 : j+k]}, j + k + 1, true
	}
	for j < len(format) && (format[j] == '_' || format[j] >= 'a' && format[j] <= 'z' || format[j] >= 'A' && format[j] <= 'Z' || format[j] >= '0' && format[j] <= '9') {
		j++
	}
	if j == i+1 {
		return field{}, 0, false
	}
	return field{name: format[i+1 : j]}, j, true
}

func (p *nginx) Parse(b []byte, n int64, emit func(*Request) error) error {
	if !p.t.match(b, p.out) {
		return skipShape
	}
	var end, res time.Duration
	var ok bool
	switch p.end {
	case "msec":
		end, res, ok = decimal(p.out[0], time.Second)
	case "time_local":
		end, res, ok = p.dates.clf(p.out[0], p.loc)
	default:
		end, res, ok = p.dates.rfc3339(p.out[0], p.loc)
	}
	if !ok {
		return skipTime
	}
	took, _, ok := decimal(p.out[1], time.Second)
	if !ok || took > maxSpan {
		return skipDuration
	}
	st, u, err := statusUser(p.out[2], p.out[3])
	if err != nil {
		return err
	}
	// The end is truncated to its resolution: the log line was written
	// before end + res.
	r := &p.req
	*r = Request{User: u, Start: end - took, End: end + res, Status: st, Outcome: outcome(st, p.limit), Line: n}
	if !span(r.Start, r.End) {
		return skipTime
	}
	return emit(r)
}

func (p *nginx) Close(func(*Request) error) error { return nil }

func (p *nginx) Notes() []string {
	if p.end == "msec" {
		return []string{"nginx: each request from $msec − $request_time to $msec + 1ms ($msec is the end, in ms; $request_time the time it took, in ms, on the same clock)"}
	}
	return []string{fmt.Sprintf("nginx: each request from $%s − $request_time to $%s + 1s: $%s has whole seconds, so every interval is a second wider than the request (log $msec for ms)", p.end, p.end, p.end)}
}
