package cli

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/adapters/rls"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/reference"
)

// envoyShaped answers as envoyproxy/ratelimit does for one descriptor
// (src/limiter/base_limiter.go GetResponseDescriptorStatus,
// src/service/ratelimit.go shouldRateLimitWorker), 5 per second counted
// per user and never reset (the test sends fewer than a window holds):
// matched by a rule, or not (no current_limit, every request OK), the
// rule in shadow_mode (over the limit: OK, limit_remaining 0), or the
// service in SHADOW_MODE (over: the status OVER_LIMIT, overall OK).
type envoyShaped struct {
	rlsv3.UnimplementedRateLimitServiceServer
	mode string // "enforce", "no-rule", "rule-shadow", "global-shadow"
	mu   *sync.Mutex
	hits map[string]uint32
}

func (s envoyShaped) ShouldRateLimit(_ context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	if s.mode == "no-rule" {
		return &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK,
			Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{{Code: rlsv3.RateLimitResponse_OK}}}, nil
	}
	s.mu.Lock()
	user := req.GetDescriptors()[0].GetEntries()[0].GetValue()
	s.hits[user] += max(1, req.GetHitsAddend())
	after := s.hits[user]
	s.mu.Unlock()
	limit := &rlsv3.RateLimitResponse_RateLimit{RequestsPerUnit: 5, Unit: rlsv3.RateLimitResponse_RateLimit_SECOND}
	st := &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK, CurrentLimit: limit}
	if after > 5 {
		st.Code = rlsv3.RateLimitResponse_OVER_LIMIT
	} else {
		st.LimitRemaining = 5 - after
	}
	overall := st.Code
	switch {
	case s.mode == "rule-shadow" && after > 5:
		st.Code, overall = rlsv3.RateLimitResponse_OK, rlsv3.RateLimitResponse_OK
	case s.mode == "global-shadow":
		overall = rlsv3.RateLimitResponse_OK
	}
	return &rlsv3.RateLimitResponse{OverallCode: overall, Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{st}}, nil
}

// A server told not to enforce what it is asked about (a domain or a
// descriptor no rule matches, a rule in shadow_mode, the service in
// SHADOW_MODE) is not graded: exit 2 before the first spec, naming what
// was sent and why, never NOT CONFORMANT. With --policy, the first used
// to be graded and failed (issue 63). One that enforces passes the check.
func TestRLSServerThatDoesNotEnforceIsNotGraded(t *testing.T) {
	for _, c := range []struct{ mode, says string }{
		{"no-rule", `no limit applies to what is sent: the server admitted all 11 requests of one identity`},
		{"rule-shadow", "each answered with limit_remaining 0 less than W/N (200ms) after another such, too soon for any quota to come back"},
		{"global-shadow", "is OVER_LIMIT under an overall OK, which Envoy lets through: shadow mode"},
		{"enforce", ""},
	} {
		t.Run(c.mode, func(t *testing.T) {
			addr := serveRawRLS(t, envoyShaped{mode: c.mode, mu: &sync.Mutex{}, hits: map[string]uint32{}})
			code, out, errOut := rlconform(t, "run", "--report-dir", t.TempDir(), "--rls", addr, "--domain", "edgee",
				"--descriptor", "user=x", "--identity", "descriptor:user", "--policy", "5/1s", "--id", "core/allow-within-limit")
			if c.says == "" {
				assert.Contains(t, errOut, "reaches the service", "%s\n%s", out, errOut)
				return
			}
			assert.Equal(t, ExitCannotRun, code, "%s\n%s", out, errOut)
			assert.Contains(t, errOut, c.says)
			assert.NotContains(t, out, "NOT CONFORMANT")
			assert.Contains(t, errOut, `sent: domain "edgee", descriptors [user=x]`)
		})
	}
}

