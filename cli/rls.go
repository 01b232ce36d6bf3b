package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/adapters/rls"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// rlsFlags are the flags of an RLS server (Envoy's rate limit service
// protocol over gRPC), graded as an endpoint is; --identity, --policy and
// --max-rps are the endpoint's.
type rlsFlags struct {
	rls         list
	domain      string
	descriptors repeated
	rlsTLS      bool
	rlsCA       string
	rlsHeaders  headerList
	rlsCost     string
	rlsConfig   string
	caPEM       []byte // --rls-ca's contents, read by checkRLS
}

// maxCAFile bounds --rls-ca: certificates, not a stream.
const maxCAFile = 1 << 20

func (f *rlsFlags) registerRLS(fs *flag.FlagSet) {
	fs.Var(&f.rls, "rls", "`HOST:PORT` of an RLS server (Envoy's rate limit service, envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit, over gRPC) graded as Envoy calls it: OK allowed, OVER_LIMIT denied; repeat for replicas that must share one limit; needs --domain, --descriptor and --identity descriptor:KEY (docs/rls.md)")
	fs.StringVar(&f.domain, "domain", "", "with --rls: the domain of every request")
	fs.Var(&f.descriptors, "descriptor", "with --rls: a descriptor `KEY=VALUE,...` sent with every request (repeatable, in order); --identity descriptor:KEY puts the user's id into the first one's KEY entry, the others are sent as given")
	fs.BoolVar(&f.rlsTLS, "rls-tls", false, "with --rls: connect over TLS, trusting the system's roots (or --rls-ca)")
	fs.StringVar(&f.rlsCA, "rls-ca", "", "with --rls: connect over TLS, trusting the PEM certificates in `FILE`")
	fs.StringVar(&f.rlsCost, "rls-cost", rls.CostRequest, "with --rls: where a weighted request's cost goes: `request`, the request's hits_addend, which every server reads (0 means 1, so a cost of 0 is not sent); or descriptor, the first descriptor's own hits_addend, which overrides the request's where the server honours it (envoyproxy/ratelimit does; Envoy sends a route's hits_addend so), and carries an explicit 0: strict/cost-zero then runs")
	fs.StringVar(&f.rlsConfig, "rls-configure", "none", "with --rls: how the grader configures the server: `none` (its rules alone: the specs of Configure are skipped), or limit, the first descriptor's limit override (RateLimitDescriptor.limit, as an Envoy route sends one), which envoyproxy/ratelimit honours: one request checks that it does, and Configure is then graded with windows of one unit (1s, 1m, 1h, 24h)")
	fs.Var(&f.rlsHeaders, "rls-header", "with --rls: `name: value` metadata sent with every call (repeatable; a token: 'authorization: Bearer …'); values are never shown")
}

// rlsSent says what an --rls run sends, for messages: "" without --rls.
func (f *rlsFlags) rlsSent() string {
	if len(f.rls) == 0 {
		return ""
	}
	return fmt.Sprintf("sent: domain %q, descriptors %v", f.domain, f.descriptors)
}

// rlsGiven says whether any flag of --rls is given.
func (f *rlsFlags) rlsGiven() bool {
	return len(f.rls) > 0 || f.domain != "" || len(f.descriptors) > 0 || f.rlsTLS || f.rlsCA != "" || len(f.rlsHeaders) > 0 || f.rlsCost != rls.CostRequest || f.rlsConfig != "none"
}

