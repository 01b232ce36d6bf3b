package k6

import (
	"bytes"
	"errors"

	"github.com/rlconform/rlconform/internal/jsonscan"
)

// errSlow sends a line to encoding/json: it holds what the fast scanner
// does not read (an escape in a key or in a field it keeps, a value
// nested deeper than jsonscan.MaxDepth).
var errSlow = errors.New("k6: not for the fast scanner")

// fields are the parts of a point line that matter, as slices of it.
type fields struct {
	typ, metric, time, value, tags, metadata []byte
}

// scanPoint reads a point line's type, metric and data's time, value and
// tags (raw) without decoding the rest: the fields in any order, and tags
// that mention any key (a tag named "time" is inside "tags", never taken
// for data's). It returns errSlow for what it leaves to encoding/json,
// and another error for a line that is not a JSON object.
func scanPoint(b []byte, f *fields) error {
	*f = fields{}
	s := jsonscan.New(b)
	return fast(object(&s, 0, func(key []byte) error {
		switch string(key) {
		case "type":
			return str(&s, &f.typ)
		case "metric":
			return str(&s, &f.metric)
		case "data":
			if s.Peek() != '{' {
				return skip(&s)
			}
			return object(&s, 1, func(key []byte) error { return f.data(&s, key) })
		}
		return skip(&s)
	}))
}

// data reads key of a point's data, the scanner on its value.
func (f *fields) data(s *jsonscan.Scanner, key []byte) error {
	var dst *[]byte
	switch string(key) {
	case "time":
		return str(s, &f.time)
	case "value":
		dst = &f.value
	case "tags":
		dst = &f.tags
	case "metadata":
		dst = &f.metadata
	default:
		return skip(s)
	}
	raw, err := s.Value()
	*dst = raw
	return err
}

// fast is err of the fast scanner, with a line nested deeper than it
// reads left to encoding/json.
func fast(err error) error {
	if errors.Is(err, jsonscan.ErrDeep) {
		return errSlow
	}
	return err
}

// object reads an object at depth d like jsonscan's, a key with an
// escape left to encoding/json (errSlow).
func object(s *jsonscan.Scanner, d int, field func(key []byte) error) error {
	return s.Object(d, func(key []byte) error {
		if bytes.IndexByte(key, '\\') >= 0 {
			return errSlow
		}
		return field(key)
	})
}

// str reads a string without escapes into *out (errSlow if it has one).
func str(s *jsonscan.Scanner, out *[]byte) error {
	v, err := s.Str()
	if err != nil {
		return err
	}
	if bytes.IndexByte(v, '\\') >= 0 {
		return errSlow
	}
	*out = v
	return nil
}

func skip(s *jsonscan.Scanner) error {
	_, err := s.Value()
	return err
}

// tagsOf reads the tags a request is judged by from a flat object of
// strings: the user tag, status, error_code, error and url. It returns
// errSlow when a key or one of those values has an escape.
func tagsOf(raw []byte, userTag string, t *requestTags) error {
	*t = requestTags{}
	if string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	s := jsonscan.New(raw)
	return fast(object(&s, 0, func(key []byte) error {
		var dst *[]byte
		switch string(key) {
		case userTag:
			dst = &t.user
			t.hasUser = true
		case "status":
			dst = &t.status
			t.hasStatus = true
		case "error_code":
			dst = &t.errorCode
		case "error":
			dst = &t.error
		case "url":
			dst = &t.url
		default:
			return skip(&s)
		}
		if s.Peek() != '"' {
			return errSlow // not a string: encoding/json says what
		}
		return str(&s, dst)
	}))
}

// requestTags are the tags a request is judged by, as slices of its line.
type requestTags struct {
	user, status, errorCode, error, url []byte
	hasUser, hasStatus                  bool
}
