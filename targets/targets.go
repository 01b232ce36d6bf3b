// Package targets holds the limiters rlconform grades out of the box: the
// reference Redis limiter (of any profile), the model itself, any limiter
// speaking the HTTP control protocol v1 (and the processes of a service
// it starts for a run: [Exec]), and a deployed HTTP service graded as a
// black box ([Endpoint]). The rlconform command grades them; tests use
// them as known-good targets.
package targets

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/redact"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/reference"
	"github.com/rlconform/rlconform/suite"
)

// Reference is the reference Redis limiter on the suite's fake clock,
// its keys under the spec's prefix: it must pass every spec.
func Reference() suite.Target {
	caps := contract.All()
	caps.Cost = true // reference.Limiter and NewProfile's limiters take a cost
	return suite.Target{
		Name:         "reference",
		Capabilities: caps,
		NeedsRedis:   true,
		KeyOf:        func(prefix, userID string) string { return prefix + "{" + userID + "}" },
		New: func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
			if env.Redis == nil {
				return nil, nil, errors.New("the reference limiter needs Redis")
			}
			lim, err := reference.New(env.Redis, reference.Options{
				MaxRequests: env.MaxRequests, Window: env.Window, Prefix: env.KeyPrefix, Clock: env.Clock,
			})
			return lim, nil, err
		},
	}
}

// ReferenceCompact is the compact sliding log (reference.NewCompact) on
// the suite's fake clock, its keys under the spec's prefix, like
// Reference: it must pass every spec the reference passes.
func ReferenceCompact() suite.Target {
	t := Reference()
	t.Name = "reference-compact"
	t.New = func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
		if env.Redis == nil {
			return nil, nil, errors.New("the compact reference limiter needs Redis")
		}
		lim, err := reference.NewCompact(env.Redis, reference.Options{
			MaxRequests: env.MaxRequests, Window: env.Window, Prefix: env.KeyPrefix, Clock: env.Clock,
		})
		return lim, nil, err
	}
	return t
}

// ReferenceProfile is the reference Redis implementation of a profile
// (reference.NewProfile), like Reference: it must pass every spec that
// grades that profile.
func ReferenceProfile(spec model.Variant) (suite.Target, error) {
	if spec.IsSlidingLog() {
		return Reference(), nil
	}
	if err := reference.Implements(spec); err != nil {
		return suite.Target{}, err
	}
	t := Reference()
	t.Name = "reference:" + spec.String()
	t.New = func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
		if env.Redis == nil {
			return nil, nil, errors.New("the reference limiter needs Redis")
		}
		lim, err := reference.NewProfile(env.Redis, spec, reference.Options{
			MaxRequests: env.MaxRequests, Window: env.Window, Prefix: env.KeyPrefix, Clock: env.Clock,
		})
		return lim, nil, err
	}
	return t, nil
}

// Model is the model itself, in memory: it must pass every spec that
// does not need a store. Several instances share one model, as instances of
// a limiter share one store.
func Model() suite.Target { return ProfileModel(model.Variant{}) }

// ProfileModel is the model of a profile in memory, like Model: graded
// against its own profile, it must pass every spec that grades it.
func ProfileModel(spec model.Variant) suite.Target {
	name := "model"
	if !spec.IsSlidingLog() {
		name = "model:" + spec.String()
	}
	caps := contract.All()
	caps.StoreInspection = false
	caps.Cost = true // every built-in profile's model takes a cost
	var (
		mu     sync.Mutex
		shared = map[string]*model.Limiter{} // one model per spec, by key prefix
	)
	return suite.Target{
		Name:         name,
		Capabilities: caps,
		New: func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
			mu.Lock()
			defer mu.Unlock()
			if lim, ok := shared[env.KeyPrefix]; ok {
				return lim, nil, nil
			}
			p, err := spec.New(env.MaxRequests, env.Window)
			if err != nil {
				return nil, nil, err
			}
			lim := model.NewProfileLimiter(env.Clock, p)
			shared[env.KeyPrefix] = lim
			return lim, func() error {
				mu.Lock()
				defer mu.Unlock()
				delete(shared, env.KeyPrefix)
				return nil
			}, nil
		},
	}
}

