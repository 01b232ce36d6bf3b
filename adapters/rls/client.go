package rls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/redact"
)

// MaxAnswer bounds an answer the client takes (gRPC's maximum receive
// size): a ShouldRateLimit answer for a few descriptors is tens of bytes;
// a larger one is an error, never held in memory.
const MaxAnswer = 64 << 10

// maxHeaderList bounds the metadata (headers and trailers) of an answer.
const maxHeaderList = 64 << 10

// Options say how to call an RLS server.
type Options struct {
	// Domain is the request's domain (not empty).
	Domain string
	// Descriptors are sent with every request, in order; the user's id
	// goes into the value of the first descriptor's IdentityKey entry.
	Descriptors []Descriptor
	IdentityKey string
	// TLS, when not nil, is the connection's TLS (RootCAs nil: the
	// system's roots); nil: plaintext (h2c).
	TLS *tls.Config
	// Metadata are sent with every call (a token: authorization, Bearer
	// …); their values are never shown.
	Metadata metadata.MD
	// Pace, when set, is waited on before every request.
	Pace *adapters.Pacer
	// Timeout bounds every call (default adapters.DefaultTimeout).
	Timeout time.Duration
	// Cost says where a weighted request's cost goes: CostRequest (""
	// too), the request's hits_addend, which every server reads; or
	// CostDescriptor, the first descriptor's own hits_addend, which
	// overrides the request's where a server honours it, and carries an
	// explicit 0 (a check that consumes nothing).
	Cost string
}

// Where a weighted request's cost goes (Options.Cost).
const (
	CostRequest    = "request"
	CostDescriptor = "descriptor"
)

// Check says why o cannot make a request: an empty domain, no
// descriptor, or a first descriptor without the identity's key.
func (o Options) Check() error {
	switch {
	case o.Domain == "":
		return errors.New("--domain is empty: an RLS request names the domain its limits are configured under")
	case len(o.Descriptors) == 0:
		return errors.New("no --descriptor: an RLS request carries at least one")
	case o.IdentityKey == "":
		return errors.New("no --identity descriptor:KEY: which entry carries the user's id")
	case o.Cost != "" && o.Cost != CostRequest && o.Cost != CostDescriptor:
		return fmt.Errorf("--rls-cost %q: want request or descriptor", o.Cost)
	}
	for _, e := range o.Descriptors[0] {
		if e.Key == o.IdentityKey {
			return nil
		}
	}
	return fmt.Errorf("--descriptor %v has no entry %q, which --identity descriptor:%s puts the user's id in", o.Descriptors[0], o.IdentityKey, o.IdentityKey)
}

// CertPool reads PEM certificates (--rls-ca) into a pool.
func CertPool(pem []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("no PEM certificate in it")
	}
	return pool, nil
}

// Client calls an RLS server: each request is one ShouldRateLimit call.
// It is a [contract.CostLimiter] with no Configure, remaining query or
// Reset (those return errors): the policy is the service's own
// ([Client.Overriding] configures it through a descriptor's limit
// override, where the server honours one).
type Client struct {
	addr    string
	opts    Options
	conn    *grpc.ClientConn
	rls     rlsv3.RateLimitServiceClient
	secrets *redact.Secrets
}

// Dial returns a client of the RLS server at addr (HOST:PORT). It does not
// connect: the first call does.
func Dial(addr string, opts Options) (*Client, error) {
	if err := opts.Check(); err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = adapters.DefaultTimeout
	}
	creds := insecure.NewCredentials()
	if opts.TLS != nil {
		creds = credentials.NewTLS(opts.TLS)
	}
	// No retry that a service config could ask for: a call sent twice
	// is a request the limiter counts twice and the grader once. gRPC's
	// transparent retries stay: they send again only a call that never
	// left this client or that the server refused unprocessed (REFUSED_STREAM,
	// or a GOAWAY that the stream came after), which no limiter counted.
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(creds), grpc.WithDisableRetry(),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxAnswer)), grpc.WithMaxHeaderListSize(maxHeaderList))
	if err != nil {
		return nil, fmt.Errorf("rls %s: %w", addr, err)
	}
	secrets := redact.NewSecrets(redact.MinScrubbed)
	for _, vs := range opts.Metadata {
		for _, v := range vs {
			secrets.AddHeader(v)
		}
	}
	return &Client{addr: addr, opts: opts, conn: conn, rls: rlsv3.NewRateLimitServiceClient(conn), secrets: secrets}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// request is the ShouldRateLimit request of user, of weight hits. A unit
