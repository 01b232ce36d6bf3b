package rls

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rlconform/rlconform/contract"
)

// Decision is what a limiter decided of one descriptor's request. With
// Fields, its state is sent: current_limit (Limit per Window),
// limit_remaining (Remaining) and duration_until_reset (Reset); without,
// the code alone.
type Decision struct {
	Allowed   bool
	Fields    bool
	Limit     int
	Window    time.Duration
	Remaining int
	Reset     time.Duration
}

// Decider decides a request of weight hits of user: 1 or more, or 0 when
// a descriptor's own hits_addend is an explicit 0 (a check that consumes
// nothing).
type Decider func(ctx context.Context, user string, hits int) (Decision, error)

// LimiterDecider decides with any limiter: AllowRequest, or AllowRequestN
// for any other hits (0 included) when lim is a [contract.CostLimiter]
// (otherwise such a request is an error); it sends no fields.
func LimiterDecider(lim contract.RateLimiterContract) Decider {
	return func(ctx context.Context, user string, hits int) (Decision, error) {
		if hits == 1 {
			ok, err := lim.AllowRequest(ctx, user)
			return Decision{Allowed: ok}, err
		}
		cl, ok := lim.(contract.CostLimiter)
		if !ok {
			return Decision{}, status.Errorf(codes.Unimplemented, "this limiter takes no hits_addend but 1")
		}
		allowed, err := cl.AllowRequestN(ctx, user, hits)
		return Decision{Allowed: allowed}, err
	}
}

// ServerOptions say how to serve.
type ServerOptions struct {
	// Key is the descriptor entry whose value names the user; a
	// descriptor without it is answered OK with no limit, as Envoy's
	// ratelimit answers a descriptor no rule matches.
	Key string
	// Token, when not empty, is asked of every call: metadata
	// authorization: Bearer TOKEN.
	Token string
	// TLS, when not nil, serves over TLS (nil: plaintext, h2c).
	TLS *tls.Config
	// Intercept, when not nil, sees each call after the token check and
	// before the server decides it; it may answer itself (a test's
	// server, or serve's mutant of a server that reads an unset
	// hits_addend as 0).
	Intercept grpc.UnaryServerInterceptor
	// DecideOverride, when not nil, decides a descriptor that carries a
	// limit override (RateLimitDescriptor.limit) by it: n per w, as
	// envoyproxy/ratelimit honours one. Nil: the override is ignored, and
	// the descriptor decided as any other.
	DecideOverride func(ctx context.Context, user string, hits, n int, w time.Duration) (Decision, error)
}

// maxDescriptors bounds the descriptors of one request the server decides.
const maxDescriptors = 64

// Server is an RLS server on a TCP address.
type Server struct {
	// Addr is the address it listens on (HOST:PORT).
	Addr string
	srv  *grpc.Server
	rlsv3.UnimplementedRateLimitServiceServer
	decide Decider
	opts   ServerOptions
}

// Listen serves decide as an RLS server on addr (127.0.0.1:0 picks a
// port) until Close.
func Listen(addr string, decide Decider, opts ServerOptions) (*Server, error) {
	if opts.Key == "" {
		return nil, errors.New("rls server: no descriptor key names the user")
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("rls server: %w", err)
	}
	s := &Server{Addr: l.Addr().String(), decide: decide, opts: opts}
	chain := []grpc.UnaryServerInterceptor{s.authorize}
	if opts.Intercept != nil {
		chain = append(chain, opts.Intercept)
	}
	serverOpts := []grpc.ServerOption{grpc.MaxRecvMsgSize(MaxAnswer), grpc.MaxHeaderListSize(maxHeaderList), grpc.ChainUnaryInterceptor(chain...)}
	if opts.TLS != nil {
		serverOpts = append(serverOpts, grpc.Creds(credentials.NewTLS(opts.TLS)))
	}
	s.srv = grpc.NewServer(serverOpts...)
	rlsv3.RegisterRateLimitServiceServer(s.srv, s)
	go s.srv.Serve(l) //nolint:errcheck // ends with Close
	return s, nil
}

// Close stops the server.
func (s *Server) Close() { s.srv.Stop() }

// authorize refuses a call without the token, when there is one.
func (s *Server) authorize(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	if s.opts.Token != "" {
		md, _ := metadata.FromIncomingContext(ctx)
		got := ""
		if vs := md.Get("authorization"); len(vs) == 1 {
			got = vs[0]
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte("Bearer "+s.opts.Token)) != 1 {
			return nil, status.Error(codes.Unauthenticated, "authorization: Bearer and the server's token wanted")
		}
	}
	return next(ctx, req)
}

