package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Object gives each key raw, with the scanner on its value; Value returns
// a value's raw text whatever its kind.
func TestObject(t *testing.T) {
	s := New([]byte(` { "a" : [1, {"x":"}"}] , "b\"c":"d\"e", "n": -1.5e3 ,"t":true} `))
	got := map[string]string{}
	err := s.Object(0, func(key []byte) error {
		v, err := s.Value()
		got[string(key)] = string(v)
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": `[1, {"x":"}"}]`, `b\"c`: `"d\"e"`, "n": "-1.5e3", "t": "true"}, got)
	assert.Equal(t, byte(0), s.Peek(), "the object read to its end")
}

// What is not the JSON expected is ErrSyntax; nesting beyond MaxDepth is
// ErrDeep, up to it fine.
func TestErrors(t *testing.T) {
	for _, bad := range []string{``, `[]`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1 "b":2}`, `{"a":"x}`, `{"a":[1 2]}`, `{"a":{]}`, `{"a":{"b"}}`, `{1:2}`} {
		s := New([]byte(bad))
		err := s.Object(0, func([]byte) error { _, err := s.Value(); return err })
		assert.ErrorIs(t, err, ErrSyntax, "%s", bad)
	}
	deep := func(n int) []byte { return []byte(`{"a":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`) }
	for n, want := range map[int]error{MaxDepth + 1: nil, MaxDepth + 2: ErrDeep} {
		s := New(deep(n))
		err := s.Object(0, func([]byte) error { _, err := s.Value(); return err })
		if want == nil {
			assert.NoError(t, err, "%d deep", n)
		} else {
			assert.ErrorIs(t, err, want, "%d deep", n)
		}
	}
	s := New([]byte(`{}`))
	assert.ErrorIs(t, s.Object(MaxDepth+1, nil), ErrDeep)
}

// Whatever the text, the scanner never panics; a JSON value that
// encoding/json takes (nested at most MaxDepth deep) it reads whole.
func FuzzValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"c\"d"}],"e":null}`, `"x"`, `[[[]]]`, `{"a" 1}`, `12 `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := New(b)
		v, err := s.Value()
		if !json.Valid(b) || depth(b) > MaxDepth+1 {
			return
		}
		if err != nil || s.Peek() != 0 || len(v) == 0 {
			t.Fatalf("valid JSON %q: read %q, then %q: %v", b, v, s.b[s.i:], err)
		}
	})
}

// depth is how deep valid JSON b nests.
func depth(b []byte) int {
	d, most, in := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == '{' || c == '['):
			d++
			most = max(most, d)
		case !in && (c == '}' || c == ']'):
			d--
		}
	}
	return most
}