// checkRLS reports --rls flags that do not go together or do not parse,
// with the endpoint's flags ep (--identity must be descriptor:KEY), and
// reads --rls-ca.
func (f *rlsFlags) checkRLS(ep *endpointFlags) error {
	switch {
	case len(f.rls) == 0 && f.rlsGiven():
		return errors.New("--domain, --descriptor, --rls-tls, --rls-ca, --rls-header, --rls-cost and --rls-configure go with --rls")
	case len(f.rls) == 0:
		return nil
	case len(ep.endpoints) > 0:
		return errors.New("--rls and --endpoint exclude each other: an RLS server over gRPC, or an HTTP service")
	case len(ep.headers) > 0 || ep.body != "" || ep.method != "" || ep.fields != "" || ep.limitedStatus != 429:
		return errors.New("--header, --body, --method, --fields and --limited-status go with --endpoint; an --rls server takes --rls-header, and its answers' fields are its DescriptorStatus")
	case ep.identity == "":
		return errors.New("--rls needs --identity descriptor:KEY: the descriptor entry whose value is the user's id")
	case f.rlsConfig != "none" && f.rlsConfig != "limit":
		return fmt.Errorf("--rls-configure %q: want none or limit", f.rlsConfig)
	}
	_, err := f.rlsOptions(ep.identity)
	if err != nil {
		return err
	}
	if f.rlsCA != "" {
		if f.caPEM, err = readBounded(f.rlsCA, maxCAFile); err != nil {
			return fmt.Errorf("--rls-ca: %w", err)
		}
		if _, err := rls.CertPool(f.caPEM); err != nil {
			return fmt.Errorf("--rls-ca %s: %w", f.rlsCA, err)
		}
	}
	return nil
}

// rlsOptions are the client's options the flags give (TLS aside).
func (f *rlsFlags) rlsOptions(identity string) (rls.Options, error) {
	key, err := rls.ParseIdentity(identity)
	if err != nil {
		return rls.Options{}, fmt.Errorf("--identity: %w", err)
	}
	opts := rls.Options{Domain: f.domain, IdentityKey: key, Metadata: metadata.MD{}, Cost: f.rlsCost}
	for _, d := range f.descriptors {
		desc, err := rls.ParseDescriptor(d)
		if err != nil {
			return rls.Options{}, fmt.Errorf("--descriptor: %w", err)
		}
		opts.Descriptors = append(opts.Descriptors, desc)
	}
	for _, h := range f.rlsHeaders {
		k, v, _ := strings.Cut(h, ":")
		k = strings.ToLower(strings.TrimSpace(k))
		switch {
		case k == "" || strings.TrimLeft(k, "abcdefghijklmnopqrstuvwxyz0123456789-_.") != "":
			return rls.Options{}, fmt.Errorf("--rls-header %q: a metadata name is letters, digits, -, _ and . (lower-cased)", k)
		case strings.HasPrefix(k, "grpc-"):
			return rls.Options{}, fmt.Errorf("--rls-header %s: a name gRPC keeps for itself", k)
		}
		opts.Metadata.Append(k, strings.TrimSpace(v))
	}
	if err := opts.Check(); err != nil {
		return rls.Options{}, err
	}
	return opts, nil
}

// readBounded reads the file at path, at most most bytes.
func readBounded(path string, most int64) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	b, err := io.ReadAll(io.LimitReader(file, most+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(b)) > most {
		return nil, fmt.Errorf("%s: more than %d bytes", path, most)
	}
	return b, nil
}

// rlsTarget builds the --rls target, as endpointFlags.target builds an
// endpoint's.
func (f *endpointFlags) rlsTarget(timeout time.Duration, gradable func(p adapters.Policy, rps int) error, stderr io.Writer) (*suite.Target, adapters.Policy, int) {
	opts, err := f.rlsOptions(f.identity)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform: %v\n", err)
		return nil, adapters.Policy{}, ExitCannotRun
	}
	opts.Timeout = timeout
	if f.rlsTLS || f.caPEM != nil {
		opts.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		if f.caPEM != nil {
			opts.TLS.RootCAs, _ = rls.CertPool(f.caPEM) // checked by checkRLS
		}
	}
	return f.policyTarget(timeout, gradable, stderr, func(ctx context.Context, given adapters.Policy) (suite.Target, adapters.Policy, string, error) {
		return targets.RLS(ctx, f.rls, targets.RLSOptions{Options: opts, MaxRPS: f.maxRPS, Policy: given, ConfigureLimit: f.rlsConfig == "limit"})
	}, func(t suite.Target, policy adapters.Policy, from string) string {
		return fmt.Sprintf("%s as Envoy calls it: policy %v (from %s), domain %q, descriptors %v, identities in %s", t.Name, policy, from, opts.Domain, f.descriptors, f.identity)
	})
}

// repeated is a repeatable flag whose values may hold commas.
type repeated []string

func (l *repeated) String() string { return strings.Join(*l, " ") }

// Set adds one value.
func (l *repeated) Set(v string) error {
	*l = append(*l, v)
	return nil
}
