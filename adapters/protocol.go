// Package adapters reaches limiters over rlconform's HTTP control protocol
// v1: a client that makes any protocol server a
// [contract.RateLimiterContract], and a server that exposes any Go limiter.
// The protocol is documented in docs/protocol.md.
package adapters

// Paths and header of protocol v1.
const (
	PathCapabilities = "/rlc/v1/capabilities"
	PathConfigure    = "/rlc/v1/configure"
	PathAllow        = "/rlc/v1/allow"
	PathRemaining    = "/rlc/v1/remaining"
	PathReset        = "/rlc/v1/reset"
	// HeaderNow carries "now" in unix milliseconds to a target that declares
	// clock control.
	HeaderNow = "X-Rlc-Now-Ms"
)

// Wire bodies of protocol v1. Pointers tell a missing field from a zero one.
type (
	capabilitiesBody struct {
		Clock     *bool `json:"clock"`
		Configure *bool `json:"configure"`
		Remaining *bool `json:"remaining"`
		Reset     *bool `json:"reset"`
		// Cost, optional (absent means false): allow takes a "cost".
		Cost *bool `json:"cost,omitempty"`
		// WindowGranularityMs, optional: the target takes only windows
		// that are whole multiples of it (1000: whole seconds).
		WindowGranularityMs *int64 `json:"window_granularity_ms,omitempty"`
		// StoreFailure, optional (absent means "error"): what the target
		// answers while its store fails, "error", "allow" or "deny"
		// (contract.StoreFailure).
		StoreFailure *string `json:"store_failure,omitempty"`
	}
	configureBody struct {
		MaxRequests int   `json:"max_requests"`
		WindowMs    int64 `json:"window_ms"`
	}
	userBody struct {
		UserID string `json:"user_id"`
	}
	// allowInBody is what allow takes: a user, and the request's cost
	// (absent means 1) from a target that declares the capability.
	allowInBody struct {
		UserID string `json:"user_id"`
		Cost   *int   `json:"cost,omitempty"`
	}
	// allowBody is the answer to allow. NowMs, optional in answers (in
	// remainingBody's too), is the instant the target decided at on its
	// own clock (unix ms): it tells the grader the target's clock phase.
	allowBody struct {
		Allowed      *bool   `json:"allowed"`
		NowMs        *int64  `json:"now_ms,omitempty"`
		StoreFailure *string `json:"store_failure,omitempty"` // "allow" or "deny": the policy's answer, its store failed
	}
	remainingBody struct {
		Remaining *int   `json:"remaining"`
		NowMs     *int64 `json:"now_ms,omitempty"`
	}
	errorBody struct {
		Error string `json:"error"`
	}
)

// userID is the body's user, which the server bounds.
func (b *userBody) userID() string { return b.UserID }

func (b *allowInBody) userID() string { return b.UserID }
