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
	// ConfigureLimit: the target declares Configure, which sets the limit
	// override every later request of a spec carries in its first
	// descriptor ([rls.Overriding]), in windows of one unit only
	// (contract.Capabilities.UnitWindows). The server must be seen to
	// honour it: one request with an override must be answered with that
	// current_limit.
	ConfigureLimit bool
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
	if opts.ConfigureLimit {
		if err := probeOverride(ctx, addrs[0], opts.Options, policy); err != nil {
			return suite.Target{}, adapters.Policy{}, "", err
		}
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
	caps := contract.Capabilities{SharedStore: len(addrs) > 1, Cost: true}
	lanes := 0
	if opts.ConfigureLimit {
		// Each spec's override travels in its own requests: specs
		// configure apart, side by side.
		caps.Configure, caps.UnitWindows, lanes = true, true, suite.MaxParallel
	}
	return suite.Target{
		Name:         name,
		Addresses:    addrs,
		Capabilities: caps,
		Lanes:        lanes,
		MaxRPS:       max(0, rps),
		Alive: func(ctx context.Context) error {
			_, err := clients[0].Do(ctx, fmt.Sprintf("rlconform-probe-%d", time.Now().UnixNano()), 1)
			return err
		},
		New: func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
			c := clients[env.Instance%len(clients)]
			if opts.ConfigureLimit {
				return c.Overriding(), nil, nil
			}
			return c, nil, nil
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

// probeOverride checks that the RLS server at addr honours a descriptor's
// limit override: one request of a fresh user carrying one of policy's
// window and a limit one above policy's must be answered with that
// current_limit. A server that ignores it would be graded for a limit it
// was never given.
func probeOverride(ctx context.Context, addr string, opts rls.Options, policy adapters.Policy) error {
	n, w := policy.Limit+1, policy.Window
	if _, err := rls.Override(n, w); err != nil {
		return fmt.Errorf("--rls-configure limit: the server's limit is %d per %v, and a descriptor's limit override carries only windows of %v: grade it without --rls-configure, or with a rule of such a window", policy.Limit, policy.Window, contract.UnitWindowList())
	}
	c, err := rls.Dial(addr, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	o := c.Overriding()
	if err := o.Configure(ctx, n, w); err != nil {
		return fmt.Errorf("--rls-configure limit: %w", err)
	}
	r, err := o.Do(ctx, fmt.Sprintf("rlconform-probe-%d", time.Now().UnixNano()), 1)
	if err != nil {
		return fmt.Errorf("--rls-configure limit: a request with a limit override of %d per %v: %w", n, w, err)
	}
	got := "no current_limit"
	if r.Fields.HasPolicy {
		if r.Fields.PolicyLimit == n && r.Fields.PolicyWindow == w {
			return nil
		}
		got = fmt.Sprintf("current_limit %d per %v", r.Fields.PolicyLimit, r.Fields.PolicyWindow)
	}
	return fmt.Errorf("rls %s: --rls-configure limit: a request whose descriptor %v carried the limit override %d per %v was answered %s: the server does not honour the override (envoyproxy/ratelimit does), so Configure cannot be graded: run without --rls-configure", addr, opts.Descriptors[0], n, w, got)
}
