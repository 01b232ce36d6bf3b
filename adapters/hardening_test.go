package adapters

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/internal/testaddr"
	"github.com/rlconform/rlconform/model"
)

// post sends body to path of the server at base and returns the status.
func post(t *testing.T, base, path, body string, header http.Header) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// Go's decoder turns an escaped lone surrogate into U+FFFD, so "a\ud800"
// and "a\udbff" would be one user: the server refuses them, and takes
// surrogate pairs and escaped backslashes.
func TestServerRefusesLoneSurrogates(t *testing.T) {
	lim, err := model.NewLimiter(fakeclock.Real{}, 1, time.Minute)
	require.NoError(t, err)
	srv, err := NewServer(lim, nil)
	require.NoError(t, err)
	defer srv.Close()
	for body, want := range map[string]int{
		`{"user_id":"a\ud800"}`:          400,
		`{"user_id":"a\udbff"}`:          400,
		`{"user_id":"a\udc00"}`:          400,
		`{"user_id":"\ud800\ud800"}`:     400,
		`{"user_id":"\ud800x"}`:          400,
		`{"user_id":"pair\ud83d\ude00"}`: 200,
		`{"user_id":"slash\\ud800"}`:     200, // a backslash, then "ud800"
		`{"user_id":"plain\u00e9"}`:      200,
		"{\"user_id\":\"lit\uFFFD\"}":    200, // U+FFFD itself is a character
	} {
		assert.Equal(t, want, post(t, srv.URL, PathAllow, body, nil), body)
	}
	assert.Equal(t, 413, post(t, srv.URL, PathAllow, `{"user_id":"`+strings.Repeat("x", maxRequestBody)+`"}`, nil))
}

// A server with a token answers 401 to every request without it, and
// serves the client that sends it.
func TestTokenIsRequiredAndSent(t *testing.T) {
	lim, err := model.NewLimiter(fakeclock.Real{}, 5, time.Minute)
	require.NoError(t, err)
	srv, err := ListenWith("127.0.0.1:0", lim, nil, ServerOptions{Token: "s3cret-token"})
	require.NoError(t, err)
	defer srv.Close()
	for _, auth := range []string{"", "Bearer wrong", "Bearer s3cret-token2", "s3cret-token", "Basic s3cret-token"} {
		h := http.Header{}
		if auth != "" {
			h.Set("Authorization", auth)
		}
		assert.Equal(t, http.StatusUnauthorized, post(t, srv.URL, PathAllow, `{"user_id":"u"}`, h), auth)
	}
	resp, err := http.Get(srv.URL + PathCapabilities)
	require.NoError(t, err)
	var body errorBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body), "a 401 is a JSON error")
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.NotContains(t, body.Error, "s3cret")

	_, err = NewClient(srv.URL, ClientOptions{}).AllowRequest(context.Background(), "u")
	assert.ErrorContains(t, err, "status 401")
	ok, err := NewClient(srv.URL, ClientOptions{Token: "s3cret-token"}).AllowRequest(context.Background(), "u")
	require.NoError(t, err)
	assert.True(t, ok)
}

// A base URL's query goes with every request, after the protocol's path;
// errors show the URL with its secrets redacted, net/http's too.
func TestClientKeepsTheBaseQueryAndHidesItsSecrets(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.Path+"?"+r.URL.RawQuery)
		w.Write([]byte(`{"allowed":true}`))
	}))
	defer srv.Close()
	_, err := NewClient(srv.URL+"/base/?api_key=SECRETVALUE", ClientOptions{}).AllowRequest(context.Background(), "u")
	require.NoError(t, err)
	assert.Equal(t, []string{"/base" + PathAllow + "?api_key=SECRETVALUE"}, got)

	for _, base := range []string{"http://" + testaddr.Refused(t) + "/?api_key=SECRETVALUE", "http://u:SECRETVALUE@" + testaddr.Refused(t), "http://h/\x7f?token=SECRETVALUE"} {
		_, err = NewClient(base, ClientOptions{}).AllowRequest(context.Background(), "u")
		require.Error(t, err, base)
		assert.NotContains(t, err.Error(), "SECRETVALUE", base)
	}
	e := NewEndpoint("http://"+testaddr.Refused(t)+"/x?api_key=SECRETVALUE", EndpointOptions{Identity: Identity{Kind: "query", Name: "user"}})
	_, err = e.Do(context.Background(), "u")
	require.ErrorIs(t, err, contract.ErrNoAnswer)
	assert.NotContains(t, err.Error(), "SECRETVALUE")

	// A careless server echoes what it was sent in its error body.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		json.NewEncoder(w).Encode(errorBody{"bad " + r.URL.RawQuery + " " + r.Header.Get("Authorization") + " " + r.Header.Get("X-Key")})
	}))
	defer echo.Close()
	_, err = NewClient(echo.URL+"/?token=SECRETVALUE", ClientOptions{Token: "SECRET-TOKEN"}).AllowRequest(context.Background(), "u")
	require.ErrorIs(t, err, contract.ErrStore)
	assert.NotContains(t, err.Error(), "SECRET")
	_, err = NewEndpoint(echo.URL+"/?api_key=SECRETVALUE", EndpointOptions{Header: http.Header{"X-Key": {"SECRET-HEADER"}}}).Do(context.Background(), "u")
	require.ErrorContains(t, err, "503")
	assert.NotContains(t, err.Error(), "SECRET")
}

// An answer over maxBody is refused as malformed, not read whole nor
// decoded cut.
func TestClientBoundsAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"allowed":true,"pad":"`+strings.Repeat("x", maxBody)+`"}`)
	}))
	defer srv.Close()
	_, err := NewClient(srv.URL, ClientOptions{}).AllowRequest(context.Background(), "u")
	assert.ErrorContains(t, err, "over 1048576 bytes")
}
