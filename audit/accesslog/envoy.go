package accesslog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rlconform/rlconform/bench"
)

// EnvoyFormat is Envoy's default access log format (its documentation's
// "Default Format String"): %START_TIME%, %RESPONSE_CODE%,
// %RESPONSE_FLAGS% and %DURATION% are all an audit needs, with the user's
// header (%REQ(X-FORWARDED-FOR)% here, or a header of your own).
const EnvoyFormat = `[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" %RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%" "%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%"`

// envoy reads Envoy's access log, text (a format string of command
// operators) or JSON (a json_format dictionary, given as JSON).
// %START_TIME% is when the request began (ms by default; any
// strftime-like format that prints RFC 3339 or Unix seconds), %DURATION%
// the ms from then to its last byte out, both truncated: a request's
// interval is [start, start + duration + the resolution of each]. A 429
// is the limiter's refusal only with the RL response flag (Envoy's rate
// limit filters); a 429 without it is the service's answer, which the
// limiter let through.
type envoy struct {
	t     *template  // text
	j     *jsonPaths // JSON
	out   [][]byte
	flags bool
	limit int
	dates dateCache
	req   Request
}

// The operators an audit reads, in the order of a match's values.
var envoyOperators = []string{"START_TIME", "DURATION", "RESPONSE_CODE", "RESPONSE_FLAGS"}

func newEnvoy(opts Options) (Parser, error) {
	format := opts.LogFormat
	if format == "" {
		format = EnvoyFormat
	}
	u, err := envoyUser(opts.User)
	if err != nil {
		return nil, err
	}
	p := &envoy{limit: opts.LimitedStatus, out: make([][]byte, 5)}
	if strings.HasPrefix(strings.TrimSpace(format), "{") {
		return p, p.compileJSON(format, u)
	}
	lits, fields := split(strings.TrimSuffix(strings.TrimSuffix(format, "\n"), `\n`), '%', envoyField)
	for i := range fields {
		fields[i].name = canonicalOperator(fields[i].name)
	}
	wanted := []string{"START_TIME", "DURATION", "RESPONSE_CODE", u}
	if p.flags = indexField(fields, "RESPONSE_FLAGS") >= 0; p.flags {
		wanted = append(wanted, "RESPONSE_FLAGS")
	}
	p.t, err = compile(lits, fields, wanted)
	if err != nil {
		return nil, fmt.Errorf("envoy: %w (the format needs %%START_TIME%%, %%DURATION%%, %%RESPONSE_CODE%% and %s)", err, u)
	}
	return p, nil
}

// envoyUser is the operator --user names: %OPERATOR% as written, or a
// request header's name (X-User: %REQ(X-USER)%).
func envoyUser(u string) (string, error) {
	switch {
	case u == "":
		return "", fmt.Errorf("envoy: name the user's operator (--user %%REQ(X-USER)%%, or a header's name: X-User)")
	case strings.HasPrefix(u, "%") && strings.HasSuffix(u, "%") && len(u) > 2:
		return canonicalOperator(u[1 : len(u)-1]), nil
	}
	return canonicalOperator("REQ(" + u + ")"), nil
}

// canonicalOperator is an operator's name with its argument's header
// name upper-cased (Envoy reads header names without case) and its
// length limit and START_TIME's format left out.
func canonicalOperator(op string) string {
	name, arg, hasArg := strings.Cut(op, "(")
	if !hasArg {
		return name
	}
	arg, _, _ = strings.Cut(arg, ")")
	if name == "START_TIME" {
		return name
	}
	return name + "(" + strings.ToUpper(arg) + ")"
}

// envoyField reads a command operator, %NAME% or %NAME(arg)%[:len].
func envoyField(format string, i int) (field, int, bool) {
	j := i + 1
	for j < len(format) && (format[j] == '_' || format[j] >= 'A' && format[j] <= 'Z' || format[j] >= '0' && format[j] <= '9') {
		j++
	}
	if j == i+1 {
		return field{}, 0, false
	}
	if j < len(format) && format[j] == '(' {
		k := strings.Index(format[j:], ")")
		if k < 0 {
			return field{}, 0, false
		}
		j += k + 1
		if j < len(format) && format[j] == ':' {
			for j++; j < len(format) && format[j] >= '0' && format[j] <= '9'; j++ {
			}
		}
	}
	if j >= len(format) || format[j] != '%' {
		return field{}, 0, false
	}
	return field{name: format[i+1 : j]}, j + 1, true
}

