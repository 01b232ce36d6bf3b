package accesslog

import (
	"bytes"
	"encoding/json"
	"errors"
)

// jsonPaths reads the values at a few paths of a JSON object line (one
// field each, or the first element of an array there), without decoding
// the rest: a path is the keys from the top ("request", "headers",
// "X-User"), the last compared without case when fold is set (HTTP
// header names). A value is its raw JSON; strings are unquoted (with
// their escapes decoded, into the scanner's own buffer).
type jsonPaths struct {
	paths [][]string
	fold  []bool
	out   [][]byte
	buf   [][]byte // per path: an unescaped string
}

var errJSON = errors.New("not a JSON object")

// maxDepth bounds the nesting a line may have.
const maxDepth = 64

func newJSONPaths(paths [][]string, fold []bool) *jsonPaths {
	return &jsonPaths{paths: paths, fold: fold, out: make([][]byte, len(paths)), buf: make([][]byte, len(paths))}
}

// scan reads line b; the values are in s.out (nil for a path absent).
func (s *jsonPaths) scan(b []byte) error {
	clear(s.out)
	sc := jscan{b: b}
	return sc.object(0, func(key []byte) error { return s.at(&sc, 0, nil, key) })
}

// at handles key at depth d, below the path prefix (the keys above it).
func (s *jsonPaths) at(sc *jscan, d int, prefix []string, key []byte) error {
	for k, p := range s.paths {
		if len(p) <= d || !equalPrefix(p[:d], prefix) || !s.keyIs(k, d, key) {
			continue
		}
		if d == len(p)-1 {
			return s.value(sc, k)
		}
		sc.space()
		if sc.peek() != '{' {
			return sc.skip(0)
		}
		below := append(prefix[:d:d], p[d])
		return sc.object(d+1, func(key []byte) error { return s.at(sc, d+1, below, key) })
	}
	return sc.skip(0)
}

func (s *jsonPaths) keyIs(k, d int, key []byte) bool {
	if d == len(s.paths[k])-1 && s.fold[k] {
		return bytes.EqualFold(key, []byte(s.paths[k][d]))
	}
	return string(key) == s.paths[k][d]
}

func equalPrefix(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// value reads path k's value: a string unquoted, the first element of an
// array, anything else raw.
func (s *jsonPaths) value(sc *jscan, k int) error {
	sc.space()
	if sc.peek() == '[' {
		from := sc.i
		if err := sc.skip(0); err != nil {
			return err
		}
		inner := jscan{b: sc.b[from:sc.i]}
		inner.i = 1
		inner.space()
		if inner.peek() == ']' {
			return nil
		}
		return s.scalar(&inner, k)
	}
	return s.scalar(sc, k)
}

func (s *jsonPaths) scalar(sc *jscan, k int) error {
	from := sc.space()
	if err := sc.skip(0); err != nil {
		return err
	}
	raw := sc.b[from:sc.i]
	if string(raw) == "null" {
		return nil
	}
	if len(raw) < 2 || raw[0] != '"' {
		s.out[k] = raw
		return nil
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		s.out[k] = inner
		return nil
	}
	var str string
	if err := json.Unmarshal(raw, &str); err != nil {
		return err
	}
	s.buf[k] = append(s.buf[k][:0], str...)
	s.out[k] = s.buf[k]
	return nil
}

// jscan walks one JSON text.
type jscan struct {
	b []byte
	i int
}

func (s *jscan) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *jscan) space() int {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
	return s.i
}

// object reads an object at depth d, calling field after each key with
// the scanner on its value, which field must consume.
func (s *jscan) object(d int, field func(key []byte) error) error {
	s.space()
	if s.peek() != '{' || d > maxDepth {
		return errJSON
	}
	s.i++
	s.space()
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		s.space()
		from := s.i
		if err := s.skipString(); err != nil {
			return err
		}
		key := s.b[from+1 : s.i-1]
		s.space()
		if s.peek() != ':' {
			return errJSON
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
			return errJSON
		}
	}
}

func (s *jscan) skipString() error {
	if s.peek() != '"' {
		return errJSON
	}
	for j := s.i + 1; j < len(s.b); j++ {
		switch s.b[j] {
		case '\\':
			j++
		case '"':
			s.i = j + 1
			return nil
		}
	}
	return errJSON
}

// skip passes over one value of any kind, nested at most maxDepth deep.
func (s *jscan) skip(d int) error {
	s.space()
	switch c := s.peek(); c {
	case '"':
		return s.skipString()
	case '{', '[':
		if d > maxDepth {
			return errJSON
		}
		close := byte('}')
		if c == '[' {
			close = ']'
		}
		s.i++
		for first := true; ; first = false {
			s.space()
			if s.peek() == close {
				s.i++
				return nil
			}
			if !first {
				if s.peek() != ',' {
					return errJSON
				}
				s.i++
			}
			if c == '{' {
				s.space()
				if err := s.skipString(); err != nil {
					return err
				}
				s.space()
				if s.peek() != ':' {
					return errJSON
				}
				s.i++
			}
			if err := s.skip(d + 1); err != nil {
				return err
			}
		}
	case 0:
		return errJSON
	default:
		j := s.i
		for j < len(s.b) && !bytes.ContainsRune([]byte(",}] \t\r\n:"), rune(s.b[j])) {
			j++
		}
		if j == s.i {
			return errJSON
		}
		s.i = j
		return nil
	}
}
