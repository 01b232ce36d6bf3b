// Package jsonscan walks one JSON text in place, without decoding it: the
// primitives of the hand-written scanners that read access-log lines
// (audit/accesslog) and k6's output (bench/k6) a field at a time.
//
// It is hand-written, not encoding/json, because those lines are many and
// untrusted: a Scanner allocates nothing (what it reads are slices of the
// text, escapes left as they are), reads only the fields its caller asks
// for, and nests at most MaxDepth deep, so a hostile line costs bounded
// stack and time. It checks the structure (braces, brackets, commas,
// colons, string ends), not what a number or a literal spells: the
// callers parse the few values they keep.
package jsonscan

import "errors"

// MaxDepth bounds the nesting of objects and arrays a Scanner reads.
const MaxDepth = 64

var (
	// ErrSyntax is a text that is not the JSON the scanner expects there.
	ErrSyntax = errors.New("not a JSON object")
	// ErrDeep is a text nested more than MaxDepth deep.
	ErrDeep = errors.New("JSON nested too deep")
)

// Scanner walks one JSON text.
type Scanner struct {
	b []byte
	i int
}

// New is a Scanner at the start of b.
func New(b []byte) Scanner { return Scanner{b: b} }

// Peek skips white space and returns the next byte, 0 at the end.
func (s *Scanner) Peek() byte {
	s.space()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *Scanner) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// Object reads an object at depth d (0 for the top), calling field after
// each key (its raw text between the quotes) with the scanner on its
// value, which field must consume. It returns the first error field
// returns.
func (s *Scanner) Object(d int, field func(key []byte) error) error {
	if s.Peek() != '{' {
		return ErrSyntax
	}
	if d > MaxDepth {
		return ErrDeep
	}
	s.i++
	if s.Peek() == '}' {
		s.i++
		return nil
	}
	for {
		key, err := s.Str()
		if err != nil {
			return err
		}
		if s.Peek() != ':' {
			return ErrSyntax
		}
		s.i++
		if err := field(key); err != nil {
			return err
		}
		switch s.Peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return ErrSyntax
		}
	}
}

// Str reads a string and returns its raw text between the quotes, its
// escapes not decoded.
func (s *Scanner) Str() ([]byte, error) {
	if s.Peek() != '"' {
		return nil, ErrSyntax
	}
	for j := s.i + 1; j < len(s.b); j++ {
		switch s.b[j] {
		case '\\':
			j++
		case '"':
			v := s.b[s.i+1 : j]
			s.i = j + 1
			return v, nil
		}
	}
	return nil, ErrSyntax
}

// Value passes over one value of any kind and returns its raw text.
func (s *Scanner) Value() ([]byte, error) {
	s.space()
	from := s.i
	if err := s.skip(0); err != nil {
		return nil, err
	}
	return s.b[from:s.i], nil
}

// skip passes over one value at depth d.
func (s *Scanner) skip(d int) error {
	switch c := s.Peek(); c {
	case '"':
		_, err := s.Str()
		return err
	case '{', '[':
		if d > MaxDepth {
			return ErrDeep
		}
		return s.container(d, c)
	case 0:
		return ErrSyntax
	default:
		// A number or a literal: up to the next delimiter.
		j := s.i
		for j < len(s.b) && !isDelim(s.b[j]) {
			j++
		}
		if j == s.i {
			return ErrSyntax
		}
		s.i = j
		return nil
	}
}

// container passes over the object or array that open starts, at depth d.
func (s *Scanner) container(d int, open byte) error {
	close := byte('}')
	if open == '[' {
		close = ']'
	}
	s.i++
	for first := true; ; first = false {
		if s.Peek() == close {
			s.i++
			return nil
		}
		if !first {
			if s.Peek() != ',' {
				return ErrSyntax
			}
			s.i++
		}
		if open == '{' {
			if _, err := s.Str(); err != nil {
				return err
			}
			if s.Peek() != ':' {
				return ErrSyntax
			}
			s.i++
		}
		if err := s.skip(d + 1); err != nil {
			return err
		}
	}
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n', ':':
		return true
	}
	return false
}