// Remote grades the protocol v1 limiter at urls; several URLs are
// several instances of one limiter sharing a store. It asks the first URL
// for its capabilities and probes every URL once (an allow and, when
// supported, a remaining query for a probe user), so that a target that is
// down, hangs or answers garbage is an error here rather than a run of
// failed specs. timeout bounds each call (0: adapters.DefaultTimeout).
func Remote(ctx context.Context, urls []string, timeout time.Duration) (suite.Target, error) {
	return RemoteWith(ctx, urls, RemoteOptions{Timeout: timeout})
}

// RemoteOptions say how to reach a protocol v1 limiter.
type RemoteOptions struct {
	// Timeout bounds each call (0: adapters.DefaultTimeout).
	Timeout time.Duration
	// Token, when not empty, is sent on every request as
	// "Authorization: Bearer <Token>" (a server started with rlconform
	// serve --token-file asks for it). It is never shown.
	Token string
	// Lanes, when more than 1, divides the URLs into that many lanes of
	// equal size, in order (grade.Target.Lanes): a spec's instances are
	// those of its lane, configured by no spec of another lane.
	Lanes int
}

// RemoteWith is [Remote] with options. The addresses are shown (in the
// target's name, its addresses and every error) with their secrets
// redacted: a password, and the values of query parameters such as
// api_key or token.
func RemoteWith(ctx context.Context, urls []string, opts RemoteOptions) (suite.Target, error) {
	if len(urls) == 0 {
		return suite.Target{}, errors.New("no target URL")
	}
	lanes := max(1, opts.Lanes)
	if len(urls)%lanes != 0 {
		return suite.Target{}, fmt.Errorf("%d target URLs do not divide into %d lanes", len(urls), lanes)
	}
	perLane := len(urls) / lanes
	clients := make([]*adapters.Client, len(urls))
	failed := &adapters.StoreFailures{}
	for i, u := range urls {
		if p, err := url.ParseRequestURI(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") {
			return suite.Target{}, fmt.Errorf("target %q is not an http(s) URL", redact.URL(u))
		}
		clients[i] = adapters.NewClient(u, adapters.ClientOptions{Timeout: opts.Timeout, Token: opts.Token, StoreFailures: failed})
	}
	caps, err := clients[0].Capabilities(ctx)
	if err != nil {
		return suite.Target{}, fmt.Errorf("target %s: %w", redact.URL(urls[0]), err)
	}
	alive := func(ctx context.Context) error {
		probe := fmt.Sprintf("rlconform-probe-%d", time.Now().UnixNano())
		for i, c := range clients {
			if _, err := c.AllowRequest(ctx, probe); err != nil {
				return fmt.Errorf("target %s does not answer AllowRequest: %w", redact.URL(urls[i]), err)
			}
			if caps.Remaining {
				if _, err := c.GetRemainingRequests(ctx, probe); err != nil {
					return fmt.Errorf("target %s does not answer GetRemainingRequests: %w", redact.URL(urls[i]), err)
				}
			}
		}
		return nil
	}
	if err := alive(ctx); err != nil {
		return suite.Target{}, err
	}
	caps.SharedStore = perLane > 1
	// Reports show the addresses without credentials.
	shown := make([]string, len(urls))
	for i, u := range urls {
		shown[i] = redact.URL(u)
	}
	name := shown[0]
	if perLane > 1 {
		name = fmt.Sprintf("%s (+%d more instances)", shown[0], perLane-1)
	}
	if lanes > 1 {
		name += fmt.Sprintf(" (+%d more lanes)", lanes-1)
	}
	return suite.Target{
		Name:         name,
		Addresses:    shown,
		Capabilities: caps,
		Alive:        alive,
		Lanes:        lanes,
		StoreFailing: failed.Between,
		New: func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
			c := clients[env.Lane%lanes*perLane+env.Instance%perLane]
			if caps.Clock {
				c = c.WithClock(env.Clock)
			}
			return c, nil, nil
		},
	}, nil
}

