package cli

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/rlconform/rlconform/adapters/rls"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/mutants"
	"github.com/rlconform/rlconform/reference"
)

// serveRLSReference serves the reference limiter (5 per second, on Redis
// TIME, under prefix) as an RLS server keyed by the descriptor entry
// "user"; lie, when set, rewrites every decision before it is sent.
func serveRLSReference(t *testing.T, prefix string, lie func(*rls.Decision)) string {
	t.Helper()
	lim, err := reference.New(store.Client, reference.Options{MaxRequests: 5, Window: time.Second, Prefix: prefix})
	require.NoError(t, err)
	decide := referenceDecider(lim)
	if lie != nil {
		inner := decide
		decide = func(ctx context.Context, user string, hits int) (rls.Decision, error) {
			d, err := inner(ctx, user, hits)
			lie(&d)
			return d, err
		}
	}
	return serveRLSDecider(t, decide, "")
}

// serveRLSDecider serves decide as an RLS server asking for token ("" for
// none).
func serveRLSDecider(t *testing.T, decide rls.Decider, token string) string {
	t.Helper()
	srv, err := rls.Listen("127.0.0.1:0", decide, rls.ServerOptions{Key: "user", Token: token})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return srv.Addr
}

// serveRawRLS serves impl, an RLS server of the test's own making, on
// gRPC at a free loopback port, and returns its address.
func serveRawRLS(t *testing.T, impl rlsv3.RateLimitServiceServer) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	rlsv3.RegisterRateLimitServiceServer(srv, impl)
	go srv.Serve(l) //nolint:errcheck // ends with Stop
	t.Cleanup(srv.Stop)
	return l.Addr().String()
}

// rlsRun grades the RLS servers at addrs as Envoy calls them.
func rlsRun(t *testing.T, addrs []string, extra ...string) (int, string, string) {
	t.Helper()
	args := []string{"run", "--domain", "demo", "--descriptor", "user=x,path=/api", "--identity", "descriptor:user", "--report-dir", t.TempDir()}
	for _, a := range addrs {
		args = append(args, "--rls", a)
	}
	return rlconform(t, append(args, extra...)...)
}

// The reference served over RLS passes every spec an RLS server reaches,
// its policy read from current_limit; two servers on one store share one
// limit, and weighted requests (hits_addend) are graded.
func TestRLSGradesTheReference(t *testing.T) {
	testtier.SkipShort(t, "grades an RLS server in real time")
	t.Parallel()
	prefix := fmt.Sprintf("rlc-rls:%d:", time.Now().UnixNano())
	a, b := serveRLSReference(t, prefix, nil), serveRLSReference(t, prefix, nil)
	code, out, errOut := rlsRun(t, []string{a, b}, "--level", "strict")
	require.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, errOut, "policy 5/1s (from the current_limit of its first answer)")
	for _, id := range []string{"http/ratelimit-fields", "strict/shared-store", "strict/boundary-burst-first", "strict/cost-all-or-nothing", "strict/cost-never-fit"} {
		assert.Regexp(t, `pass\s+`+id, out)
	}
	assert.Regexp(t, `skip\s+strict/cost-zero.*the target's protocol carries no cost of 0`, out)
}

// Servers whose DescriptorStatus lies fail http/ratelimit-fields, the
// lie named: limit_remaining off by one, duration_until_reset too short,
// current_limit of another window.
func TestRLSFailsLyingServers(t *testing.T) {
	testtier.SkipShort(t, "grades an RLS server in real time")
	t.Parallel()
	for _, c := range []struct {
		name string
		lie  func(*rls.Decision)
		says string
	}{
		{"remaining off by one", func(d *rls.Decision) { d.Remaining++ }, "the DescriptorStatus fields say 5 left"},
		{"reset too short", func(d *rls.Decision) {
			if d.Remaining == 0 {
				d.Reset = 0
			}
		}, "a client that waits t is refused again"},
		{"limit says a minute", func(d *rls.Decision) { d.Window = time.Minute }, "current_limit says a window of 1m0s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			addr := serveRLSReference(t, fmt.Sprintf("rlc-rls-lie:%d:", time.Now().UnixNano()), c.lie)
			code, out, errOut := rlsRun(t, []string{addr}, "--policy", "5/1s", "--id", "http/ratelimit-fields")
			assert.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)
			assert.Contains(t, out, c.says)
		})
	}
}

