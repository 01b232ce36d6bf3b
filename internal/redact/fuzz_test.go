package redact

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzURL: whatever the input, URL does not panic, redacting twice
// changes nothing, and in any URL that net/url parses, the password, the
// userinfo without one, and the value of every secret-named query
// parameter (in Go's reading: pairs separated by "&") come out as Mark. A
// value that occurs once in the input, in such a parameter, occurs nowhere
// in the output.
func FuzzURL(f *testing.F) {
	for _, seed := range []string{
		"http://127.0.0.1:8080/x?api_key=SECRETVALUE&user=ok",
		"https://u:S3cret@h:1/p?token=T0KEN#access_token=F",
		"redis://S3cret@h:6379",
		"//u:p@h/?sig=a;b&key=c%26d",
		"http://h/?a=1;key=SECRET&b",
		"http://[::1]:80/?X-Amz-Signature=abcdef",
		"user:pass@host:1",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		out := URL(raw)
		if again := URL(out); again != out {
			t.Fatalf("URL(%q) = %q, but URL of that = %q", raw, out, again)
		}
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		red, err := url.Parse(out)
		if err != nil {
			t.Fatalf("URL(%q) = %q does not parse: %v", raw, out, err)
		}
		checkUser(t, raw, out, u, red)
		pairs, redPairs := strings.Split(u.RawQuery, "&"), strings.Split(red.RawQuery, "&")
		if len(pairs) != len(redPairs) {
			t.Fatalf("URL(%q) = %q: %d pairs in the query, want %d", raw, out, len(redPairs), len(pairs))
		}
		for i, p := range pairs {
			name, value, ok := strings.Cut(p, "=")
			if !ok || value == "" || !SecretName(name) {
				continue
			}
			if want := name + "=" + Mark; redPairs[i] != want {
				t.Fatalf("URL(%q) = %q: pair %q became %q, want %q", raw, out, p, redPairs[i], want)
			}
			if len(value) >= 4 && strings.Count(raw, value) == 1 && !strings.Contains(value, Mark) && strings.Contains(out, value) {
				t.Fatalf("URL(%q) = %q still holds %q", raw, out, value)
			}
		}
	})
}

func checkUser(t *testing.T, raw, out string, u, red *url.URL) {
	t.Helper()
	if u.User == nil || u.User.String() == "" {
		return
	}
	if red.User == nil {
		t.Fatalf("URL(%q) = %q lost the userinfo", raw, out)
	}
	if p, ok := u.User.Password(); ok && p != "" {
		if rp, _ := red.User.Password(); rp != Mark || red.User.Username() != u.User.Username() {
			t.Fatalf("URL(%q) = %q: userinfo %q, want the password replaced", raw, out, red.User)
		}
	} else if _, ok := u.User.Password(); !ok && red.User.Username() != Mark {
		t.Fatalf("URL(%q) = %q: userinfo %q, want %s", raw, out, red.User, Mark)
	}
}

// FuzzURLHidesAQuerySecret adds a secret-named parameter with any value
// to the query of any URL: the value, written once in the URL, is nowhere
// in the output.
func FuzzURLHidesAQuerySecret(f *testing.F) {
	f.Add("http://127.0.0.1:8080/x?user=ok", uint8(0), "SECRETVALUE")
	f.Add("https://h/p#frag", uint8(3), "a&b=c;d")
	f.Add("//h", uint8(5), "%zz")
	names := []string{"api_key", "apikey", "X-Api-Key", "access_token", "token", "sig", "password", "client_secret", "Authorization"}
	f.Fuzz(func(t *testing.T, raw string, which uint8, value string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		name := names[int(which)%len(names)]
		escaped := url.QueryEscape(value)
		u.RawQuery = strings.TrimPrefix(u.RawQuery+"&", "&") + url.QueryEscape(name) + "=" + escaped
		with := u.String()
		if len(escaped) < 4 || strings.Count(with, escaped) != 1 || strings.Contains(escaped, Mark) {
			return
		}
		if out := URL(with); strings.Contains(out, escaped) {
			t.Fatalf("URL(%q) = %q still holds %q", with, out, escaped)
		}
	})
}