// --rls-cost descriptor puts a weighted request's cost in the first
// descriptor's own hits_addend, which the reference's server honours,
// an explicit 0 included: strict/cost-zero runs and passes, where with
// the request's hits_addend (the default, which reads 0 as 1) it is
// skipped, saying why (issue 63).
func TestRLSCostInTheDescriptor(t *testing.T) {
	testtier.SkipShort(t, "grades an RLS server in real time")
	t.Parallel()
	addr := serveRLSReference(t, fmt.Sprintf("rlc-rls-cost:%d:", time.Now().UnixNano()), nil)
	ids := "strict/cost-zero,strict/cost-all-or-nothing"
	code, out, errOut := rlsRun(t, []string{addr}, "--id", ids, "--rls-cost", "descriptor")
	assert.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Regexp(t, `pass\s+strict/cost-zero`, out)
	assert.Regexp(t, `pass\s+strict/cost-all-or-nothing`, out)

	code, out, errOut = rlsRun(t, []string{addr}, "--id", ids)
	assert.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Regexp(t, `skip\s+strict/cost-zero`, out)

	// A server that reads an explicit 0 as 1 (a check that consumes, or
	// the request's hits_addend in place of the descriptor's) fails it.
	lim, err := reference.New(store.Client, reference.Options{MaxRequests: 5, Window: time.Second, Prefix: fmt.Sprintf("rlc-rls-cost0:%d:", time.Now().UnixNano())})
	require.NoError(t, err)
	decide := referenceDecider(lim)
	zeroAsOne := serveRLSDecider(t, func(ctx context.Context, user string, hits int) (rls.Decision, error) {
		return decide(ctx, user, max(1, hits))
	}, "")
	code, out, errOut = rlsRun(t, []string{zeroAsOne}, "--id", "strict/cost-zero", "--rls-cost", "descriptor")
	assert.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)

	code, _, errOut = rlsRun(t, []string{addr}, "--rls-cost", "route")
	assert.Equal(t, ExitCannotRun, code)
	assert.Contains(t, errOut, `--rls-cost "route": want request or descriptor`)
}

// twoLimits answers two descriptors as envoyproxy/ratelimit does: the
// user's, decided by the reference (5 per second), and a global one
// that refuses every third request; the overall code is OVER_LIMIT
// when either is.
type twoLimits struct {
	rlsv3.UnimplementedRateLimitServiceServer
	lim   *reference.Limiter
	calls *atomic.Int64
}

func (s twoLimits) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	d, err := s.lim.Decide(ctx, req.GetDescriptors()[0].GetEntries()[0].GetValue())
	if err != nil {
		return nil, err
	}
	user := &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK, LimitRemaining: uint32(d.Remaining),
		CurrentLimit: &rlsv3.RateLimitResponse_RateLimit{RequestsPerUnit: 5, Unit: rlsv3.RateLimitResponse_RateLimit_SECOND}}
	global := &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK, LimitRemaining: 1,
		CurrentLimit: &rlsv3.RateLimitResponse_RateLimit{RequestsPerUnit: 1000, Unit: rlsv3.RateLimitResponse_RateLimit_SECOND}}
	if !d.Allowed {
		user.Code = rlsv3.RateLimitResponse_OVER_LIMIT
	}
	if s.calls.Add(1)%3 == 0 {
		global.Code, global.LimitRemaining = rlsv3.RateLimitResponse_OVER_LIMIT, 0
	}
	overall := rlsv3.RateLimitResponse_OK
	if user.Code != overall || global.Code != overall {
		overall = rlsv3.RateLimitResponse_OVER_LIMIT
	}
	return &rlsv3.RateLimitResponse{OverallCode: overall, Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{user, global}}, nil
}

// With several descriptors (a user's and a global one, as Envoy sends
// one per matching action), the identity's descriptor is graded by its
// own status: a refusal by the global one is another limit's, which the
// user's limiter still counted. Graded by the overall code, a correct
// user limit was failed whenever the global one refused (issue 63).
func TestRLSSeveralDescriptorsGradeTheIdentitysOwn(t *testing.T) {
	testtier.SkipShort(t, "grades an RLS server in real time")
	t.Parallel()
	lim, err := reference.New(store.Client, reference.Options{MaxRequests: 5, Window: time.Second, Prefix: fmt.Sprintf("rlc-rls-two:%d:", time.Now().UnixNano())})
	require.NoError(t, err)
	addr := serveRawRLS(t, twoLimits{lim: lim, calls: &atomic.Int64{}})
	code, out, errOut := rlconform(t, "run", "--report-dir", t.TempDir(), "--rls", addr, "--domain", "d",
		"--descriptor", "user=x", "--descriptor", "global=all", "--identity", "descriptor:user",
		"--id", "core/allow-within-limit,core/block-over-limit,core/multi-user,http/ratelimit-fields")
	assert.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Regexp(t, `pass\s+core/allow-within-limit`, out)
}