// Each spec an RLS server reaches in real time fails a mutant served over
// RLS (serve --rls-mode --impl mutant:NAME). strict/rolling-expiry and
// strict/cost-expiry-edge are reached too, but their mutants break a 1ms
// edge that no round trip resolves (mutants.NotInRealTime): they are
// caught on the fake clock by go test ./mutants. core/multi-user is
// reached too, but its mutant (global-limit) is stopped before by the
// pre-flight check, as a service the identity does not reach (exit 2);
// core/sliding-expiry too, but its mutant (window-unit-mixup: at 1 s, a
// window of 1 ms) never refuses, and answers no current_limit: the
// pre-flight check stops it as a server to which no limit applies (exit
// 2), which is what envoyproxy/ratelimit answers a descriptor no rule
// matches.
func TestRLSCatchesMutants(t *testing.T) {
	testtier.SkipShort(t, "grades RLS servers in real time")
	t.Parallel()
	byName := map[string]mutants.Mutant{}
	for _, m := range mutants.All() {
		byName[m.Name] = m
	}
	for _, c := range []struct{ mutant, id string }{
		{"under-admits", "core/allow-within-limit"},
		{"off-by-one", "core/block-over-limit"},
		{"fixed-window-epoch", "strict/boundary-burst-epoch"},
		{"fixed-window-first", "strict/boundary-burst-first"},
		{"same-ms-collision", "strict/same-millisecond-burst"},
		{"logs-denied", "strict/denied-not-logged"},
		{"non-atomic", "strict/linearizable"},
		{"per-instance", "strict/shared-store"},
		{"cost-partial", "strict/cost-all-or-nothing"},
		{"cost-check-one", "strict/cost-never-fit"},
	} {
		t.Run(c.mutant, func(t *testing.T) {
			t.Parallel()
			m, ok := byName[c.mutant]
			require.True(t, ok, c.mutant)
			prefix := fmt.Sprintf("rlc-rls-%s:%d:", c.mutant, time.Now().UnixNano())
			instances := 1
			if c.id == "strict/shared-store" {
				instances = 2
			}
			var addrs []string
			for range instances {
				lim, err := m.New(mutants.Store{Redis: store.Client, Clock: fakeclock.Real{}, Prefix: prefix, MaxRequests: 5, Window: time.Second})
				require.NoError(t, err)
				addrs = append(addrs, serveRLSDecider(t, rls.LimiterDecider(lim), ""))
			}
			code, out, errOut := rlsRun(t, addrs, "--policy", "5/1s", "--id", c.id)
			assert.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)
			assert.Regexp(t, `fail\s+`+c.id, out)
		})
	}
}

// Flags that cannot make an RLS request, and servers that cannot be
// graded, are exit 2 with the reason, never a verdict.
func TestRLSCannotRun(t *testing.T) {
	t.Parallel()
	addr := serveRLSReference(t, fmt.Sprintf("rlc-rls-bad:%d:", time.Now().UnixNano()), nil)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, []byte("not a certificate"), 0o600))
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"no identity key", []string{"--rls", addr, "--domain", "d", "--descriptor", "path=/", "--identity", "descriptor:user"}, `--descriptor path=/ has no entry "user"`},
		{"empty domain", []string{"--rls", addr, "--descriptor", "user=x", "--identity", "descriptor:user"}, "--domain is empty"},
		{"malformed descriptor", []string{"--rls", addr, "--domain", "d", "--descriptor", "user", "--identity", "descriptor:user"}, `--descriptor: descriptor "user": entry "user" is not KEY=VALUE`},
		{"key twice", []string{"--rls", addr, "--domain", "d", "--descriptor", "user=a,user=b", "--identity", "descriptor:user"}, `key "user" named twice`},
		{"identity not a descriptor", []string{"--rls", addr, "--domain", "d", "--descriptor", "user=x", "--identity", "header:X-User"}, "want descriptor:KEY"},
		{"with endpoint flags", []string{"--rls", addr, "--domain", "d", "--descriptor", "user=x", "--identity", "descriptor:user", "--fields", "headers"}, "go with --endpoint"},
		{"rls flags alone", []string{"--domain", "d"}, "go with --rls"},
		{"not host:port", []string{"--rls", "http://x/", "--domain", "d", "--descriptor", "user=x", "--identity", "descriptor:user"}, "want HOST:PORT"},
		{"bad metadata name", []string{"--rls", addr, "--domain", "d", "--descriptor", "user=x", "--identity", "descriptor:user", "--rls-header", "bad key: v"}, `--rls-header "bad key": a metadata name`},
		{"bad ca", []string{"--rls", addr, "--domain", "d", "--descriptor", "user=x", "--identity", "descriptor:user", "--rls-ca", ca}, "no PEM certificate"},
		{"unreachable", []string{"--rls", "127.0.0.1:1", "--domain", "d", "--descriptor", "user=x", "--identity", "descriptor:user", "--timeout", "2s"}, "rls 127.0.0.1:1 ShouldRateLimit: no answer from the limiter"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := rlconform(t, append([]string{"run", "--report-dir", t.TempDir()}, c.args...)...)
			assert.Equal(t, ExitCannotRun, code, "%s\n%s", out, errOut)
			assert.Contains(t, errOut, c.says)
		})
	}
}

