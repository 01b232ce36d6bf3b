package redact

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/internal/testaddr"
)

func TestSecretName(t *testing.T) {
	for _, name := range []string{"key", "api_key", "apikey", "API-KEY", "X-Api-Key", "access_token", "token", "client_secret",
		"password", "passwd", "pwd", "sig", "signature", "X-Amz-Signature", "X-Amz-Credential", "auth", "authorization",
		"sessionid", "jwt", "ke%79", "api.key", "api key"} {
		assert.True(t, SecretName(name), name)
	}
	for _, name := range []string{"user", "id", "page", "limit", "q", "format", "", "%zz"} {
		assert.False(t, SecretName(name), name)
	}
}

func TestURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"http://127.0.0.1:8080/x?api_key=SECRET&user=ok", "http://127.0.0.1:8080/x?api_key=REDACTED&user=ok"},
		{"http://h/?user=ok&Token=S&page=2", "http://h/?user=ok&Token=REDACTED&page=2"},
		{"https://u:S3cret@h:1/p", "https://u:REDACTED@h:1/p"},
		{"redis://S3cret@h:6379", "redis://REDACTED@h:6379"},
		{"redis://:S3cret@h:6379/0", "redis://:REDACTED@h:6379/0"},
		{"user:S3cret@h:6379", "user:REDACTED@h:6379"},
		{"//u:S3cret@h/", "//u:REDACTED@h/"},
		{"http://h/#access_token=S&x=1", "http://h/#access_token=REDACTED&x=1"},
		{"http://h/?a=1;key=S", "http://h/?a=1;key=REDACTED"},
		{"http://h/?key=a;b&c=d", "http://h/?key=REDACTED&c=d"},
		{"http://h/?key=&x", "http://h/?key=&x"},
		{"http://[::1]:80/x?sig=S", "http://[::1]:80/x?sig=REDACTED"},
		{"http://h:bad port/?key=S%zz", "http://h:bad port/?key=REDACTED"},
		{"http://h/path?q=1", "http://h/path?q=1"},
		{"not a url", "not a url"},
		{"", ""},
	} {
		got := URL(tt.in)
		assert.Equal(t, tt.want, got, tt.in)
		assert.Equal(t, got, URL(got), "redacting twice changes nothing: %s", tt.in)
	}
	assert.Equal(t, "redis://:REDACTED@a:1,redis://:REDACTED@b:2", URLList("redis://:S@a:1,redis://:S@b:2"))

	_, removed := Removed("http://u:p@h/?api_key=S&token=T&api_key=U")
	assert.Equal(t, []string{"the password", "the value of api_key", "the value of token"}, removed)
}

// net/http quotes the whole URL of a request in its errors, query and all.
func TestErrorHidesTheURLsOfNetHTTPErrors(t *testing.T) {
	raw := "http://" + testaddr.Refused(t) + "/x?api_key=SECRETVALUE&user=ok"
	_, err := http.Get(raw)
	require.Error(t, err)
	require.Contains(t, err.Error(), "SECRETVALUE", "the premise: net/http shows the query")
	joined := errors.Join(errors.New("first"), err)
	assert.Same(t, joined, Error(joined))
	wrapped := fmt.Errorf("GET: %w", joined) // fmt.Errorf fixes the text: redact before
	assert.NotContains(t, wrapped.Error(), "SECRETVALUE")
	assert.Contains(t, wrapped.Error(), "user=ok")
	var ue *url.Error
	assert.ErrorAs(t, wrapped, &ue, "the error is still what net/http returned")

	invalid := strings.Replace("http://h/CTL?token=SECRETVALUE", "CTL", "\x7f", 1) // a control character
	_, err = url.Parse(invalid)
	require.ErrorContains(t, err, "SECRETVALUE")
	assert.NotContains(t, Error(err).Error(), "SECRETVALUE")
	assert.NoError(t, Error(nil))
}

func TestSecretsReplaceEveryFormOfAValue(t *testing.T) {
	s := NewSecrets(MinScrubbed)
	s.AddURL("http://u:pa%24%24word@h/?api_key=k%26ey%7C%22%3Cval&user=visible-user")
	s.AddHeader("Bearer SECRET2")
	s.Add("short") // under MinScrubbed: kept out, so that "short" stays readable
	secret := `k&ey|"<val`
	js, _ := json.Marshal(secret)
	var x bytes.Buffer
	xml.EscapeText(&x, []byte(secret))
	var h bytes.Buffer
	require.NoError(t, template.Must(template.New("").Parse(`<p title="{{.}}">{{.}}</p>`)).Execute(&h, secret+"+1"))
	for _, text := range []string{secret, url.QueryEscape(secret), fmt.Sprintf("%q", secret), string(js), x.String(), h.String(),
		strings.ReplaceAll(secret, "|", `\|`), "pa$$word", "pa%24%24word", "Authorization: Bearer SECRET2"} {
		out := s.Text("before " + text + " after")
		for _, leak := range []string{"k&ey", "k%26ey", `k\u0026ey`, "k&amp;ey", "pa$$", "pa%24", "SECRET2", "&lt;val"} {
			assert.NotContains(t, out, leak, text)
		}
		assert.Contains(t, out, "before ")
	}
	assert.Equal(t, "short visible-user", s.Text("short visible-user"))

	var b bytes.Buffer
	fmt.Fprintf(s.Writer(&b), "token SECRET2\n")
	require.NoError(t, s.Render(&b, func(w io.Writer) error {
		_, err := io.WriteString(w, "SECR")
		if err == nil {
			_, err = io.WriteString(w, "ET2")
		}
		return err
	}))
	assert.Equal(t, "token REDACTED\nREDACTED", b.String())

	exact := NewSecrets(1)
	exact.AddURL("redis://:p@h")
	assert.Equal(t, "a REDACTED", exact.Text("a p"))
}