// EndpointOptions say how to grade a deployed HTTP service.
type EndpointOptions struct {
	adapters.EndpointOptions
	// Policy is the limit the service is meant to enforce; zero: read it
	// from the RateLimit-Policy field of the first answer (with json
	// Fields, from its LIMIT member).
	Policy adapters.Policy
	// MaxRPS bounds the requests sent in any one second, over every URL
	// (0: the default, min(DefaultMaxRPS, max(50, 2N+8)); negative: no
	// bound, for a load test that sets its own pace).
	MaxRPS int
}

// DefaultMaxRPS caps the requests an endpoint is sent in any one second
// when the caller sets no MaxRPS (--max-rps): whatever policy a service
// announces, the grader never becomes a load generator by default. It
// leaves the pace of the specs' largest burst (2N+8 in a second) alone up
// to N = 496; a larger policy is graded with its bursts spread (each
// request timed from when it leaves), or with --max-rps raised.
const DefaultMaxRPS = 1000

// DefaultRPS is the pace an endpoint of policy p is sent at when the
// caller sets no MaxRPS: max(50, 2N+8), enough for the largest burst a
// spec sends, capped at DefaultMaxRPS.
func DefaultRPS(p adapters.Policy) int { return min(DefaultMaxRPS, max(50, 2*p.Limit+8)) }

// Endpoint grades the HTTP service at urls (several URLs are replicas that
// must share one limit) by its answers: 2xx allowed, the refusal status
// denied, anything else an error of the service. It probes the first URL
// once, and takes the policy from its RateLimit-Policy field (with json
// Fields, its LIMIT member) when none is given (from says where the
// policy came from); without either it is an error.
func Endpoint(ctx context.Context, urls []string, opts EndpointOptions) (t suite.Target, policy adapters.Policy, from string, err error) {
	if len(urls) == 0 {
		return suite.Target{}, adapters.Policy{}, "", errors.New("no endpoint URL")
	}
	for _, u := range urls {
		if p, err := url.ParseRequestURI(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") {
			return suite.Target{}, adapters.Policy{}, "", fmt.Errorf("endpoint %q is not an http(s) URL", redact.URL(u))
		}
	}
	probe := adapters.NewEndpoint(urls[0], opts.EndpointOptions)
	first, err := probe.Do(ctx, fmt.Sprintf("rlconform-probe-%d", time.Now().UnixNano()))
	if err != nil {
		return suite.Target{}, adapters.Policy{}, "", fmt.Errorf("endpoint %s: %w", redact.URL(urls[0]), err)
	}
	policy, from = opts.Policy, "--policy"
	if policy.Limit == 0 {
		if policy, from, err = announced(first.Fields, opts.Fields); err != nil {
			return suite.Target{}, adapters.Policy{}, "", fmt.Errorf("endpoint %s: give --policy N/W: %w", redact.URL(urls[0]), err)
		}
	}
	rps := opts.MaxRPS
	if rps == 0 {
		rps = DefaultRPS(policy)
	}
	if rps > 0 {
		opts.EndpointOptions.Pace = adapters.NewPacer(rps)
	}
	failed := &adapters.StoreFailures{}
	opts.EndpointOptions.StoreFailures = failed
	clients := make([]*adapters.Endpoint, len(urls))
	shown := make([]string, len(urls))
	for i, u := range urls {
		clients[i] = adapters.NewEndpoint(u, opts.EndpointOptions)
		shown[i] = redact.URL(u)
	}
	caps := contract.Capabilities{SharedStore: len(urls) > 1}
	name := shown[0]
	if len(urls) > 1 {
		name = fmt.Sprintf("%s (+%d more replicas)", shown[0], len(urls)-1)
	}
	return suite.Target{
		Name:         name,
		Addresses:    shown,
		Capabilities: caps,
		SharedLimit:  opts.Identity.Kind == "none",
		MaxRPS:       max(0, rps),
		StoreFailing: failed.Between,
		// With one shared limit the probe spends it too: the next spec
		// waits it out (suite.Target.SharedLimit).
		Alive: func(ctx context.Context) error {
			_, err := clients[0].Do(ctx, fmt.Sprintf("rlconform-probe-%d", time.Now().UnixNano()))
			return err
		},
		New: func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
			return clients[env.Instance%len(clients)], nil, nil
		},
		Request: func(ctx context.Context, i int, user string) (suite.HTTPAnswer, error) {
			r, err := clients[i%len(clients)].Do(ctx, user)
			if err != nil {
				return suite.HTTPAnswer{}, err
			}
			return answer(r), nil
		},
	}, policy, from, nil
}