// A server asking for a token refuses a run without it (exit 2), and
// takes one with --rls-header, whose value is never shown.
func TestRLSHeaderCarriesATokenNeverShown(t *testing.T) {
	testtier.SkipShort(t, "grades an RLS server in real time")
	t.Parallel()
	lim, err := reference.New(store.Client, reference.Options{MaxRequests: 5, Window: time.Second, Prefix: fmt.Sprintf("rlc-rls-tok:%d:", time.Now().UnixNano())})
	require.NoError(t, err)
	const token = "s3cr3t-t0ken-value"
	addr := serveRLSDecider(t, referenceDecider(lim), token)
	code, out, errOut := rlsRun(t, []string{addr}, "--id", "core/block-over-limit")
	assert.Equal(t, ExitCannotRun, code, "%s\n%s", out, errOut)
	assert.Contains(t, errOut, "Unauthenticated")
	code, out, errOut = rlsRun(t, []string{addr}, "--id", "core/block-over-limit", "--rls-header", "authorization: Bearer "+token)
	assert.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.NotContains(t, out+errOut, token)
}

// rawRLS is an RLS server that answers every call with answer.
type rawRLS struct {
	rlsv3.UnimplementedRateLimitServiceServer
	answer *rlsv3.RateLimitResponse
}

func (s rawRLS) ShouldRateLimit(context.Context, *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	return s.answer, nil
}

// Servers whose answers cannot be graded (a status per descriptor is the
// protocol; UNKNOWN is no decision) end the run with exit 2, the answer
// named, never a verdict.
func TestRLSServerAnswersThatCannotBeGraded(t *testing.T) {
	t.Parallel()
	ok := &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK}
	for _, c := range []struct {
		name   string
		answer *rlsv3.RateLimitResponse
		says   string
	}{
		{"two statuses", &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK, Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{ok, ok}}, "the answer carries 2 statuses for the 1 descriptor(s) sent"},
		{"unknown", &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_UNKNOWN, Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{ok}}, "overall_code is UNKNOWN"},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := serveRawRLS(t, rawRLS{answer: c.answer})
			code, out, errOut := rlconform(t, "run", "--report-dir", t.TempDir(), "--rls", addr, "--domain", "d",
				"--descriptor", "user=x", "--identity", "descriptor:user", "--policy", "5/1s")
			assert.Equal(t, ExitCannotRun, code, "%s\n%s", out, errOut)
			assert.Contains(t, errOut, c.says)
		})
	}
}