// ShouldRateLimit implements the RLS: each descriptor that names the user
// is decided on its own; the overall code is OVER_LIMIT when any is.
func (s *Server) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	switch {
	case req.GetDomain() == "":
		return nil, status.Error(codes.InvalidArgument, "an empty domain")
	case len(req.GetDescriptors()) == 0:
		return nil, status.Error(codes.InvalidArgument, "no descriptor")
	case len(req.GetDescriptors()) > maxDescriptors:
		return nil, status.Errorf(codes.InvalidArgument, "%d descriptors, more than %d", len(req.GetDescriptors()), maxDescriptors)
	}
	hits := max(1, int(req.GetHitsAddend())) // 0 means 1
	resp := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK}
	for _, d := range req.GetDescriptors() {
		st := &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK}
		resp.Statuses = append(resp.Statuses, st)
		user, ok := "", false
		for _, e := range d.GetEntries() {
			if e.GetKey() == s.opts.Key {
				user, ok = e.GetValue(), true
			}
		}
		if !ok {
			continue
		}
		hits := hits
		if own := d.GetHitsAddend(); own != nil {
			// A descriptor's own hits_addend overrides the request's,
			// an explicit 0 included (a check that consumes nothing).
			if own.GetValue() > math.MaxUint32 {
				return nil, status.Errorf(codes.InvalidArgument, "a descriptor's hits_addend %d, more than %d", own.GetValue(), uint32(math.MaxUint32))
			}
			hits = int(own.GetValue())
		}
		dec, err := s.decideOne(ctx, d, user, hits)
		if err != nil {
			if _, isStatus := status.FromError(err); isStatus {
				return nil, err
			}
			code := codes.Unavailable
			if errors.Is(err, contract.ErrInvalidUserID) {
				code = codes.InvalidArgument
			}
			return nil, status.Error(code, err.Error())
		}
		if !dec.Allowed {
			st.Code, resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT, rlsv3.RateLimitResponse_OVER_LIMIT
		}
		if dec.Fields {
			fill(st, dec)
		}
	}
	return resp, nil
}

// decideOne decides a descriptor of user: by its limit override when it
// carries one and the server honours them.
func (s *Server) decideOne(ctx context.Context, d *commonv3.RateLimitDescriptor, user string, hits int) (Decision, error) {
	lim := d.GetLimit()
	if lim == nil || s.opts.DecideOverride == nil {
		return s.decide(ctx, user, hits)
	}
	n, w, err := limitOf(&rlsv3.RateLimitResponse_RateLimit{RequestsPerUnit: lim.GetRequestsPerUnit(),
		Unit: rlsv3.RateLimitResponse_RateLimit_Unit(lim.GetUnit()), UnitMultiplier: lim.GetUnitMultiplier()})
	if err == nil {
		err = contract.ValidateConfig(n, w)
	}
	if err != nil {
		return Decision{}, status.Errorf(codes.InvalidArgument, "a descriptor's limit override: %v", err)
	}
	return s.opts.DecideOverride(ctx, user, hits, n, w)
}

// fill writes a decision's state into its status: current_limit in the
// largest unit the window is a whole number of (SECOND with a
// multiplier), limit_remaining, duration_until_reset. A window of no
// whole seconds has no unit: no field is sent.
func fill(st *rlsv3.RateLimitResponse_DescriptorStatus, d Decision) {
	if d.Window <= 0 || d.Window%time.Second != 0 || d.Limit < 0 || d.Limit > 1<<32-1 {
		return
	}
	lim := &rlsv3.RateLimitResponse_RateLimit{RequestsPerUnit: uint32(d.Limit)}
	for u, w := range units {
		if w == d.Window {
			lim.Unit = u
		}
	}
	if lim.Unit == rlsv3.RateLimitResponse_RateLimit_UNKNOWN {
		secs := d.Window / time.Second
		if secs > 1<<32-1 {
			return
		}
		lim.Unit, lim.UnitMultiplier = rlsv3.RateLimitResponse_RateLimit_SECOND, wrapperspb.UInt32(uint32(secs))
	}
	st.CurrentLimit = lim
	st.LimitRemaining = uint32(max(0, min(d.Remaining, 1<<32-1)))
	st.DurationUntilReset = durationpb.New(max(0, d.Reset))
}
