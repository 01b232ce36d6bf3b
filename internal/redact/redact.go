// Package redact keeps secrets out of everything rlconform prints and
// writes: lines on the terminal, errors, reports.
//
// A secret is
//   - the userinfo of a URL: its password, or all of it when it has no
//     password (redis://secret@host);
//   - the value of a query (or fragment) parameter whose name says it is
//     one ([SecretName]): api_key=…, token=…, sig=…;
//   - a value the command was given as one: a --header value, a bearer
//     token, collected in [Secrets].
//
// [URL] and [Error] hide the first two wherever an address is shown, even
// in the errors of net/http (which quote the whole URL); a [Secrets] then
// replaces every value it knows in any text, as the last line of defence
// (a service that echoes its key in an error body). A secret is shown as
// [Mark].
package redact

import (
	"cmp"
	"errors"
	"net/url"
	"slices"
	"strings"
)

// Mark is what a secret is replaced with.
const Mark = "REDACTED"

// secretWords are the parts of a parameter name that say it is a secret,
// once lowercased with its separators removed (see SecretName).
var secretWords = []string{"key", "token", "secret", "pass", "pwd", "sig", "auth", "cred", "session", "jwt"}

// SecretName reports whether a query parameter called name carries a
// secret: whether the name, lowercased with "-", "_", "." and spaces
// removed, contains key, token, secret, pass, pwd, sig, auth, cred,
// session or jwt. So api_key, apikey, X-Api-Key, access_token,
// client_secret, password, passwd, sig, X-Amz-Signature,
// X-Amz-Credential, auth and sessionid are secrets; user, id, page and
// limit are not. A few innocent names are hidden too (keyword, design,
// author): hiding too much costs a detail of a message, too little leaks a
// key.
func SecretName(name string) bool {
	if n, err := url.QueryUnescape(name); err == nil {
		name = n
	}
	name = strings.Map(func(r rune) rune {
		if strings.ContainsRune("-_. ", r) {
			return -1
		}
		return r
	}, strings.ToLower(name))
	for _, w := range secretWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// parts are the pieces of a URL that redaction looks at, cut by hand so
// that a URL that does not parse is redacted too; joined again they are
// the URL.
type parts struct {
	head     string // the scheme and "//", or ""
	userinfo string // without its "@"; "" and !hasUser when none
	hasUser  bool
	hostPath string // host, port and path
	query    string // without "?"; hasQuery says whether "?" was there
	hasQuery bool
	fragment string // without "#"
	hasFrag  bool
}

// split cuts raw as net/url does: the authority runs from "//" (or the
// start, for the host:port and user:pass@host forms of Redis addresses)
// to the first "/", "?" or "#"; the userinfo is what precedes its last
// "@".
func split(raw string) parts {
	var p parts
	rest := raw
	if i := strings.IndexByte(rest, ':'); i > 0 && isScheme(rest[:i]) && strings.HasPrefix(rest[i+1:], "//") {
		p.head, rest = rest[:i+3], rest[i+3:]
	} else if strings.HasPrefix(rest, "//") {
		p.head, rest = "//", rest[2:]
	}
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		p.fragment, p.hasFrag, rest = rest[i+1:], true, rest[:i]
	}
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		p.query, p.hasQuery, rest = rest[i+1:], true, rest[:i]
	}
	end := len(rest)
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		end = i
	}
	if at := strings.LastIndexByte(rest[:end], '@'); at >= 0 {
		p.userinfo, p.hasUser, rest = rest[:at], true, rest[at+1:]
	}
	p.hostPath = rest
	return p
}

