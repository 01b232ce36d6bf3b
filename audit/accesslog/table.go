package accesslog

import (
	"bytes"
	"fmt"
	"strings"
	"time"
)

// table reads logs of named columns, for any gateway the other formats do
// not read: JSON lines (an object a line) or CSV (a header line, then a
// row a line), with the columns start, end, user (or Options.User) and
// status. An instant is Unix time (its unit told by its size: seconds,
// ms, µs or ns) or RFC 3339; each is widened by the unit of its last
// digit, either way (it may have been rounded): a request's interval is
// [start − its resolution, end + its resolution].
type table struct {
	name  string
	j     *jsonPaths // JSON lines
	cols  []int      // CSV: the column of start, end, user, status; nil before the header
	names []string
	limit int
	dates dateCache
	row   [][]byte
	vals  [][]byte
	buf   []byte
	req   Request
}

func newJSONLines(opts Options) (Parser, error) {
	p := newTable("jsonl", opts)
	paths := make([][]string, len(p.names))
	for i, n := range p.names {
		paths[i] = []string{n}
	}
	p.j = newJSONPaths(paths, make([]bool, len(paths)))
	return p, nil
}

func newCSV(opts Options) (Parser, error) { return newTable("csv", opts), nil }

func newTable(name string, opts Options) *table {
	u := opts.User
	if u == "" {
		u = "user"
	}
	return &table{name: name, names: []string{"start", "end", u, "status"}, limit: opts.LimitedStatus}
}

func (p *table) Parse(b []byte, n int64, emit func(*Request) error) error {
	var v [][]byte
	switch {
	case p.j != nil:
		if p.j.scan(b) != nil {
			return skipShape
		}
		v = p.j.out
	case p.cols == nil:
		return p.header(b)
	default:
		if !p.split(b) {
			return skipShape
		}
		p.vals = p.vals[:0]
		for _, c := range p.cols {
			if c >= len(p.row) {
				return skipShape
			}
			p.vals = append(p.vals, p.row[c])
		}
		v = p.vals
	}
	start, startRes, ok1 := p.instant(v[0])
	end, endRes, ok2 := p.instant(v[1])
	if !ok1 || !ok2 {
		return skipTime
	}
	st, u, err := statusUser(bytes.Trim(v[3], `"`), v[2])
	if err != nil {
		return err
	}
	r := &p.req
	*r = Request{User: u, Start: start - startRes, End: end + endRes, Status: st, Outcome: outcome(st, p.limit), Line: n}
	if !span(r.Start, r.End) {
		return skipTime
	}
	return emit(r)
}

// instant reads a Unix time or an RFC 3339 instant.
func (p *table) instant(v []byte) (time.Duration, time.Duration, bool) {
	if at, res, ok := unixAuto(v); ok {
		return at, res, true
	}
	return p.dates.rfc3339(v, nil)
}

// header reads the CSV header: the columns' names.
func (p *table) header(b []byte) error {
	if !p.split(b) {
		return fmt.Errorf("csv: the header %.200q is not CSV", b)
	}
	cols := make([]int, len(p.names))
	for i, name := range p.names {
		cols[i] = -1
		for c, v := range p.row {
			if strings.EqualFold(strings.TrimSpace(string(v)), name) {
				cols[i] = c
			}
		}
		if cols[i] < 0 {
			return fmt.Errorf("csv: the header %.200q has no column %q (it needs %s)", b, name, strings.Join(p.names, ", "))
		}
	}
	p.cols = cols
	return nil
}

// split cuts a CSV row into p.row (quoted fields unquoted, "" read as ").
func (p *table) split(b []byte) bool {
	p.row, p.buf = p.row[:0], p.buf[:0]
	for i := 0; ; {
		if i < len(b) && b[i] == '"' {
			from := len(p.buf)
			j := i + 1
			for ; j < len(b); j++ {
				if b[j] == '"' {
					if j+1 < len(b) && b[j+1] == '"' {
						p.buf = append(p.buf, '"')
						j++
						continue
					}
					break
				}
				p.buf = append(p.buf, b[j])
			}
			if j >= len(b) {
				return false
			}
			p.row = append(p.row, p.buf[from:len(p.buf):len(p.buf)])
			i = j + 1
		} else {
			j := bytes.IndexByte(b[i:], ',')
			if j < 0 {
				j = len(b) - i
			}
			p.row = append(p.row, b[i:i+j])
			i += j
		}
		if i >= len(b) {
			return true
		}
		if b[i] != ',' {
			return false
		}
		i++
	}
}

func (p *table) Close(func(*Request) error) error { return nil }

func (p *table) Notes() []string {
	return []string{fmt.Sprintf("%s: each request from start to end, each widened by the unit of its last digit (it may have been rounded)", p.name)}
}
