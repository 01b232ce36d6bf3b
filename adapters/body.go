package adapters

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The identities carried in the request body: json:POINTER, an RFC 6901
// JSON Pointer into a JSON body, whose string value becomes the user's
// id; form:NAME, a field of an application/x-www-form-urlencoded body.

// parsePointer splits an RFC 6901 JSON Pointer into its reference tokens,
// ~1 read as / and ~0 as ~. The pointer must start with / (the empty
// pointer, the whole document, is not a member to rewrite).
func parsePointer(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("JSON Pointer %q does not start with / (RFC 6901: /descriptors/0/entries/0/value)", p)
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 == len(t) || (t[j+1] != '0' && t[j+1] != '1')) {
				return nil, fmt.Errorf("JSON Pointer %q: %q has a ~ not followed by 0 or 1 (RFC 6901: ~0 is ~, ~1 is /)", p, t)
			}
		}
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens, nil
}

// bodyTemplate is a body with the user's place in it: a JSON body split
// around the pointed string (before + the id as a JSON string + after),
// or a form body's fields, the identity's own at index at.
type bodyTemplate struct {
	kind          string
	before, after []byte
	fields        []string // form: the body's name=value pairs, as given
	at            int      // form: the index of the identity's pair
}

// newBodyTemplate checks body against the identity and returns where the
// user goes; nil for the identities not in the body.
func newBodyTemplate(i Identity, body []byte) (*bodyTemplate, error) {
	switch i.Kind {
	case "json":
		tokens, err := parsePointer(i.Name)
		if err != nil {
			return nil, err
		}
		if body == nil {
			return nil, errors.New("json: needs --body, the JSON document the pointer points into")
		}
		start, end, err := locate(body, tokens)
		if err != nil {
			return nil, fmt.Errorf("the body and JSON Pointer %q: %w", i.Name, err)
		}
		return &bodyTemplate{kind: "json", before: body[:start:start], after: body[end:]}, nil
	case "form":
		return newFormTemplate(i.Name, body)
	}
	return nil, nil
}

// newFormTemplate splits a form body (a trailing newline of its file
// dropped) into its pairs, kept as given; the first pair named name is
// the user's, later ones are dropped, and with none the pair is added
// last.
func newFormTemplate(name string, body []byte) (*bodyTemplate, error) {
	text := strings.TrimSuffix(strings.TrimSuffix(string(body), "\n"), "\r")
	if _, err := url.ParseQuery(text); err != nil {
		return nil, fmt.Errorf("the body is not application/x-www-form-urlencoded: %w", err)
	}
	t := &bodyTemplate{kind: "form", at: -1}
	for _, pair := range strings.Split(text, "&") {
		if pair == "" {
			continue
		}
		k, _, _ := strings.Cut(pair, "=")
		if k, _ = url.QueryUnescape(k); k == name {
			if t.at >= 0 {
				continue
			}
			t.at = len(t.fields)
		}
		t.fields = append(t.fields, pair)
	}
	if t.at < 0 {
		t.at = len(t.fields)
		t.fields = append(t.fields, "")
	}
	t.fields[t.at] = url.QueryEscape(name) + "="
	return t, nil
}

// render is the body of a request of user, whose wire form is value.
func (t *bodyTemplate) render(value string) []byte {
	if t.kind == "form" {
		fields := append([]string(nil), t.fields...)
		fields[t.at] += url.QueryEscape(value)
		return []byte(strings.Join(fields, "&"))
	}
	var id bytes.Buffer
	enc := json.NewEncoder(&id)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(value) // a string always encodes
	quoted := bytes.TrimSuffix(id.Bytes(), []byte("\n"))
	out := make([]byte, 0, len(t.before)+len(quoted)+len(t.after))
	return append(append(append(out, t.before...), quoted...), t.after...)
}

// contentType is the Content-Type of a body of this kind.
func (t *bodyTemplate) contentType() string {
	if t.kind == "form" {
		return "application/x-www-form-urlencoded"
	}
	return "application/json"
}

// locate is the byte span of the string value tokens point to in the JSON
// document doc: it must exist, be a string, and be named once on the way
// (a member named twice in one object is ambiguous: parsers keep the
// first or the last).
func locate(doc []byte, tokens []string) (start, end int, err error) {
	if err := validJSON(doc); err != nil {
		return 0, 0, err
	}
	start, end, err = lookup(doc, tokens)
	if err != nil {
		return 0, 0, err
	}
	if doc[start] != '"' {
		return 0, 0, fmt.Errorf("the value at %s is %s, not a string: the pointer must name an existing string, which each request replaces with its user's id", pointerOf(tokens), kindOf(doc[start:end]))
	}
	return start, end, nil
}

