package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/bench"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// endpointFlags are the flags of a black-box HTTP service, shared by run,
// identify and bench.
type endpointFlags struct {
	endpoints     list
	policy        string
	identity      string
	method        string
	headers       headerList
	body          string
	limitedStatus int
	maxRPS        int
	fields        string
	bodyData      []byte // --body's contents, read by check
	rlsFlags
}

// blackBoxes is how many services are graded by their answers: the
// --endpoint URLs, or the --rls addresses.
func (f *endpointFlags) blackBoxes() int { return len(f.endpoints) + len(f.rls) }

// maxBodyFile bounds --body: a request body, not a stream (--body
// /dev/zero must not fill the memory).
const maxBodyFile = 16 << 20

func (f *endpointFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.endpoints, "endpoint", "URL of a deployed HTTP service graded as a black box by its answers (2xx allowed, --limited-status refused); repeat for replicas that must share one limit")
	fs.StringVar(&f.policy, "policy", "", "with --endpoint or --rls: the limit the service enforces, `N/W` (10/1s, 100/1m, 1000/1d); default: read from its RateLimit-Policy field")
	fs.StringVar(&f.identity, "identity", "", "with --endpoint: how the service tells clients apart, header:NAME, query:NAME, bearer, json:POINTER (the string an RFC 6901 JSON Pointer names in the JSON --body) or form:NAME (a field of a form --body); the grader makes a fresh identity per user; or none: one limit shared by every request (specs then wait the window out between them)")
	fs.StringVar(&f.method, "method", "", "with --endpoint: the request method (default GET, or POST when a --body is sent)")
	fs.Var(&f.headers, "header", "with --endpoint: a `Name:value` header for every request (repeatable; authentication, say)")
	fs.StringVar(&f.body, "body", "", "with --endpoint: send the contents of `FILE` (at most 16 MiB) with every request; with --identity json: or form:, each user's id in its place")
	fs.IntVar(&f.limitedStatus, "limited-status", 429, "with --endpoint: the status of a refusal; any other non-2xx answer is an error of the service, never a decision")
	fs.StringVar(&f.fields, "fields", "", "with --endpoint: where the answers tell the limit's state: headers (the default: Retry-After, RateLimit, X-RateLimit-*), or json:`REMAINING,RESET[,LIMIT]`, RFC 6901 JSON Pointers into the answer's JSON body (Envoy's ratelimit: json:/statuses/0/limitRemaining,/statuses/0/durationUntilReset,/statuses/0/currentLimit); RESET in seconds (a number, or a protobuf duration \"12s\"), LIMIT a count or {requestsPerUnit, unit}")
	f.registerRLS(fs)
	fs.IntVar(&f.maxRPS, "max-rps", 0, fmt.Sprintf("with --endpoint or --rls: at most this many requests in any one second, over every replica, up to %d (0: max(50, 2N+8), at most %d)", bench.MaxRate, targets.DefaultMaxRPS))
}

// check reports flags that do not go together, an --identity that does
// not parse, and a --body that cannot carry it (read here, into bodyData).
func (f *endpointFlags) check() error {
	if f.rlsGiven() {
		if err := f.checkRLS(f); err != nil {
			return err
		}
		switch {
		case f.maxRPS < 0:
			return errors.New("--max-rps must not be negative")
		case f.maxRPS > bench.MaxRate:
			return fmt.Errorf("--max-rps %d: more than %d requests a second", f.maxRPS, bench.MaxRate)
		}
		return nil
	}
	switch {
	case len(f.endpoints) > 0 && f.identity == "":
		return errors.New("--endpoint needs --identity: how the service tells clients apart (header:NAME, query:NAME, bearer, json:POINTER or form:NAME), or none")
	case len(f.endpoints) == 0 && (f.policy != "" || f.identity != "" || len(f.headers) > 0 || f.body != "" || f.maxRPS != 0 || f.fields != ""):
		return errors.New("--policy, --identity, --header, --body, --fields and --max-rps go with --endpoint")
	case f.maxRPS < 0:
		return errors.New("--max-rps must not be negative")
	case len(f.endpoints) > 0 && statusIn(f.limitedStatus) != nil:
		return statusIn(f.limitedStatus)
	case f.maxRPS > bench.MaxRate:
		return fmt.Errorf("--max-rps %d: more than %d requests a second", f.maxRPS, bench.MaxRate)
	case len(f.endpoints) == 0:
		return nil
	}
	identity, err := adapters.ParseIdentity(f.identity)
	if err != nil {
		return fmt.Errorf("--identity: %w", err)
	}
	if _, err := adapters.ParseFieldSource(f.fields); err != nil {
		return fmt.Errorf("--fields: %w", err)
	}
	if f.body != "" {
		if f.bodyData, err = readBody(f.body); err != nil {
			return fmt.Errorf("--body: %w", err)
		}
	}
	if err := identity.ValidateBody(f.bodyData); err != nil {
		return fmt.Errorf("--identity %v: %w", identity, err)
	}
	return nil
}