// announced is the policy an answer's RateLimit-Policy field gives (or,
// with json fields, its LIMIT member: Envoy's currentLimit), or why it
// gives none that can be graded; from names where it came from.
func announced(f adapters.Fields, src adapters.FieldSource) (p adapters.Policy, from string, err error) {
	field, prefix, want := "the RateLimit-Policy field of its first answer", "RateLimit-Policy ", "a RateLimit-Policy field (q and w)"
	if src.Kind == "json" {
		field, prefix = fmt.Sprintf("the LIMIT member %s of its first answer's body", src.Limit), "json limit "
		want = "a LIMIT member with a unit (json:REMAINING,RESET,LIMIT, such as Envoy's currentLimit)"
	}
	for _, err := range f.Errs {
		if strings.HasPrefix(err.Error(), "json fields: ") {
			return adapters.Policy{}, "", fmt.Errorf("its first answer's body cannot hold the fields: %w", err)
		}
		if strings.HasPrefix(err.Error(), prefix) {
			return adapters.Policy{}, "", fmt.Errorf("%s is malformed: %w", field, err)
		}
	}
	if !f.HasPolicy || f.PolicyWindow == 0 || (src.Kind == "json" && src.Limit == "") {
		return adapters.Policy{}, "", fmt.Errorf("its answers carry no %s to read it from", want)
	}
	p = adapters.Policy{Limit: f.PolicyLimit, Window: f.PolicyWindow}
	if p.Limit < 1 {
		return adapters.Policy{}, "", fmt.Errorf("%s says q=%d: nothing can be graded against a limit of %d", field, p.Limit, p.Limit)
	}
	if err := contract.ValidateConfig(p.Limit, p.Window); err != nil {
		return adapters.Policy{}, "", fmt.Errorf("%s says q=%d, w=%d: %w", field, p.Limit, int64(p.Window/time.Second), err)
	}
	return p, field, nil
}

// answer is the suite's view of an endpoint's response.
func answer(r *adapters.Response) suite.HTTPAnswer {
	f := r.Fields
	a := suite.HTTPAnswer{Allowed: r.Allowed, Sent: r.Sent, Returned: r.Returned, Form: f.Form}
	if f.HasRetryAfter {
		a.RetryAfter = &f.RetryAfter
	}
	if f.HasRemaining {
		a.Remaining = &f.Remaining
	}
	if f.HasReset {
		a.Reset = &f.Reset
		if !f.ResetAt.IsZero() {
			a.ResetAt = &f.ResetAt
		}
	}
	if f.HasPolicy {
		a.PolicyLimit = &f.PolicyLimit
		if f.PolicyWindow > 0 {
			a.PolicyWindow = &f.PolicyWindow
		}
	}
	for _, e := range f.Errs {
		a.Malformed = append(a.Malformed, e.Error())
	}
	return a
}
