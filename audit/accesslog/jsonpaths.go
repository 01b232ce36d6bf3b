package accesslog

import (
	"bytes"
	"encoding/json"

	"github.com/rlconform/rlconform/internal/jsonscan"
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

func newJSONPaths(paths [][]string, fold []bool) *jsonPaths {
	return &jsonPaths{paths: paths, fold: fold, out: make([][]byte, len(paths)), buf: make([][]byte, len(paths))}
}

// scan reads line b; the values are in s.out (nil for a path absent).
func (s *jsonPaths) scan(b []byte) error {
	clear(s.out)
	sc := jsonscan.New(b)
	return sc.Object(0, func(key []byte) error { return s.at(&sc, 0, nil, key) })
}

// at handles key at depth d, below the path prefix (the keys above it).
func (s *jsonPaths) at(sc *jsonscan.Scanner, d int, prefix []string, key []byte) error {
	for k, p := range s.paths {
		if len(p) <= d || !equalPrefix(p[:d], prefix) || !s.keyIs(k, d, key) {
			continue
		}
		if d == len(p)-1 {
			return s.value(sc, k)
		}
		if sc.Peek() != '{' {
			return skip(sc)
		}
		below := append(prefix[:d:d], p[d])
		return sc.Object(d+1, func(key []byte) error { return s.at(sc, d+1, below, key) })
	}
	return skip(sc)
}

func skip(sc *jsonscan.Scanner) error {
	_, err := sc.Value()
	return err
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
func (s *jsonPaths) value(sc *jsonscan.Scanner, k int) error {
	if sc.Peek() == '[' {
		array, err := sc.Value()
		if err != nil {
			return err
		}
		inner := jsonscan.New(array[1:])
		if inner.Peek() == ']' {
			return nil
		}
		return s.scalar(&inner, k)
	}
	return s.scalar(sc, k)
}

func (s *jsonPaths) scalar(sc *jsonscan.Scanner, k int) error {
	raw, err := sc.Value()
	if err != nil {
		return err
	}
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
