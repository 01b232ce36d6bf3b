package adapters

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// received is what an echo server got: each request's body and
// Content-Type.
type received struct {
	mu     sync.Mutex
	bodies [][]byte
	types  []string
}

func (r *received) last() ([]byte, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bodies[len(r.bodies)-1], r.types[len(r.types)-1]
}

// echoServer admits every request and keeps what it received.
func echoServer(t *testing.T) (string, *received) {
	t.Helper()
	got := &received{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got.mu.Lock()
		got.bodies, got.types = append(got.bodies, b), append(got.types, r.Header.Get("Content-Type"))
		got.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, got
}

// at walks a decoded JSON document by keys (string) and indices (int),
// independently of the package's pointer reading.
func at(t *testing.T, doc any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch p := p.(type) {
		case string:
			obj, ok := doc.(map[string]any)
			require.True(t, ok, "not an object at %v", p)
			doc = obj[p]
		case int:
			arr, ok := doc.([]any)
			require.True(t, ok, "not an array at %v", p)
			require.Less(t, p, len(arr))
			doc = arr[p]
		}
	}
	return doc
}

// ids a body identity must carry as they are: quotes, backslashes,
// control characters, HTML, unicode, the longest id.
var awkwardIDs = []string{"alice", `qu"ote`, `back\slash`, "tab\tnew\nline\x00nul", "<&>", "ünï-😀", "\u2028\u2029",
	strings.Repeat("é", 256), "/~0~1"}

// The id arrives at the pointer, escaped as JSON, each request its own;
// the rest of the document is sent byte for byte as given (spacing,
// member order, a number no float holds).
func TestJSONIdentityReachesThePointer(t *testing.T) {
	srv, got := echoServer(t)
	body := []byte("{\"domain\":\"rl\",  \"descriptors\":[{\"entries\":[{\"key\":\"user\",\"value\":\"x\"}]}],\n \"n\": 123456789012345678901234567890, \"z\":\"x\"}\n")
	id, err := ParseIdentity("json:/descriptors/0/entries/0/value")
	require.NoError(t, err)
	require.NoError(t, id.ValidateBody(body))
	e := NewEndpoint(srv, EndpointOptions{Method: http.MethodPost, Identity: id, Body: body})
	for _, user := range awkwardIDs {
		ok, err := e.AllowRequest(context.Background(), user)
		require.NoError(t, err, "%q", user)
		require.True(t, ok)
		sent, ctype := got.last()
		assert.Equal(t, "application/json", ctype)
		var doc any
		require.NoError(t, json.Unmarshal(sent, &doc), "%s", sent)
		assert.Equal(t, user, at(t, doc, "descriptors", 0, "entries", 0, "value"), "%s", sent)
		quoted, err := json.Marshal(user)
		require.NoError(t, err)
		want := strings.Replace(string(body), `"value":"x"`, `"value":`+string(quoted), 1)
		if !strings.ContainsAny(user, "<&>") { // json.Marshal escapes HTML; the endpoint need not
			assert.Equal(t, want, string(sent), "only the value changes")
		}
	}
	// An id that is not UTF-8 would lose its bytes in JSON: its
	// base64url form keeps distinct ids distinct.
	for _, user := range []string{"\xff", "\xfe"} {
		_, err := e.AllowRequest(context.Background(), user)
		require.NoError(t, err)
		sent, _ := got.last()
		var doc any
		require.NoError(t, json.Unmarshal(sent, &doc))
		assert.Equal(t, id.value(user), at(t, doc, "descriptors", 0, "entries", 0, "value"))
	}
	assert.NotEqual(t, id.value("\xff"), id.value("\xfe"))
}

// ~1 is / and ~0 is ~ in a pointer's tokens (RFC 6901), and a token that
// is digits names an object's member by that name.
func TestJSONIdentityPointerEscapes(t *testing.T) {
	srv, got := echoServer(t)
	body := []byte(`{"a/b":{"m~n":{"0":["skip",{"user":"old"}]}},"m~n":"decoy"}`)
	id, err := ParseIdentity("json:/a~1b/m~0n/0/1/user")
	require.NoError(t, err)
	e := NewEndpoint(srv, EndpointOptions{Method: http.MethodPost, Identity: id, Body: body})
	_, err = e.AllowRequest(context.Background(), "u-1")
	require.NoError(t, err)
	sent, _ := got.last()
	assert.Equal(t, `{"a/b":{"m~n":{"0":["skip",{"user":"u-1"}]}},"m~n":"decoy"}`, string(sent))
}

