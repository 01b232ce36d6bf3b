package rls

import (
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rlconform/rlconform/contract"
)

// FuzzDecode decodes any bytes a server could send as a ShouldRateLimit
// answer (the wire form gRPC hands to protobuf, at most MaxAnswer) and
// reads it for 0 to 3 descriptors sent, with its response_headers_to_add
// (WithHeaders): never a panic; an answer taken has
// exactly one status per descriptor, or none, and its fields are within the
// bounds a spec can hold (a count of at most contract.MaxLimit, a delay and a window
// of at most contract.MaxWindow).
func FuzzDecode(f *testing.F) {
	seeds := []*rlsv3.RateLimitResponse{
		{OverallCode: rlsv3.RateLimitResponse_OK, Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{descStatus(rlsv3.RateLimitResponse_OK, 4, time.Second)}},
		{OverallCode: rlsv3.RateLimitResponse_OVER_LIMIT, Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{descStatus(rlsv3.RateLimitResponse_OVER_LIMIT, 0, 250*time.Millisecond)}},
		{OverallCode: rlsv3.RateLimitResponse_OK, Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{{Code: rlsv3.RateLimitResponse_OK}, {}}},
		{OverallCode: rlsv3.RateLimitResponse_UNKNOWN},
		{OverallCode: rlsv3.RateLimitResponse_OK, Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{{Code: rlsv3.RateLimitResponse_OK,
			CurrentLimit:       &rlsv3.RateLimitResponse_RateLimit{RequestsPerUnit: 1<<32 - 1, Unit: rlsv3.RateLimitResponse_RateLimit_YEAR, UnitMultiplier: wrapperspb.UInt32(1<<32 - 1)},
			DurationUntilReset: &durationpb.Duration{Seconds: -5, Nanos: 2e9}}}},
	}
	for _, s := range seeds {
		b, err := proto.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(len(s.GetStatuses())))
	}
	f.Add([]byte{0x08, 0x63, 0x12, 0x00}, uint8(1)) // overall_code 99, one empty status
	withHeaders, err := proto.Marshal(&rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OVER_LIMIT,
		ResponseHeadersToAdd: []*corev3.HeaderValue{{Key: "X-RateLimit-Remaining", Value: "0"}, {Key: "Retry-After", Value: "99999999999"}, {Key: "RateLimit", Value: `"d";r=0;t=1`}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(withHeaders, uint8(1))
	f.Fuzz(func(t *testing.T, wire []byte, sent uint8) {
		if len(wire) > MaxAnswer {
			return // gRPC refuses it before protobuf sees it
		}
		var resp rlsv3.RateLimitResponse
		if proto.Unmarshal(wire, &resp) != nil {
			return // gRPC's codec refuses it: an error of the call
		}
		n := int(sent % 4)
		allowed, fl, err := Decode(&resp, n)
		if err != nil {
			return
		}
		if m := len(resp.GetStatuses()); m != n && m != 0 {
			t.Fatalf("took an answer of %d statuses for %d descriptors", len(resp.GetStatuses()), n)
		}
		if allowed != (resp.GetOverallCode() == rlsv3.RateLimitResponse_OK) {
			t.Fatalf("allowed %v for overall_code %v", allowed, resp.GetOverallCode())
		}
		fl = WithHeaders(fl, &resp, time.Unix(1_800_000_000, 0))
		if fl.Remaining < 0 || fl.RetryAfter < 0 || fl.RetryAfter > contract.MaxWindow || fl.Remaining > contract.MaxLimit || fl.Reset < 0 || fl.Reset > contract.MaxWindow ||
			fl.PolicyWindow < 0 || fl.PolicyWindow > contract.MaxWindow || fl.PolicyLimit < 0 {
			t.Fatalf("fields out of bounds: %+v", fl)
		}
	})
}
