package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"

	"github.com/rlconform/rlconform/internal/redact"
)

// Environment variables that hold tokens.
const (
	// envServeToken is the token rlconform serve asks of every request,
	// when --token-file is not given.
	envServeToken = "RLCONFORM_TOKEN"
	// envTargetToken is the token run, identify and bench send to a
	// --target, when --target-token-file is not given.
	envTargetToken = "RLCONFORM_TARGET_TOKEN"
)

// maxTokenBytes bounds a token file: a token is a line, not a document.
const maxTokenBytes = 4096

// commandSecrets are the secrets a command line holds, collected before
// its flags are parsed (the flag package quotes a value it refuses): the
// secrets of every --target, --endpoint and --store-url URL, every
// --header and --rls-header value, the tokens of the environment and REDIS_URL's password.
// Everything the command prints and writes goes through it.
func commandSecrets(args []string) *redact.Secrets {
	s := redact.NewSecrets(redact.MinScrubbed)
	s.Add(os.Getenv(envServeToken))
	s.Add(os.Getenv(envTargetToken))
	for _, u := range strings.Split(os.Getenv("REDIS_URL"), ",") {
		s.AddURL(u)
	}
	for i, a := range args {
		name, value, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			continue
		}
		if !inline && i+1 < len(args) {
			value = args[i+1]
		}
		switch name {
		case "target", "endpoint", "store-url":
			s.AddURL(value)
		case "header", "rls-header":
			if _, v, ok := strings.Cut(value, ":"); ok {
				value = v
			}
			s.AddHeader(value)
		}
	}
	return s
}

// underlying is the writer beneath the wrappers of w (the terminal a
// scrubbing writer writes to, say).
func underlying(w io.Writer) io.Writer {
	for {
		u, ok := w.(interface{ Unwrap() io.Writer })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

// readToken reads a bearer token from the file at path, or, when path is
// empty, from the environment variable env ("" and no error when neither
// gives one). A token is one line of visible ASCII, at most maxTokenBytes
// long; a trailing newline is dropped. It is added to secrets, so that it
// is never shown.
func readToken(flagName, path, env string, secrets *redact.Secrets) (string, error) {
	token, from := os.Getenv(env), env
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("%s: %w", flagName, err)
		}
		defer f.Close()
		raw, err := io.ReadAll(io.LimitReader(f, maxTokenBytes+3))
		if err != nil {
			return "", fmt.Errorf("%s: %w", flagName, err)
		}
		token, from = strings.TrimSuffix(strings.TrimSuffix(string(raw), "\n"), "\r"), flagName+" "+path
	} else if token == "" {
		return "", nil
	}
	secrets.Add(token)
	switch {
	case token == "":
		return "", fmt.Errorf("%s is empty: a token must not be", from)
	case len(token) > maxTokenBytes:
		return "", fmt.Errorf("%s holds over %d bytes: a token is one short line", from, maxTokenBytes)
	case strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r > '~' }):
		return "", fmt.Errorf("%s holds a space, a control character or a byte beyond ASCII (or more than one line): a token goes in an HTTP header, Authorization: Bearer TOKEN", from)
	}
	return token, nil
}

// targetToken is the --target-token-file flag of run, identify and bench.
type targetToken struct{ file string }

func (t *targetToken) register(fs *flag.FlagSet) {
	fs.StringVar(&t.file, "target-token-file", "", "with --target: send the token in `FILE` as Authorization: Bearer on every request (default: $"+envTargetToken+"), for a server started with rlconform serve --token-file; it is never shown")
}

// read is the token to send to the targets: none with no target (an --exec
// service is the run's own, an --endpoint takes --header).
func (t *targetToken) read(targets int, secrets *redact.Secrets) (string, error) {
	if targets == 0 {
		if t.file != "" {
			return "", errors.New("--target-token-file goes with --target (an --endpoint takes --header 'Authorization: Bearer ...')")
		}
		return "", nil
	}
	return readToken("--target-token-file", t.file, envTargetToken, secrets)
}

// loopback reports whether addr (host:port, as --addr takes it) listens
// on this machine only: a host of 127.0.0.0/8, ::1 or localhost. An empty
// host (":8080"), 0.0.0.0 and :: listen on every interface; any other
// name may resolve to anything.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// removedNote is the note a report carries when the addresses it shows
// had secrets replaced: which, and where they go back to run it again.
func removedNote(urls []string) string {
	var what []string
	for _, u := range urls {
		_, removed := redact.Removed(u)
		for _, r := range removed {
			if !slices.Contains(what, r) {
				what = append(what, r)
			}
		}
	}
	if len(what) == 0 {
		return ""
	}
	return fmt.Sprintf("the addresses are shown with their secrets as %s (%s): to run this again, put each back in place of %s; --header values and tokens are never shown",
		redact.Mark, strings.Join(what, ", "), redact.Mark)
}