// What cannot carry the identity is refused with the reason before any
// request: a bad pointer, no body, a body that is not JSON, a pointer to
// nothing, or to a value that is not a string, or through a member named
// twice.
func TestJSONIdentityRefusals(t *testing.T) {
	for _, bad := range []struct{ in, says string }{
		{"json:", "does not start with /"},
		{"json:descriptors", "does not start with /"},
		{"json:/a~2b", "~ not followed by 0 or 1"},
		{"json:/a~", "~ not followed by 0 or 1"},
		{"form:", "want header:NAME"},
		{"jsonx:/a", "want header:NAME, query:NAME, bearer, json:POINTER, form:NAME or none"},
	} {
		_, err := ParseIdentity(bad.in)
		assert.ErrorContains(t, err, bad.says, bad.in)
	}
	doc := `{"domain":"rl","descriptors":[{"entries":[{"key":"user","value":"x","n":5,"o":{}}]}],"s":"str"}`
	for _, c := range []struct{ pointer, body, says string }{
		{"/domain", "", "needs --body"},
		{"/domain", `{"domain": rl}`, "the body is not JSON: invalid character 'r'"},
		{"/domain", `{"domain":"rl"} {}`, "the body is not JSON"},
		{"/nope", doc, `at the document's root: the object has no member "nope"`},
		{"/descriptors/1/entries", doc, "at /descriptors: the array has 1 element(s), no index 1"},
		{"/descriptors/-", doc, `"-" names the element after the last`},
		{"/descriptors/00", doc, `"00" is not an array index`},
		{"/descriptors/x", doc, `"x" is not an array index`},
		{"/descriptors/0/entries/0/n", doc, "the value at /descriptors/0/entries/0/n is a number, not a string"},
		{"/descriptors/0/entries/0/o", doc, "is an object, not a string"},
		{"/descriptors", doc, "is an array, not a string"},
		{"/s/x", doc, `at /s: the value is a string, neither an object nor an array, so it has no "x"`},
		{"/a", `{"a":"1","a":"2"}`, `the object names "a" twice`},
		{"/a", `["a"]`, `"a" is not an array index`},
	} {
		id, err := ParseIdentity("json:" + c.pointer)
		require.NoError(t, err, c.pointer)
		var body []byte
		if c.body != "" {
			body = []byte(c.body)
		}
		err = id.ValidateBody(body)
		assert.ErrorContains(t, err, c.says, "%s in %s", c.pointer, c.body)
		// The endpoint refuses to send it, never panics.
		_, err = NewEndpoint("http://127.0.0.1:1", EndpointOptions{Identity: id, Body: body}).Do(context.Background(), "u")
		assert.ErrorContains(t, err, c.says)
	}
}

// form:NAME replaces the field (its first occurrence; later ones are
// dropped) or adds it, keeps the other pairs as given, percent-encodes
// any id, and needs no body.
func TestFormIdentity(t *testing.T) {
	srv, got := echoServer(t)
	for _, c := range []struct {
		body, want string // want with ID for the id
	}{
		{"a=1&user=old&b=%20x&user=dup\n", "a=1&user=ID&b=%20x"},
		{"z=1&a=2", "z=1&a=2&user=ID"},
		{"", "user=ID"},
	} {
		id, err := ParseIdentity("form:user")
		require.NoError(t, err)
		var body []byte
		if c.body != "" {
			body = []byte(c.body)
		}
		e := NewEndpoint(srv, EndpointOptions{Method: http.MethodPost, Identity: id, Body: body})
		for _, user := range awkwardIDs {
			_, err := e.AllowRequest(context.Background(), user)
			require.NoError(t, err)
			sent, ctype := got.last()
			assert.Equal(t, "application/x-www-form-urlencoded", ctype)
			assert.Equal(t, strings.Replace(c.want, "ID", url.QueryEscape(user), 1), string(sent))
			form, err := url.ParseQuery(string(sent))
			require.NoError(t, err)
			assert.Equal(t, []string{user}, form["user"], "one value, the id")
		}
	}
	id, _ := ParseIdentity("form:user")
	assert.ErrorContains(t, id.ValidateBody([]byte("a=%zz")), "not application/x-www-form-urlencoded")
	// A Content-Type the caller gives is kept.
	e := NewEndpoint(srv, EndpointOptions{Method: http.MethodPost, Identity: id, Header: http.Header{"Content-Type": {"text/plain"}}})
	_, err := e.AllowRequest(context.Background(), "u")
	require.NoError(t, err)
	_, ctype := got.last()
	assert.Equal(t, "text/plain", ctype)
}

// Whatever the body, pointer and id, a body identity never panics, and a
// body it accepts is sent as JSON whose pointed value is the id (in its
// wire form) and is otherwise the document as given.
func FuzzJSONIdentity(f *testing.F) {
	f.Add(`{"domain":"rl","descriptors":[{"entries":[{"key":"user","value":"x"}]}]}`, "/descriptors/0/entries/0/value", `a"b\c`)
	f.Add(`{"a/b":{"m~n":"v"}}`, "/a~1b/m~0n", "ü")
	f.Add(`[ "x" , {"":"y"} ]`, "/1/", "\xff")
	f.Add(`{"a":{"a":"1"},"a":2}`, "/a/a", "u")
	f.Fuzz(func(t *testing.T, body, pointer, user string) {
		id, err := ParseIdentity("json:" + pointer)
		if err != nil || user == "" {
			return
		}
		tmpl, err := newBodyTemplate(id, []byte(body))
		if err != nil {
			return
		}
		sent := tmpl.render(id.value(user))
		if !json.Valid(sent) {
			t.Fatalf("not JSON: %q", sent)
		}
		if !bytes.HasPrefix(sent, tmpl.before) || !bytes.HasSuffix(sent, tmpl.after) ||
			!bytes.HasPrefix([]byte(body), tmpl.before) || !bytes.HasSuffix([]byte(body), tmpl.after) {
			t.Fatalf("the document around the value changed: %q from %q", sent, body)
		}
		var v string
		if err := json.Unmarshal(sent[len(tmpl.before):len(sent)-len(tmpl.after)], &v); err != nil || v != id.value(user) {
			t.Fatalf("the value is %q (%v), want %q", v, err, id.value(user))
		}
	})
}