// Over TLS the server is trusted by --rls-ca's certificates; without
// them (the system's roots do not hold a test certificate), or in
// plaintext, the run cannot reach it: exit 2.
func TestRLSOverTLS(t *testing.T) {
	t.Parallel()
	https := httptest.NewUnstartedServer(nil) // for its certificate of 127.0.0.1
	https.StartTLS()
	https.Close()
	lim, err := reference.New(store.Client, reference.Options{MaxRequests: 5, Window: time.Second, Prefix: fmt.Sprintf("rlc-rls-tls:%d:", time.Now().UnixNano())})
	require.NoError(t, err)
	srv, err := rls.Listen("127.0.0.1:0", referenceDecider(lim), rls.ServerOptions{Key: "user", TLS: &tls.Config{Certificates: https.TLS.Certificates, MinVersion: tls.VersionTLS12}})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: https.Certificate().Raw}), 0o600))

	code, out, errOut := rlsRun(t, []string{srv.Addr}, "--id", "core/block-over-limit", "--rls-ca", ca)
	assert.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	code, out, errOut = rlsRun(t, []string{srv.Addr}, "--id", "core/block-over-limit", "--rls-tls", "--timeout", "2s")
	assert.Equal(t, ExitCannotRun, code, "%s\n%s", out, errOut)
	assert.Contains(t, errOut, "certificate")
	code, out, errOut = rlsRun(t, []string{srv.Addr}, "--id", "core/block-over-limit", "--timeout", "2s")
	assert.Equal(t, ExitCannotRun, code, "%s\n%s", out, errOut)
}

var servingRLSAt = regexp.MustCompile(`as an RLS server .* at (127\.0\.0\.1:\d+),`)

// serveRLSProcess starts this test binary as rlconform serve --rls-mode
// with args, on the tests' Redis, and returns the address it serves at;
// it is stopped when the test ends.
func serveRLSProcess(t *testing.T, args ...string) string {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self, append([]string{"serve", "--rls-mode", "--addr", "127.0.0.1:0", "--limit", "5", "--window", "1s"}, args...)...)
	cmd.Env = append(os.Environ(), asCommand+"=1", "REDIS_URL="+store.URL)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	m := servingRLSAt.FindStringSubmatch(line)
	require.NotNil(t, m, "serve --rls-mode said %q, %v", line, err)
	return m[1]
}

// rlconform serve --rls-mode serves the reference, which a run grades
// conformant, its policy read from current_limit, and a mutant, which it
// fails.
func TestServeRLSMode(t *testing.T) {
	testtier.SkipShort(t, "grades an RLS server in real time")
	t.Parallel()
	addr := serveRLSProcess(t, "--prefix", fmt.Sprintf("rlc-serve-rls:%d:", time.Now().UnixNano()))
	code, out, errOut := rlsRun(t, []string{addr}, "--id", "core/block-over-limit,http/ratelimit-fields")
	assert.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Contains(t, errOut, "policy 5/1s (from the current_limit of its first answer)")

	addr = serveRLSProcess(t, "--impl", "mutant:off-by-one", "--prefix", fmt.Sprintf("rlc-serve-rls-m:%d:", time.Now().UnixNano()))
	code, out, errOut = rlsRun(t, []string{addr}, "--policy", "5/1s", "--id", "core/block-over-limit")
	assert.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)

	// A server that reads an unset hits_addend as 0 lets every request
	// through behind Envoy, which leaves it unset: the grader sends unit
	// requests so, and fails it (it passed when they carried 1).
	addr = serveRLSProcess(t, "--impl", "mutant:rls-unset-hits-free", "--prefix", fmt.Sprintf("rlc-serve-rls-z:%d:", time.Now().UnixNano()))
	code, out, errOut = rlsRun(t, []string{addr}, "--policy", "5/1s", "--id", "core/block-over-limit")
	assert.Equal(t, ExitNotConformant, code, "%s\n%s", out, errOut)
	assert.Regexp(t, `fail\s+core/block-over-limit`, out)
}

// serve's RLS flags that do not go together are exit 2, with the reason.
func TestServeRLSModeRefusals(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"serve", "--rls-mode", "--endpoint-mode"}, "do not go with it"},
		{[]string{"serve", "--rls-mode", "-clock=false"}, "do not go with it"},
		{[]string{"serve", "--rls-key", "tenant"}, "--rls-key goes with --rls-mode"},
		{[]string{"serve", "--rls-mode", "--impl", "model", "--addr", "127.0.0.1:0"}, "--rls-mode serves --impl reference, reference-compact or mutant:NAME"},
	} {
		code, out, errOut := rlconform(t, c.args...)
		assert.Equal(t, ExitCannotRun, code, "%v: %s\n%s", c.args, out, errOut)
		assert.Contains(t, errOut, c.says, c.args)
	}
}