// isScheme reports whether s is a URL scheme: a letter, then letters,
// digits, "+", "-" or ".".
func isScheme(s string) bool {
	for i, r := range s {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (i == 0 || !(r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.')) {
			return false
		}
	}
	return s != ""
}

func (p parts) String() string {
	var b strings.Builder
	b.WriteString(p.head)
	if p.hasUser {
		b.WriteString(p.userinfo)
		b.WriteByte('@')
	}
	b.WriteString(p.hostPath)
	if p.hasQuery {
		b.WriteByte('?')
		b.WriteString(p.query)
	}
	if p.hasFrag {
		b.WriteByte('#')
		b.WriteString(p.fragment)
	}
	return b.String()
}

// userSecret is the secret part of a userinfo: after the first ":", or
// all of it.
func userSecret(userinfo string) (user, secret string, hasPassword bool) {
	if i := strings.IndexByte(userinfo, ':'); i >= 0 {
		return userinfo[:i], userinfo[i+1:], true
	}
	return "", userinfo, false
}

// params calls fn for each name=value pair of a query or fragment, with
// the value's offsets in s, in two readings: pairs separated by "&" (as
// Go and most servers read a query), and by "&" or ";" (as some others
// do).
func params(s string, fn func(name string, from, to int)) {
	for _, seps := range []string{"&", "&;"} {
		start := 0
		for i := 0; i <= len(s); i++ {
			if i < len(s) && !strings.ContainsRune(seps, rune(s[i])) {
				continue
			}
			if eq := strings.IndexByte(s[start:i], '='); eq >= 0 {
				fn(s[start:start+eq], start+eq+1, i)
			}
			start = i + 1
		}
	}
}

// redactParams replaces the value of every secret-named parameter of s,
// in either reading of params, and adds what it replaced to removed.
func redactParams(s string, removed *[]string) string {
	var spans [][2]int
	params(s, func(name string, from, to int) {
		if SecretName(name) && from < to {
			spans = append(spans, [2]int{from, to})
			if what := "the value of " + name; !slices.Contains(*removed, what) {
				*removed = append(*removed, what)
			}
		}
	})
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return cmp.Compare(a[0], b[0]) })
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		if sp[1] <= last {
			continue // inside a span already replaced
		}
		if sp[0] < last {
			sp[0] = last
		} else {
			b.WriteString(s[last:sp[0]])
			b.WriteString(Mark)
		}
		last = sp[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// URL returns raw with its secrets replaced by [Mark]: the password of its
// userinfo (all of the userinfo when it has no password) and the value of
// every query or fragment parameter whose name is a [SecretName]. It works
// on what does not parse as a URL too, and changes nothing else.
func URL(raw string) string {
	s, _ := Removed(raw)
	return s
}

// Removed is [URL], and says what it replaced ("the password", "the value
// of api_key"), for a message telling where to put the secrets back.
func Removed(raw string) (string, []string) {
	p := split(raw)
	var removed []string
	if p.hasUser && p.userinfo != "" {
		user, secret, hasPassword := userSecret(p.userinfo)
		switch {
		case hasPassword && secret != "":
			p.userinfo = user + ":" + Mark
			removed = append(removed, "the password")
		case !hasPassword:
			p.userinfo = Mark
			removed = append(removed, "the user part (before @)")
		}
	}
	if p.hasQuery {
		p.query = redactParams(p.query, &removed)
	}
	if p.hasFrag {
		p.fragment = redactParams(p.fragment, &removed)
	}
	return p.String(), removed
}

// URLList is [URL] for a comma-separated list of URLs or host:port (the
// nodes of a Redis cluster). Use it for Redis addresses only: an HTTP URL
// may hold commas in its query.
func URLList(raw string) string {
	list := strings.Split(raw, ",")
	for i, u := range list {
		list[i] = URL(u)
	}
	return strings.Join(list, ",")
}

// Error hides the secrets of every URL that err's chain holds in a
// [*url.Error] (net/http's errors quote the whole URL of the request, its
// query included) and returns err. Call it on an error of net/http or
// net/url before the error is shown or wrapped.
func Error(err error) error {
	walk(err, 0)
	return err
}

func walk(err error, depth int) {
	if err == nil || depth > 64 {
		return
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = URL(ue.URL)
	}
	switch e := err.(type) {
	case interface{ Unwrap() error }:
		walk(e.Unwrap(), depth+1)
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			walk(inner, depth+1)
		}
	}
}
