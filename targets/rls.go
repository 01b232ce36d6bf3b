package targets

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/adapters/rls"
	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/suite"
)

// RLSOptions say how to grade an RLS server (Envoy's rate limit service
// protocol, over gRPC).
type RLSOptions struct {
	rls.Options
	// Policy is the limit the server is configured with; zero: read it
	// from the current_limit of the first answer's first status.
	Policy adapters.Policy
	// MaxRPS bounds the requests sent in any one second, over every
	// address, as [EndpointOptions.MaxRPS] does.
	MaxRPS int
}

// RLS grades the RLS servers at addrs (HOST:PORT; several are replicas
// that must share one limit) as Envoy calls them: OK allowed, OVER_LIMIT
// denied, anything else an error of the server. It probes the first
// address once and takes the policy from its answer's current_limit when
// none is given (from says where the policy came from). The target is an
// endpoint's (its answers' fields graded by the http/ specs) that also
// takes weighted requests (hits_addend).
func RLS(ctx context.Context, addrs []string, opts RLSOptions) (t suite.Target, policy adapters.Policy, from string, err error) {
	if len(addrs) == 0 {
		return suite.Target{}, adapters.Policy{}, "", errors.New("no RLS address")
	}
	for _, a := range addrs {
		if err := checkHostPort(a); err != nil {
			return suite.Target{}, adapters.Policy{}, "", err
		}
	}
	probe, err := rls.Dial(addrs[0], opts.Options)
	if err != nil {
		return suite.Target{}, adapters.Policy{}, "", err
	}
	first, err := probe.Do(ctx, fmt.Sprintf("rlconform-probe-%d", time.Now().UnixNano()), 1)
	probe.Close()
	if err != nil {
		return suite.Target{}, adapters.Policy{}, "", err
	}
	policy, from = opts.Policy, "--policy"
	if policy.Limit == 0 {
		if policy, err = rlsAnnounced(first.Fields); err != nil {
			return suite.Target{}, adapters.Policy{}, "", fmt.Errorf("rls %s: give --policy N/W: %w", addrs[0], err)
		}
		from = "the current_limit of its first answer"
	}
	rps := opts.MaxRPS
	if rps == 0 {
		rps = DefaultRPS(policy)
	}
	if rps > 0 {
		opts.Pace = adapters.NewPacer(rps)
	}
	clients := make([]*rls.Client, len(addrs))
	for i, a := range addrs {
		if clients[i], err = rls.Dial(a, opts.Options); err != nil {
			return suite.Target{}, adapters.Policy{}, "", err
		}
	}
	name := "rls " + addrs[0]
	if len(addrs) > 1 {
		name = fmt.Sprintf("%s (+%d more replicas)", name, len(addrs)-1)
	}
	return suite.Target{
		Name:         name,
		Addresses:    addrs,
		Capabilities: contract.Capabilities{SharedStore: len(addrs) > 1, Cost: true},
		MaxRPS:       max(0, rps),
		Alive: func(ctx context.Context) error {
			_, err := clients[0].Do(ctx, fmt.Sprintf("rlconform-probe-%d", time.Now().UnixNano()), 1)
			return err
		},
		New: func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
			return clients[env.Instance%len(clients)], nil, nil
		},
		Request: func(ctx context.Context, i int, user string) (suite.HTTPAnswer, error) {
			r, err := clients[i%len(clients)].Do(ctx, user, 1)
			if err != nil {
				return suite.HTTPAnswer{}, err
			}
			return answer(r), nil
		},
	}, policy, from, nil
}

// checkHostPort says why addr is not HOST:PORT.
func checkHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || strings.ContainsAny(addr, "/ ") {
		return fmt.Errorf("--rls %q: want HOST:PORT (127.0.0.1:8081, ratelimit.svc:8081)", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("--rls %q: port %q: want 1 to 65535", addr, port)
	}
	return nil
}

// rlsAnnounced is the policy the first status's current_limit gives, or
// why it gives none that can be graded.
func rlsAnnounced(f adapters.Fields) (adapters.Policy, error) {
	for _, err := range f.Errs {
		if strings.HasPrefix(err.Error(), "current_limit") {
			return adapters.Policy{}, fmt.Errorf("its first answer's current_limit is malformed: %w", err)
		}
	}
	if !f.HasPolicy {
		return adapters.Policy{}, errors.New("its first answer carries no DescriptorStatus with a current_limit to read it from (no limit applies to the descriptor, or the server does not say)")
	}
	p := adapters.Policy{Limit: f.PolicyLimit, Window: f.PolicyWindow}
	if err := contract.ValidateConfig(p.Limit, p.Window); err != nil {
		return adapters.Policy{}, fmt.Errorf("its current_limit says %d per %v: %w", p.Limit, p.Window, err)
	}
	return p, nil
}