// request leaves hits_addend unset (0), as Envoy's HTTP filter sends every
// request no filter gave a cost: rls.proto says unset means 1, and a
// server that reads it as 0 (a request that costs nothing) lets every
// request through behind a real Envoy; sending 1 would hide that.
//
// With Options.Cost CostDescriptor, a weighted request's cost (0
// included) goes in the first descriptor's own hits_addend instead, the
// request's left unset, as Envoy sends a route's hits_addend.
//
// lim, when not nil, is the first descriptor's limit override (the
// grader's Configure, [Overriding]).
func (c *Client) request(user string, hits uint32, lim *commonv3.RateLimitDescriptor_RateLimitOverride) *rlsv3.RateLimitRequest {
	own := c.opts.Cost == CostDescriptor && hits != 1
	req := &rlsv3.RateLimitRequest{Domain: c.opts.Domain}
	if hits != 1 && !own {
		req.HitsAddend = hits
	}
	for i, d := range c.opts.Descriptors {
		desc := &commonv3.RateLimitDescriptor{}
		if i == 0 && own {
			desc.HitsAddend = wrapperspb.UInt64(uint64(hits))
		}
		if i == 0 {
			desc.Limit = lim
		}
		for _, e := range d {
			v := e.Value
			if i == 0 && e.Key == c.opts.IdentityKey {
				v = user
			}
			desc.Entries = append(desc.Entries, &commonv3.RateLimitDescriptor_Entry{Key: e.Key, Value: v})
		}
		req.Descriptors = append(req.Descriptors, desc)
	}
	return req
}

// Do sends one request of weight hits (1: a unit request) as user and
// returns the server's answer as [Decode] reads it (with several
// descriptors, the identity's own status decides), its fields those of
// the first DescriptorStatus, or, with one descriptor, of its
// response_headers_to_add ([WithHeaders]). A gRPC error, an overall code
// UNKNOWN, or an answer of more or fewer statuses than descriptors is an
// error: an unreachable server or a deadline wraps [contract.ErrNoAnswer],
// UNAVAILABLE and INTERNAL [contract.ErrStore].
func (c *Client) Do(ctx context.Context, user string, hits uint32) (*adapters.Response, error) {
	return c.do(ctx, user, hits, nil)
}

