package k6

import (
	"bytes"
	"errors"
)

// errSlow sends a line to encoding/json: it holds what the fast scanner
// does not read (an escape in a key or in a field it keeps).
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
	s := scanner{b: b}
	return s.object(func(key []byte) error {
		switch string(key) {
		case "type":
			return s.str(&f.typ)
		case "metric":
			return s.str(&f.metric)
		case "data":
			s.space()
			if s.peek() != '{' {
				return s.skip()
			}
			return s.object(func(key []byte) error {
				switch string(key) {
				case "time":
					return s.str(&f.time)
				case "value":
					from := s.space()
					if err := s.skip(); err != nil {
						return err
					}
					f.value = s.b[from:s.i]
					return nil
				case "tags", "metadata":
					from := s.space()
					if err := s.skip(); err != nil {
						return err
					}
					if string(key) == "tags" {
						f.tags = s.b[from:s.i]
					} else {
						f.metadata = s.b[from:s.i]
					}
					return nil
				}
				return s.skip()
			})
		}
		return s.skip()
	})
}

// scanner walks one JSON text.
type scanner struct {
	b []byte
	i int
}

var errSyntax = errors.New("not a JSON object")

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// space skips white space and returns where the next token starts.
func (s *scanner) space() int {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
	return s.i
}

// object reads an object, calling field after each key with the scanner
// on its value, which field must consume.
func (s *scanner) object(field func(key []byte) error) error {
	s.space()
	if s.peek() != '{' {
		return errSyntax
	}
	s.i++
	s.space()
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		var key []byte
		if err := s.str(&key); err != nil {
			return err
		}
		s.space()
		if s.peek() != ':' {
			return errSyntax
		}
		s.i++
		if err := field(key); err != nil {
			return err
		}
		s.space()
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return errSyntax
		}
	}
}

// str reads a string without escapes into *out (errSlow if it has one).
func (s *scanner) str(out *[]byte) error {
	s.space()
	if s.peek() != '"' {
		return errSyntax
	}
	end := bytes.IndexAny(s.b[s.i+1:], `"\`)
	if end < 0 {
		return errSyntax
	}
	if s.b[s.i+1+end] == '\\' {
		return errSlow
	}
	*out = s.b[s.i+1 : s.i+1+end]
	s.i += end + 2
	return nil
}

// skip passes over one value of any kind.
func (s *scanner) skip() error {
	s.space()
	switch c := s.peek(); c {
	case '"':
		for j := s.i + 1; j < len(s.b); j++ {
			switch s.b[j] {
			case '\\':
				j++
			case '"':
				s.i = j + 1
				return nil
			}
		}
		return errSyntax
	case '{', '[':
		depth := 0
		for j := s.i; j < len(s.b); j++ {
			switch s.b[j] {
			case '"':
				s.i = j
				if err := s.skip(); err != nil {
					return err
				}
				j = s.i - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i = j + 1
					return nil
				}
			}
		}
		return errSyntax
	case 0:
		return errSyntax
	default:
		// A number or a literal: up to the next delimiter.
		j := s.i
		for j < len(s.b) && !bytes.ContainsRune([]byte(",}] \t\r\n"), rune(s.b[j])) {
			j++
		}
		if j == s.i {
			return errSyntax
		}
		s.i = j
		return nil
	}
}

// tagsOf reads the tags a request is judged by from a flat object of
// strings: the user tag, status, error_code, error and url. It returns
// errSlow when a key or one of those values has an escape.
func tagsOf(raw []byte, userTag string, t *requestTags) error {
	*t = requestTags{}
	if string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	s := scanner{b: raw}
	return s.object(func(key []byte) error {
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
			return s.skip()
		}
		s.space()
		if s.peek() != '"' {
			return errSlow // not a string: encoding/json says what
		}
		return s.str(dst)
	})
}

// requestTags are the tags a request is judged by, as slices of its line.
type requestTags struct {
	user, status, errorCode, error, url []byte
	hasUser, hasStatus                  bool
}
