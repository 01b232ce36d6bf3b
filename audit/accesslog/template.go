package accesslog

import (
	"bytes"
	"fmt"
	"strings"
)

// template is a log format as a gateway's configuration states it:
// literal text and fields, in turn. A line is matched from its start: a
// field's value runs up to the first occurrence of the literal after it
// (a quote escaped by a backslash does not end a value before a quote),
// the last field's, when no literal follows it, to the end of the line.
type template struct {
	// lits[i] is the text before field i; lits[len(fields)] the text
	// after the last.
	lits   []string
	fields []field
	// slot[i] is where field i's value goes in a match, -1 when it is
	// not wanted.
	slot []int
}

// field is one field of a format: its name as written (nginx's
// "request_time", Envoy's "REQ(X-USER)", HAProxy's "Ta" or
// "[capture.req.hdr(0)]"), and whether its values are quoted.
type field struct {
	name   string
	quoted bool
}

// compile makes a template of the literals and fields of a format, with
// the fields wanted in order (their slots in a match). Two fields with no
// literal between them cannot be told apart: an error when either is
// wanted (else they are read as one).
func compile(lits []string, fields []field, wanted []string) (*template, error) {
	t := &template{lits: lits, fields: fields, slot: make([]int, len(fields))}
	for i := range t.slot {
		t.slot[i] = -1
	}
	for k, w := range wanted {
		i := indexField(fields, w)
		if i < 0 {
			return nil, fmt.Errorf("no field %q in the format", w)
		}
		t.slot[i] = k
	}
	for i := 0; i+1 < len(fields); i++ {
		if lits[i+1] == "" && (t.slot[i] >= 0 || t.slot[i+1] >= 0) {
			return nil, fmt.Errorf("the fields %s and %s follow each other with nothing between them: their values cannot be told apart", fields[i].name, fields[i+1].name)
		}
	}
	return t, nil
}

func indexField(fields []field, name string) int {
	for i, f := range fields {
		if f.name == name {
			return i
		}
	}
	return -1
}

// match reads line b into out (one value per wanted field, as slices of
// b); false when b is not of the format.
func (t *template) match(b []byte, out [][]byte) bool {
	if !bytes.HasPrefix(b, []byte(t.lits[0])) {
		return false
	}
	pos := len(t.lits[0])
	for i, f := range t.fields {
		next := t.lits[i+1]
		var v []byte
		switch {
		case next == "" && i == len(t.fields)-1:
			v, pos = b[pos:], len(b)
		case next == "":
			continue // read with the next field (neither is wanted)
		default:
			j := find(b[pos:], next)
			if j < 0 {
				return false
			}
			v, pos = b[pos:pos+j], pos+j+len(next)
		}
		if k := t.slot[i]; k >= 0 {
			if f.quoted && len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
				v = v[1 : len(v)-1]
			}
			out[k] = v
		}
	}
	return pos == len(b)
}

// find is the index of the first occurrence of lit in b; when lit starts
// with a quote, a quote escaped by a backslash is passed over.
func find(b []byte, lit string) int {
	if lit[0] != '"' {
		if len(lit) == 1 {
			return bytes.IndexByte(b, lit[0])
		}
		return bytes.Index(b, []byte(lit))
	}
	from := 0
	for {
		j := bytes.Index(b[from:], []byte(lit))
		if j < 0 {
			return -1
		}
		j += from
		k := j
		for k > 0 && b[k-1] == '\\' {
			k--
		}
		if (j-k)%2 == 0 {
			return j
		}
		from = j + 1
	}
}

// split cuts format into literals and fields, next reading one field at
// format[i:] (at a field's opening character): its name and where it
// ends, or ok false for text that is no field (then kept literal).
func split(format string, open byte, next func(format string, i int) (f field, end int, ok bool)) ([]string, []field) {
	var lits []string
	var fields []field
	var lit strings.Builder
	for i := 0; i < len(format); {
		if format[i] != open {
			lit.WriteByte(format[i])
			i++
			continue
		}
		f, end, ok := next(format, i)
		if !ok {
			lit.WriteByte(format[i])
			i++
			continue
		}
		lits = append(lits, lit.String())
		lit.Reset()
		fields = append(fields, f)
		i = end
	}
	return append(lits, lit.String()), fields
}