func (c *Client) do(ctx context.Context, user string, hits uint32, lim *commonv3.RateLimitDescriptor_RateLimitOverride) (*adapters.Response, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return nil, err
	}
	if c.opts.Pace != nil {
		if err := c.opts.Pace.Wait(ctx); err != nil {
			return nil, fmt.Errorf("waiting for --max-rps: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	if len(c.opts.Metadata) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, c.opts.Metadata)
	}
	sent := time.Now()
	resp, err := c.rls.ShouldRateLimit(ctx, c.request(user, hits, lim))
	returned := time.Now()
	if err != nil {
		return nil, fmt.Errorf("rls %s ShouldRateLimit: %w", c.addr, c.callErr(err))
	}
	allowed, f, err := Decode(resp, len(c.opts.Descriptors))
	if err != nil {
		return nil, fmt.Errorf("rls %s ShouldRateLimit: %w", c.addr, err)
	}
	if len(c.opts.Descriptors) == 1 {
		// With several, the headers a server asks Envoy to add are of the
		// descriptor with the least left (envoyproxy/ratelimit's), not
		// said to be the identity's: its DescriptorStatus alone is graded.
		f = WithHeaders(f, resp, returned)
	}
	for i, e := range f.Errs {
		f.Errs[i] = errors.New(c.secrets.Text(e.Error()))
	}
	return &adapters.Response{Status: int(resp.GetOverallCode()), Allowed: allowed, Sent: sent, Returned: returned, Fields: f}, nil
}

// callErr is a call's error, wrapping the contract's sentinel its status
// says, its message scrubbed of the metadata's values and cut short.
func (c *Client) callErr(err error) error {
	st, _ := status.FromError(err)
	msg := c.secrets.Text(st.Message())
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	msg = strings.ToValidUTF8(msg, "?")
	switch st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return fmt.Errorf("%w: %v: %s", contract.ErrNoAnswer, st.Code(), msg)
	case codes.Internal, codes.ResourceExhausted, codes.Unknown:
		return fmt.Errorf("%w: %v: %s", contract.ErrStore, st.Code(), msg)
	}
	return fmt.Errorf("%v: %s", st.Code(), msg)
}

// AllowRequest implements [contract.RateLimiterContract]: one request.
func (c *Client) AllowRequest(ctx context.Context, user string) (bool, error) {
	r, err := c.Do(ctx, user, 1)
	if err != nil {
		return false, err
	}
	return r.Allowed, nil
}

// AllowRequestN implements [contract.CostLimiter]: one request of
// hits_addend n. The protocol carries no cost below 1 (hits_addend 0
// means 1, and a negative one is a refund, is_negative_hits) nor above
// 2^32-1: those are never sent, and return an error wrapping both
// [contract.ErrInvalidCost] and [errors.ErrUnsupported] (the specs of
// such costs are then skipped, not passed).
func (c *Client) AllowRequestN(ctx context.Context, user string, n int) (bool, error) {
	return c.allowN(ctx, user, n, nil)
}

func (c *Client) allowN(ctx context.Context, user string, n int, lim *commonv3.RateLimitDescriptor_RateLimitOverride) (bool, error) {
	least := 1
	if c.opts.Cost == CostDescriptor {
		least = 0 // a descriptor's own hits_addend carries an explicit 0
	}
	if n < least || n > math.MaxUint32 {
		return false, fmt.Errorf("%w: %w: cost %d: hits_addend carries %d to %d (the request's 0 means 1; --rls-cost descriptor sends a descriptor's own, which carries 0)", contract.ErrInvalidCost, errors.ErrUnsupported, n, least, uint32(math.MaxUint32))
	}
	r, err := c.do(ctx, user, uint32(n), lim)
	if err != nil {
		return false, err
	}
	return r.Allowed, nil
}

// AllowRequestSent is AllowRequest with the instant the request left,
// after the pacing wait: the grader times the service from then.
func (c *Client) AllowRequestSent(ctx context.Context, user string) (bool, time.Time, error) {
	r, err := c.Do(ctx, user, 1)
	if err != nil {
		return false, time.Time{}, err
	}
	return r.Allowed, r.Sent, nil
}

var errRLS = errors.New("an RLS server has no such operation")

// Configure implements [contract.RateLimiterContract]: not supported.
func (c *Client) Configure(context.Context, int, time.Duration) error {
	return fmt.Errorf("Configure: %w", errRLS)
}

// GetRemainingRequests implements [contract.RateLimiterContract]: not
// supported (remaining is read from the answers' limit_remaining).
func (c *Client) GetRemainingRequests(context.Context, string) (int, error) {
	return 0, fmt.Errorf("GetRemainingRequests: %w", errRLS)
}

// Reset implements [contract.RateLimiterContract]: not supported.
func (c *Client) Reset(context.Context, string) error { return fmt.Errorf("Reset: %w", errRLS) }