// readBody reads the --body file, at most maxBodyFile bytes.
func readBody(path string) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	b, err := io.ReadAll(io.LimitReader(file, maxBodyFile+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(b) > maxBodyFile {
		return nil, fmt.Errorf("%s: more than %d bytes (16 MiB)", path, maxBodyFile)
	}
	return b, nil
}

// target builds the endpoint target, reading its policy from the first
// answer when --policy is not given; nil and the exit code when it
// cannot. gradable, when not nil, says why the command cannot grade the
// policy at the target's pace (requests a second, 0: no bound).
func (f *endpointFlags) target(timeout time.Duration, gradable func(p adapters.Policy, rps int) error, stderr io.Writer) (*suite.Target, adapters.Policy, int) {
	if len(f.rls) > 0 {
		return f.rlsTarget(timeout, gradable, stderr)
	}
	identity, err := adapters.ParseIdentity(f.identity)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform: --identity: %v\n", err)
		return nil, adapters.Policy{}, ExitCannotRun
	}
	fields, err := adapters.ParseFieldSource(f.fields)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform: --fields: %v\n", err)
		return nil, adapters.Policy{}, ExitCannotRun
	}
	method := f.method
	if method == "" {
		method = http.MethodGet
		if len(f.bodyData) > 0 || identity.Kind == "json" || identity.Kind == "form" {
			method = http.MethodPost // a request with a body, as curl -d sends it
		}
	}
	opts := targets.EndpointOptions{EndpointOptions: adapters.EndpointOptions{
		Method: method, Identity: identity, LimitedStatus: f.limitedStatus, Timeout: timeout, Header: http.Header{}, Body: f.bodyData,
		Fields: fields,
	}, MaxRPS: f.maxRPS}
	for _, h := range f.headers {
		k, v, _ := strings.Cut(h, ":")
		opts.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return f.policyTarget(timeout, gradable, stderr, func(ctx context.Context, given adapters.Policy) (suite.Target, adapters.Policy, string, error) {
		opts.Policy = given
		return targets.Endpoint(ctx, f.endpoints, opts)
	}, func(t suite.Target, policy adapters.Policy, from string) string {
		return fmt.Sprintf("%s as a black box: policy %v (from %s), identities by %v, refusals are %d, fields from %v", t.Name, policy, from, identity, opts.LimitedStatus, fields)
	})
}

// policyTarget builds a target graded at a fixed policy (an endpoint, an
// RLS server): the --policy flag parsed and given to build, which has
// three call timeouts, the policy it settles on checked as gradable, and
// said (the line that describes the target, its policy and where that
// came from), with what --max-rps allows; every refusal is said on
// stderr.
func (f *endpointFlags) policyTarget(timeout time.Duration, gradable func(p adapters.Policy, rps int) error, stderr io.Writer,
	build func(ctx context.Context, given adapters.Policy) (suite.Target, adapters.Policy, string, error), said func(t suite.Target, policy adapters.Policy, from string) string) (*suite.Target, adapters.Policy, int) {
	var given adapters.Policy
	if f.policy != "" {
		var err error
		if given, err = adapters.ParsePolicy(f.policy); err != nil {
			fmt.Fprintf(stderr, "rlconform: --policy: %v\n", err)
			return nil, adapters.Policy{}, ExitCannotRun
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*timeout)
	defer cancel()
	t, policy, from, err := build(ctx, given)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform: %v\n", err)
		return nil, adapters.Policy{}, ExitCannotRun
	}
	if gradable != nil {
		if err := gradable(policy, t.MaxRPS); err != nil {
			fmt.Fprintf(stderr, "rlconform: %s: the policy %v (from %s) cannot be graded: %v\n", t.Name, policy, from, err)
			return nil, adapters.Policy{}, ExitCannotRun
		}
	}
	fmt.Fprintln(stderr, "rlconform:", said(t, policy, from))
	if f.maxRPS == 0 && t.MaxRPS < 2*policy.Limit+8 {
		fmt.Fprintf(stderr, "rlconform: at most %d requests a second (the default cap; --max-rps raises it): the specs' bursts of up to 2N+8 = %d requests are spread over %.1f s or more, each request timed from when it leaves\n",
			t.MaxRPS, 2*policy.Limit+8, float64(2*policy.Limit+8)/float64(t.MaxRPS))
	}
	return &t, policy, ExitConformant
}

// paceFits says why an endpoint of policy p cannot be graded when sent at
// most rps requests in any one second (0: no bound; defaulted: the default
// cap, not --max-rps) within maxDuration (0: no bound), or nil. Both
// refusals are certain, not estimates: a run whose specs take longer stops
// at --max-duration with what finished.
//
//   - The limit must be exceeded within one window: at rps a second, a
//     window of W holds at most rps·⌈W/1s⌉ requests, and that must reach
//     N+1.
//   - Sending those N+1 requests takes at least ⌊N/rps⌋ seconds, which
//     must fit in maxDuration.
func paceFits(p adapters.Policy, rps int, defaulted bool, maxDuration time.Duration) error {
	if rps <= 0 {
		return nil
	}
	pace := fmt.Sprintf("--max-rps %d", rps)
	if defaulted {
		pace = fmt.Sprintf("the default cap of %d requests a second (--max-rps raises it)", rps)
	}
	secs := max(1, int64((p.Window+time.Second-1)/time.Second))
	most, need := int64(rps)*secs, int64(p.Limit)+1
	if most < need {
		return fmt.Errorf("at %s a window of %v holds at most %d × %d s = %d requests, fewer than the N+1 = %d it takes to exceed the limit: nothing could be graded; give --max-rps %d or more",
			pace, p.Window, rps, secs, most, need, (need+secs-1)/secs)
	}
	if least := time.Duration(int64(p.Limit)/int64(rps)) * time.Second; maxDuration > 0 && least > maxDuration {
		return fmt.Errorf("at %s, sending the N+1 = %d requests that exceed the limit takes at least ⌊%d/%d⌋ s = %v, more than --max-duration %v",
			pace, need, p.Limit, rps, least, maxDuration)
	}
	return nil
}

// headerList is a repeatable Name:value flag (values may hold commas).
type headerList []string

func (l *headerList) String() string { return strings.Join(*l, "; ") }

// Set adds one Name:value header.
func (l *headerList) Set(v string) error {
	k, _, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("header %q: want Name:value", v)
	}
	*l = append(*l, v)
	return nil
}
