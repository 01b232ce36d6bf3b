package rls

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rlconform/rlconform/contract"
)

// answerFunc is an RLS server that answers every call with its function.
type answerFunc func(*rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error)

type rawServer struct {
	rlsv3.UnimplementedRateLimitServiceServer
	answer answerFunc
}

func (s rawServer) ShouldRateLimit(_ context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	return s.answer(req)
}

// serveRaw serves answer on a loopback port and returns a client of it
// for opts (one descriptor user=x by default).
func serveRaw(t *testing.T, answer answerFunc, opts Options) *Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	rlsv3.RegisterRateLimitServiceServer(srv, rawServer{answer: answer})
	go srv.Serve(l) //nolint:errcheck // ends with Stop
	t.Cleanup(srv.Stop)
	if opts.Domain == "" {
		opts.Domain = "d"
	}
	if opts.Descriptors == nil {
		opts.Descriptors, opts.IdentityKey = []Descriptor{{{Key: "user", Value: "x"}}}, "user"
	}
	opts.Timeout = 5 * time.Second
	c, err := Dial(l.Addr().String(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func descStatus(code rlsv3.RateLimitResponse_Code, remaining uint32, reset time.Duration) *rlsv3.RateLimitResponse_DescriptorStatus {
	return &rlsv3.RateLimitResponse_DescriptorStatus{Code: code, LimitRemaining: remaining, DurationUntilReset: durationpb.New(reset),
		CurrentLimit: &rlsv3.RateLimitResponse_RateLimit{RequestsPerUnit: 5, Unit: rlsv3.RateLimitResponse_RateLimit_SECOND}}
}

// The request carries the domain, every descriptor in order, the user's
// id in the identity's entry of the first, hits_addend (unset for a unit
// request, as Envoy sends it), and the metadata.
func TestClientSendsWhatEnvoySends(t *testing.T) {
	var got *rlsv3.RateLimitRequest
	var md metadata.MD
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		md, _ = metadata.FromIncomingContext(ctx)
		return next(ctx, req)
	}))
	rlsv3.RegisterRateLimitServiceServer(srv, rawServer{answer: func(req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
		got = req
		return &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK, Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{{}, {}}}, nil
	}})
	go srv.Serve(l) //nolint:errcheck // ends with Stop
	defer srv.Stop()
	first, err := ParseDescriptor("path=/api,user=placeholder")
	require.NoError(t, err)
	second, err := ParseDescriptor("global=yes")
	require.NoError(t, err)
	c, err := Dial(l.Addr().String(), Options{Domain: "edge", Descriptors: []Descriptor{first, second}, IdentityKey: "user",
		Metadata: metadata.Pairs("authorization", "Bearer t0k3n")})
	require.NoError(t, err)
	defer c.Close()
	ok, err := c.AllowRequestN(context.Background(), "alice", 3)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "edge", got.GetDomain())
	assert.Equal(t, uint32(3), got.GetHitsAddend())
	require.Len(t, got.GetDescriptors(), 2)
	e := got.GetDescriptors()[0].GetEntries()
	assert.Equal(t, []string{"path", "/api", "user", "alice"}, []string{e[0].GetKey(), e[0].GetValue(), e[1].GetKey(), e[1].GetValue()})
	assert.Equal(t, "yes", got.GetDescriptors()[1].GetEntries()[0].GetValue())
	assert.Equal(t, []string{"Bearer t0k3n"}, md.Get("authorization"))
	// A unit request leaves hits_addend unset, as Envoy's HTTP filter
	// does: a server must read 0 as 1 (issue 63).
	_, err = c.AllowRequest(context.Background(), "alice")
	require.NoError(t, err)
	assert.Equal(t, uint32(0), got.GetHitsAddend(), "a unit request is sent with hits_addend unset")
	assert.Nil(t, got.GetDescriptors()[0].GetHitsAddend())

	// --rls-cost descriptor: the cost in the first descriptor's own
	// hits_addend, an explicit 0 too; the request's unset.
	c.opts.Cost = CostDescriptor
	for _, n := range []int{3, 0} {
		_, err = c.AllowRequestN(context.Background(), "alice", n)
		require.NoError(t, err)
		assert.Equal(t, uint32(0), got.GetHitsAddend())
		require.NotNil(t, got.GetDescriptors()[0].GetHitsAddend(), "cost %d", n)
		assert.Equal(t, uint64(n), got.GetDescriptors()[0].GetHitsAddend().GetValue())
		assert.Nil(t, got.GetDescriptors()[1].GetHitsAddend(), "the other descriptors are sent as given")
	}
	_, err = c.AllowRequest(context.Background(), "alice")
	require.NoError(t, err)
	assert.Nil(t, got.GetDescriptors()[0].GetHitsAddend(), "a unit request carries no cost")
	_, err = c.AllowRequestN(context.Background(), "alice", -1)
	assert.ErrorIs(t, err, errors.ErrUnsupported)
}