// compileJSON reads a json_format dictionary: each key whose value is one
// of the operators wanted.
func (p *envoy) compileJSON(format, u string) error {
	var dict map[string]any
	if err := json.Unmarshal([]byte(format), &dict); err != nil {
		return fmt.Errorf("envoy: the json_format dictionary: %w", err)
	}
	keys := map[string][]string{}
	var walk func(prefix []string, m map[string]any)
	walk = func(prefix []string, m map[string]any) {
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			path := append(prefix[:len(prefix):len(prefix)], k)
			switch v := m[k].(type) {
			case string:
				if op := strings.TrimSpace(v); len(op) > 2 && op[0] == '%' && op[len(op)-1] == '%' {
					keys[canonicalOperator(op[1:len(op)-1])] = path
				}
			case map[string]any:
				walk(path, v)
			}
		}
	}
	walk(nil, dict)
	wanted := append(envoyOperators[:3:3], u)
	var paths [][]string
	for _, op := range wanted {
		if keys[op] == nil {
			return fmt.Errorf("envoy: the json_format dictionary has no key for %%%s%% (it needs %%START_TIME%%, %%DURATION%%, %%RESPONSE_CODE%% and the user's)", op)
		}
		paths = append(paths, keys[op])
	}
	if keys["RESPONSE_FLAGS"] != nil {
		p.flags = true
		paths = append(paths, keys["RESPONSE_FLAGS"])
	}
	p.j = newJSONPaths(paths, make([]bool, len(paths)))
	return nil
}

func (p *envoy) Parse(b []byte, n int64, emit func(*Request) error) error {
	if p.j != nil {
		if p.j.scan(b) != nil {
			return skipShape
		}
		copy(p.out, p.j.out)
	} else if !p.t.match(b, p.out) {
		return skipShape
	}
	start, res, ok := p.dates.rfc3339(p.out[0], nil)
	if !ok {
		start, res, ok = unixAuto(p.out[0])
	}
	if !ok {
		return skipTime
	}
	took, _, ok := decimal(p.out[1], time.Millisecond)
	if !ok || took > maxSpan {
		return skipDuration
	}
	st, u, err := statusUser(p.out[2], p.out[3])
	if err != nil {
		return err
	}
	o := outcome(st, p.limit)
	if o == bench.Denied && p.flags && !rateLimited(p.out[4]) {
		o = outcome(st, 0) // the service's 429, let through
	}
	r := &p.req
	*r = Request{User: u, Start: start, End: start + res + took + time.Millisecond, Status: st, Outcome: o, Line: n}
	if !span(r.Start, r.End) {
		return skipTime
	}
	return emit(r)
}

// rateLimited reports whether Envoy's response flags hold RL (comma
// separated, as Envoy writes several).
func rateLimited(flags []byte) bool {
	for len(flags) > 0 {
		f := flags
		if i := bytes.IndexByte(flags, ','); i >= 0 {
			f, flags = flags[:i], flags[i+1:]
		} else {
			flags = nil
		}
		if string(bytes.TrimSpace(f)) == "RL" {
			return true
		}
	}
	return false
}

func (p *envoy) Close(func(*Request) error) error { return nil }

func (p *envoy) Notes() []string {
	notes := []string{"envoy: each request from %START_TIME% to %START_TIME% + %DURATION% + 1ms + the resolution of %START_TIME% (1ms by default; both are truncated)"}
	if p.flags {
		notes = append(notes, "envoy: a refusal is the limited status with the RL response flag; without it, the service's answer")
	} else {
		notes = append(notes, "envoy: the format has no %RESPONSE_FLAGS%: every limited status is taken for the limiter's refusal")
	}
	return notes
}
