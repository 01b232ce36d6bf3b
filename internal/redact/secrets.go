package redact

import (
	"bytes"
	"cmp"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// MinScrubbed is the length of the shortest value a [Secrets] made for
// output replaces: a shorter one ("1", "dev") would replace innocent text
// all over, and is hidden only where [URL] hides it.
const MinScrubbed = 6

// Secrets are the secret values a command knows (its --header values, the
// secrets in its URLs, its tokens), replaced by [Mark] in any text given
// to [Secrets.Text] or written through [Secrets.Writer], in the forms
// output takes them: as given, percent-encoded, quoted by Go's %q, escaped
// in JSON, XML or Markdown. It is safe for concurrent use.
type Secrets struct {
	min    int
	mu     sync.Mutex
	values map[string]bool
	repl   *strings.Replacer // nil until first used after an Add
}

// NewSecrets returns an empty set that keeps values of at least min bytes
// ([MinScrubbed] for a command's output; 1 to replace a known password
// wherever it is).
func NewSecrets(min int) *Secrets {
	return &Secrets{min: max(1, min), values: map[string]bool{}}
}

// Add keeps v, and the forms output gives it, unless it is shorter than
// the set's minimum.
func (s *Secrets) Add(v string) {
	if len(v) < s.min {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range forms(v) {
		if f != "" && !s.values[f] {
			s.values[f], s.repl = true, nil
		}
	}
}

// AddURL keeps the secrets of raw that [URL] hides: the password (or the
// userinfo), and the values of secret-named parameters, as written and
// decoded.
func (s *Secrets) AddURL(raw string) {
	p := split(raw)
	if p.hasUser {
		_, secret, _ := userSecret(p.userinfo)
		s.addEscaped(secret, url.PathUnescape)
	}
	for _, q := range []string{p.query, p.fragment} {
		params(q, func(name string, from, to int) {
			if SecretName(name) {
				s.addEscaped(q[from:to], url.QueryUnescape)
			}
		})
	}
}

func (s *Secrets) addEscaped(v string, unescape func(string) (string, error)) {
	s.Add(v)
	if d, err := unescape(v); err == nil {
		s.Add(d)
	}
}

// AddHeader keeps a header's value, and, for the "Scheme credentials"
// form of Authorization, the credentials alone.
func (s *Secrets) AddHeader(value string) {
	value = strings.TrimSpace(value)
	s.Add(value)
	if _, cred, ok := strings.Cut(value, " "); ok {
		s.Add(strings.TrimSpace(cred))
	}
}

// Text returns t with every kept value replaced by [Mark].
func (s *Secrets) Text(t string) string {
	r := s.replacer()
	if r == nil {
		return t
	}
	return r.Replace(t)
}

func (s *Secrets) replacer() *strings.Replacer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.values) == 0 {
		return nil
	}
	if s.repl == nil {
		// The longest first: a value that holds another is replaced whole.
		vs := make([]string, 0, len(s.values))
		for v := range s.values {
			vs = append(vs, v)
		}
		slices.SortFunc(vs, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
		pairs := make([]string, 0, 2*len(vs))
		for _, v := range vs {
			pairs = append(pairs, v, Mark)
		}
		s.repl = strings.NewReplacer(pairs...)
	}
	return s.repl
}

// Writer returns a writer that writes to w what it is given with every
// kept value replaced. Each Write is replaced on its own: give it whole
// lines or whole documents (see [Secrets.Render]).
func (s *Secrets) Writer(w io.Writer) io.Writer { return &writer{w: w, s: s} }

type writer struct {
	w io.Writer
	s *Secrets
}

// Unwrap is the writer written to, for a caller that asks what lies
// beneath (whether it is a terminal, say).
func (w *writer) Unwrap() io.Writer { return w.w }

func (w *writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.w, w.s.Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Render calls write on a buffer and writes the whole result to w with
// every kept value replaced: for encoders that write in pieces, which
// could cut a secret in two.
func (s *Secrets) Render(w io.Writer, write func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	_, err := io.WriteString(w, s.Text(buf.String()))
	return err
}

// htmlEscaper escapes text as html/template does, in text, quoted
// attributes and RCDATA alike (the HTML report).
var htmlEscaper = strings.NewReplacer("&", "&amp;", "'", "&#39;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "+", "&#43;")

// forms are the ways v may appear in output: as is, percent-encoded,
// inside Go's %q, and each of those escaped for JSON, XML, HTML and
// Markdown.
func forms(v string) []string {
	quoted := strconv.Quote(v)
	base := []string{v, url.QueryEscape(v), url.PathEscape(v), quoted[1 : len(quoted)-1]}
	var out []string
	for _, b := range base {
		js, _ := json.Marshal(b)
		var x strings.Builder
		xml.EscapeText(&x, []byte(b))
		out = append(out, b, string(js[1:len(js)-1]), x.String(), htmlEscaper.Replace(b), strings.ReplaceAll(b, "|", `\|`))
	}
	slices.Sort(out)
	return slices.Compact(out)
}