// Answers that cannot be graded are errors, never a decision; a gRPC
// error is one, UNAVAILABLE wrapping ErrNoAnswer; an answer above
// MaxAnswer is refused without being held.
func TestClientRefusesWhatCannotBeGraded(t *testing.T) {
	ok := descStatus(rlsv3.RateLimitResponse_OK, 4, time.Second)
	for _, c := range []struct {
		name   string
		answer *rlsv3.RateLimitResponse
		says   string
	}{
		{"unknown", &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_UNKNOWN, Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{ok}}, "overall_code is UNKNOWN"},
		{"out of the enum", &rlsv3.RateLimitResponse{OverallCode: 7, Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{ok}}, "overall_code is 7, outside the enum"},
		{"two statuses for one descriptor", &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK, Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{ok, ok}}, "carries 2 statuses for the 1 descriptor(s) sent"},
		{"too large", &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK, Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{ok},
			RawBody: []byte(strings.Repeat("x", 2*MaxAnswer))}, "ResourceExhausted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := serveRaw(t, func(*rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) { return c.answer, nil }, Options{})
			_, err := cl.Do(context.Background(), "u", 1)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.says)
		})
	}
	t.Run("unavailable", func(t *testing.T) {
		cl, err := Dial("127.0.0.1:1", Options{Domain: "d", Descriptors: []Descriptor{{{Key: "user"}}}, IdentityKey: "user", Timeout: 2 * time.Second})
		require.NoError(t, err)
		defer cl.Close()
		_, err = cl.Do(context.Background(), "u", 1)
		assert.ErrorIs(t, err, contract.ErrNoAnswer)
	})
	t.Run("costs the protocol cannot carry", func(t *testing.T) {
		cl := serveRaw(t, func(*rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
			return nil, errors.New("never sent")
		}, Options{})
		for _, n := range []int{0, -1, 1 << 33} {
			_, err := cl.AllowRequestN(context.Background(), "u", n)
			assert.ErrorIs(t, err, contract.ErrInvalidCost)
			assert.ErrorIs(t, err, errors.ErrUnsupported)
		}
	})
}

// Decode reads the first status's fields, and puts what is out of bounds
// in Errs: graded, never a crash.
func TestDecodeFields(t *testing.T) {
	resp := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OVER_LIMIT,
		Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{descStatus(rlsv3.RateLimitResponse_OVER_LIMIT, 0, 1500*time.Millisecond)}}
	allowed, f, err := Decode(resp, 1)
	require.NoError(t, err)
	assert.False(t, allowed)
	assert.Equal(t, Form, f.Form)
	assert.True(t, f.HasRemaining && f.HasReset && f.HasPolicy)
	assert.Equal(t, []any{0, 1500 * time.Millisecond, 5, time.Second}, []any{f.Remaining, f.Reset, f.PolicyLimit, f.PolicyWindow})
	assert.Empty(t, f.Errs)

	resp.Statuses[0].CurrentLimit.UnitMultiplier = wrapperspb.UInt32(60)
	_, f, _ = Decode(resp, 1)
	assert.Equal(t, time.Minute, f.PolicyWindow)

	for _, c := range []struct {
		name string
		edit func(*rlsv3.RateLimitResponse_DescriptorStatus)
		says string
	}{
		{"status disagrees", func(s *rlsv3.RateLimitResponse_DescriptorStatus) { s.Code = rlsv3.RateLimitResponse_OK }, "disagrees with overall_code"},
		{"unit unknown", func(s *rlsv3.RateLimitResponse_DescriptorStatus) { s.CurrentLimit.Unit = 0 }, "current_limit: unit UNKNOWN"},
		{"multiplier too large", func(s *rlsv3.RateLimitResponse_DescriptorStatus) {
			s.CurrentLimit.Unit, s.CurrentLimit.UnitMultiplier = rlsv3.RateLimitResponse_RateLimit_YEAR, wrapperspb.UInt32(1000)
		}, "unit_multiplier 1000"},
		{"negative reset", func(s *rlsv3.RateLimitResponse_DescriptorStatus) { s.DurationUntilReset.Seconds = -1 }, "a negative delay"},
		{"nanos out of range", func(s *rlsv3.RateLimitResponse_DescriptorStatus) { s.DurationUntilReset.Nanos = 2e9 }, "nanos 2000000000"},
		{"reset of ages", func(s *rlsv3.RateLimitResponse_DescriptorStatus) { s.DurationUntilReset.Seconds = 1 << 62 }, "more than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := descStatus(rlsv3.RateLimitResponse_OVER_LIMIT, 0, time.Second)
			c.edit(st)
			_, f, err := Decode(&rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OVER_LIMIT, Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{st}}, 1)
			require.NoError(t, err)
			require.NotEmpty(t, f.Errs)
			assert.Contains(t, errors.Join(f.Errs...).Error(), c.says)
		})
	}
	_, f, err = Decode(&rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK, Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{{Code: rlsv3.RateLimitResponse_OK}}}, 1)
	require.NoError(t, err)
	assert.False(t, f.HasRemaining || f.HasReset || f.HasPolicy, "no current_limit: no limit applies, nothing to grade")

	// envoyproxy/ratelimit under SHADOW_MODE: over the limit, let through.
	ok, over := descStatus(rlsv3.RateLimitResponse_OK, 3, time.Second), descStatus(rlsv3.RateLimitResponse_OVER_LIMIT, 0, time.Second)
	answer := func(code rlsv3.RateLimitResponse_Code, st ...*rlsv3.RateLimitResponse_DescriptorStatus) *rlsv3.RateLimitResponse {
		return &rlsv3.RateLimitResponse{OverallCode: code, Statuses: st}
	}
	_, _, err = Decode(answer(rlsv3.RateLimitResponse_OK, over, ok), 2)
	require.ErrorIs(t, err, ErrNotEnforced)
	assert.Contains(t, err.Error(), "the identity's descriptor (1 of 2) is OVER_LIMIT under an overall OK")

	// Several descriptors: the identity's own status is its decision;
	// another's refusal (or its shadow) is another limit's (issue 63).
	for _, c := range []struct {
		overall rlsv3.RateLimitResponse_Code
		st      []*rlsv3.RateLimitResponse_DescriptorStatus
		allowed bool
	}{
		{rlsv3.RateLimitResponse_OVER_LIMIT, []*rlsv3.RateLimitResponse_DescriptorStatus{ok, over}, true},
		{rlsv3.RateLimitResponse_OVER_LIMIT, []*rlsv3.RateLimitResponse_DescriptorStatus{over, ok}, false},
		{rlsv3.RateLimitResponse_OK, []*rlsv3.RateLimitResponse_DescriptorStatus{ok, over}, true},
		{rlsv3.RateLimitResponse_OK, []*rlsv3.RateLimitResponse_DescriptorStatus{ok, ok}, true},
	} {
		allowed, f, err := Decode(answer(c.overall, c.st...), 2)
		require.NoError(t, err)
		assert.Equal(t, c.allowed, allowed, "%v %v", c.overall, c.st)
		assert.Equal(t, c.st[0].GetLimitRemaining(), uint32(f.Remaining), "the identity's fields")
	}
	_, _, err = Decode(answer(rlsv3.RateLimitResponse_OVER_LIMIT), 2)
	require.ErrorIs(t, err, contract.ErrNoAnswer, "a refusal of several without statuses: whose is not said")
	allowed, _, err = Decode(answer(rlsv3.RateLimitResponse_OK), 2)
	require.NoError(t, err)
	assert.True(t, allowed)

	allowed, f, err = Decode(&rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OVER_LIMIT}, 1)
	require.NoError(t, err, "no status at all, as Limitador answers: decided by overall_code")
	assert.False(t, allowed)
	assert.False(t, f.HasRemaining || f.HasReset || f.HasPolicy)
}