// limitadorShaped answers as Limitador does: the decision in overall_code,
// no DescriptorStatus at all; the reference limiter decides. With
// headers, it asks Envoy to add X-RateLimit-Limit, -Remaining and -Reset
// (in seconds, rounded up) to the client's response, the remaining count
// off by lie.
type limitadorShaped struct {
	rlsv3.UnimplementedRateLimitServiceServer
	lim     *reference.Limiter
	headers bool
	lie     int
}

func (s limitadorShaped) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	d, err := s.lim.Decide(ctx, req.GetDescriptors()[0].GetEntries()[0].GetValue())
	if err != nil {
		return nil, err
	}
	resp := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OVER_LIMIT}
	if d.Allowed {
		resp.OverallCode = rlsv3.RateLimitResponse_OK
	}
	if s.headers {
		reset := d.Reset
		if !d.Allowed || d.Remaining == 0 {
			reset = max(reset, d.RetryAfter)
		}
		resp.ResponseHeadersToAdd = []*corev3.HeaderValue{
			{Key: "X-RateLimit-Limit", Value: strconv.Itoa(d.Limit)},
			{Key: "X-RateLimit-Remaining", Value: strconv.Itoa(d.Remaining + s.lie)},
			{Key: "X-RateLimit-Reset", Value: strconv.Itoa(int((reset + time.Second - 1) / time.Second))},
		}
	}
	return resp, nil
}

// A server that sends no DescriptorStatus (Limitador) is graded by its
// decisions; http/ratelimit-fields is skipped, saying why.
func TestRLSWithoutStatuses(t *testing.T) {
	testtier.SkipShort(t, "grades an RLS server in real time")
	t.Parallel()
	lim, err := reference.New(store.Client, reference.Options{MaxRequests: 5, Window: time.Second, Prefix: fmt.Sprintf("rlc-rls-nost:%d:", time.Now().UnixNano())})
	require.NoError(t, err)
	addr := serveRawRLS(t, limitadorShaped{lim: lim})
	code, out, errOut := rlconform(t, "run", "--report-dir", t.TempDir(), "--rls", addr, "--domain", "d",
		"--descriptor", "user=x", "--identity", "descriptor:user", "--policy", "5/1s", "--id", "core/block-over-limit,http/ratelimit-fields")
	assert.Equal(t, ExitConformant, code, "%s\n%s", out, errOut)
	assert.Regexp(t, `skip\s+http/ratelimit-fields.*the answers carry no DescriptorStatus`, out)

	code, out, errOut = rlconform(t, "run", "--report-dir", t.TempDir(), "--rls", addr, "--domain", "d",
		"--descriptor", "user=x", "--identity", "descriptor:user")
	assert.Equal(t, ExitCannotRun, code, "%s\n%s", out, errOut)
	assert.Contains(t, errOut, "give --policy N/W: its first answer carries no DescriptorStatus")
}

// The headers a server asks Envoy to add to the client's response
// (response_headers_to_add) are graded by http/ratelimit-fields when no
// DescriptorStatus says the state: truthful ones pass, a remaining count
// off by one fails.
func TestRLSResponseHeadersToAdd(t *testing.T) {
	testtier.SkipShort(t, "grades an RLS server in real time")
	t.Parallel()
	for _, c := range []struct {
		name string
		lie  int
		code int
	}{{"truthful", 0, ExitConformant}, {"remaining off by one", 1, ExitNotConformant}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			lim, err := reference.New(store.Client, reference.Options{MaxRequests: 5, Window: time.Second, Prefix: fmt.Sprintf("rlc-rls-hdr:%d:%d:", c.lie, time.Now().UnixNano())})
			require.NoError(t, err)
			addr := serveRawRLS(t, limitadorShaped{lim: lim, headers: true, lie: c.lie})
			code, out, errOut := rlconform(t, "run", "--report-dir", t.TempDir(), "--rls", addr, "--domain", "d",
				"--descriptor", "user=x", "--identity", "descriptor:user", "--policy", "5/1s", "--id", "http/ratelimit-fields")
			assert.Equal(t, c.code, code, "%s\n%s", out, errOut)
			if c.lie != 0 {
				assert.Contains(t, out, "the x fields say 5 left")
			}
		})
	}
}
