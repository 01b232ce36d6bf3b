package accesslog

import (
	"fmt"
	"strings"
	"time"
)

// caddy reads Caddy's JSON access log (the json encoder's, which its
// logging documentation shows): "ts" is when the entry was written, once
// the request was handled, "duration" how long it took (seconds, by
// default), "status" its status, and "request" the request with its
// "headers" (each a list of values). A request's interval is [ts −
// duration, ts], each widened by its resolution (a microsecond at least:
// a float of Unix seconds holds no finer). Options.LogFormat states the
// encoder's options that change the fields read, as the Caddyfile does:
// "time_key=ts time_format=... duration_format=seconds|nano|string".
type caddy struct {
	j          *jsonPaths
	durationIn string
	limit      int
	dates      dateCache
	req        Request
}

// The skip of a line of Caddy's other loggers.
const skipNotAccess Skip = "not an access log entry (another logger's)"

func newCaddy(opts Options) (Parser, error) {
	p := &caddy{limit: opts.LimitedStatus, durationIn: "seconds"}
	timeKey := "ts"
	for _, kv := range strings.FieldsFunc(opts.LogFormat, func(r rune) bool { return r == ' ' || r == ',' }) {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "time_key":
			timeKey = v
		case "time_format":
			// Any format that writes Unix time or RFC 3339 is read by its
			// shape.
		case "duration_format":
			if v != "seconds" && v != "nano" && v != "string" && v != "ns" {
				return nil, fmt.Errorf("caddy: duration_format %q: want seconds, nano or string", v)
			}
			p.durationIn = v
		default:
			return nil, fmt.Errorf("caddy: --log-format %q: want time_key=, time_format= or duration_format=", kv)
		}
	}
	if opts.User == "" {
		return nil, fmt.Errorf("caddy: name the field of the user (--user request.headers.X-User, request.client_ip, user_id)")
	}
	userPath := strings.Split(opts.User, ".")
	fold := len(userPath) == 3 && userPath[0] == "request" && userPath[1] == "headers"
	p.j = newJSONPaths([][]string{{timeKey}, {"duration"}, {"status"}, userPath, {"logger"}}, []bool{false, false, false, fold, false})
	return p, nil
}

func (p *caddy) Parse(b []byte, n int64, emit func(*Request) error) error {
	if p.j.scan(b) != nil {
		return skipShape
	}
	out := p.j.out
	if l := out[4]; l != nil && !strings.HasPrefix(string(l), "http.log.access") {
		return skipNotAccess
	}
	end, res, ok := p.dates.rfc3339(out[0], nil)
	if !ok {
		end, res, ok = unixAuto(out[0])
	}
	if !ok {
		return skipTime
	}
	res = max(res, time.Microsecond)
	took, tookRes, ok := p.duration(out[1])
	if !ok || took > maxSpan {
		return skipDuration
	}
	st, u, err := statusUser(out[2], out[3])
	if err != nil {
		return err
	}
	r := &p.req
	*r = Request{User: u, Start: end - took - tookRes - res, End: end + res, Status: st, Outcome: outcome(st, p.limit), Line: n}
	if !span(r.Start, r.End) {
		return skipTime
	}
	return emit(r)
}

// duration reads a duration as the encoder's duration_format writes it.
func (p *caddy) duration(v []byte) (d, res time.Duration, ok bool) {
	switch p.durationIn {
	case "nano", "ns":
		return decimal(v, time.Nanosecond)
	case "string":
		d, err := time.ParseDuration(string(v))
		return d, time.Microsecond, err == nil && d >= 0
	}
	return decimal(v, time.Second)
}

func (p *caddy) Close(func(*Request) error) error { return nil }

func (p *caddy) Notes() []string {
	return []string{"caddy: each request from ts − duration to ts (ts is written once the request was handled), widened by the resolution of each (1µs at least)"}
}