func TestParseDescriptor(t *testing.T) {
	d, err := ParseDescriptor("user=x,path=/a=b")
	require.NoError(t, err)
	assert.Equal(t, Descriptor{{"user", "x"}, {"path", "/a=b"}}, d)
	for _, bad := range []string{"", "user", "=x", "a=1,,b=2", "a=1,a=2", strings.Repeat("k", 2000) + "=v", "a=\xff", manyEntries(33)} {
		_, err := ParseDescriptor(bad)
		assert.Error(t, err, "%.40q", bad)
	}
}

// manyEntries is a descriptor of n entries, k0=v to k<n-1>=v.
func manyEntries(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = "k" + strconv.Itoa(i) + "=v"
	}
	return strings.Join(parts, ",")
}

// WithHeaders reads response_headers_to_add as an endpoint's headers when
// no DescriptorStatus gave the state, and takes only Retry-After from
// them when one did.
func TestWithHeaders(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	headers := []*corev3.HeaderValue{{Key: "X-RateLimit-Limit", Value: "5"}, {Key: "X-RateLimit-Remaining", Value: "2"},
		{Key: "X-RateLimit-Reset", Value: "1"}, {Key: "Retry-After", Value: "3"}}
	bare := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK, ResponseHeadersToAdd: headers}
	_, f, err := Decode(bare, 1)
	require.NoError(t, err)
	f = WithHeaders(f, bare, now)
	assert.Equal(t, []any{"x", 2, time.Second, 5, 3 * time.Second}, []any{f.Form, f.Remaining, f.Reset, f.PolicyLimit, f.RetryAfter})

	withStatus := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK, ResponseHeadersToAdd: headers,
		Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{descStatus(rlsv3.RateLimitResponse_OK, 4, 700*time.Millisecond)}}
	_, f, err = Decode(withStatus, 1)
	require.NoError(t, err)
	f = WithHeaders(f, withStatus, now)
	assert.Equal(t, []any{Form, 4, 700 * time.Millisecond, 3 * time.Second}, []any{f.Form, f.Remaining, f.Reset, f.RetryAfter})

	bad := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK, ResponseHeadersToAdd: []*corev3.HeaderValue{{Key: "X-RateLimit-Remaining", Value: "-1"}}}
	_, f, _ = Decode(bad, 1)
	f = WithHeaders(f, bad, now)
	require.Len(t, f.Errs, 1)
	assert.Contains(t, f.Errs[0].Error(), "X-RateLimit-Remaining")
}