// validJSON says why doc is not one JSON document, or nil.
func validJSON(doc []byte) error {
	if json.Valid(doc) {
		return nil
	}
	var v any
	err := json.Unmarshal(doc, &v)
	return fmt.Errorf("the body is not JSON: %w", err)
}

// errAbsent marks a pointer that names nothing in a document: an object
// without the member, an array without the element.
var errAbsent = errors.New("the pointer must name an existing value")

// lookup is the byte span of the value tokens point to in the JSON
// document doc, which [validJSON] has accepted; each member on the way
// must be named once (a member named twice in one object is ambiguous:
// parsers keep the first or the last). An error wraps errAbsent when
// the value is not there.
func lookup(doc []byte, tokens []string) (start, end int, err error) {
	off := skipSpace(doc, 0)
	for i, tok := range tokens {
		at, err := member(doc[off:], tok)
		if err != nil {
			return 0, 0, fmt.Errorf("at %s: %w", pointerOf(tokens[:i]), err)
		}
		off += at
	}
	dec := json.NewDecoder(bytes.NewReader(doc[off:]))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return 0, 0, fmt.Errorf("at %s: %w", pointerOf(tokens), err)
	}
	end = off + int(dec.InputOffset())
	return end - len(raw), end, nil
}

// member is the offset in doc, which starts with an object or an array,
// of the value of its member (object) or element (array) tok.
func member(doc []byte, tok string) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	first, err := dec.Token()
	if err != nil {
		return 0, err
	}
	switch first {
	case json.Delim('{'):
		at := -1
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return 0, err
			}
			if k == tok {
				if at >= 0 {
					return 0, fmt.Errorf("the object names %q twice: which one a service reads is its parser's choice", tok)
				}
				at = valueAfter(doc, int(dec.InputOffset()))
			}
			if err := skipValue(dec); err != nil {
				return 0, err
			}
		}
		if at < 0 {
			return 0, fmt.Errorf("the object has no member %q: %w", tok, errAbsent)
		}
		return at, nil
	case json.Delim('['):
		idx, err := arrayIndex(tok)
		if err != nil {
			return 0, err
		}
		n := 0
		for ; dec.More(); n++ {
			if n == idx {
				return valueAfter(doc, int(dec.InputOffset())), nil
			}
			if err := skipValue(dec); err != nil {
				return 0, err
			}
		}
		return 0, fmt.Errorf("the array has %d element(s), no index %d: %w", n, idx, errAbsent)
	}
	return 0, fmt.Errorf("the value is %s, neither an object nor an array, so it has no %q", kindOf(doc), tok)
}

// arrayIndex reads an RFC 6901 array index: 0, or digits without a
// leading zero ("-", past the last element, names nothing to rewrite).
func arrayIndex(tok string) (int, error) {
	if tok == "-" {
		return 0, fmt.Errorf(`"-" names the element after the last: %w`, errAbsent)
	}
	if tok == "" || (len(tok) > 1 && tok[0] == '0') || strings.Trim(tok, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not an array index (0, or digits without a leading zero)", tok)
	}
	n, err := strconv.Atoi(tok)
	if err != nil {
		return 0, fmt.Errorf("array index %q: %w", tok, err)
	}
	return n, nil
}

func skipValue(dec *json.Decoder) error {
	var skip json.RawMessage
	return dec.Decode(&skip)
}

// valueAfter is where the next value starts in doc from p: past the
// blanks, the ':' after a member's name or the ',' between elements.
func valueAfter(doc []byte, p int) int {
	for p < len(doc) && strings.IndexByte(" \t\r\n:,", doc[p]) >= 0 {
		p++
	}
	return p
}

func skipSpace(doc []byte, p int) int {
	for p < len(doc) && strings.IndexByte(" \t\r\n", doc[p]) >= 0 {
		p++
	}
	return p
}

// kindOf names the kind of the JSON value doc starts with.
func kindOf(doc []byte) string {
	doc = doc[skipSpace(doc, 0):]
	switch {
	case len(doc) == 0:
		return "nothing"
	case doc[0] == '{':
		return "an object"
	case doc[0] == '[':
		return "an array"
	case doc[0] == '"':
		return "a string"
	case doc[0] == 't' || doc[0] == 'f':
		return "a boolean"
	case doc[0] == 'n':
		return "null"
	}
	return "a number"
}

// pointerOf writes tokens back as a JSON Pointer ("" is the document).
func pointerOf(tokens []string) string {
	if len(tokens) == 0 {
		return "the document's root"
	}
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// jsonSafe says whether the id survives a JSON string as itself: encoding
// replaces bytes that are not UTF-8 with U+FFFD, which would make
// distinct ids one.
func jsonSafe(user string) bool { return utf8.ValidString(user) }
