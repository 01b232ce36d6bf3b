package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
)

// maxAllowBody bounds the allow bodies passNegativeCosts reads; a longer
// one goes to adapters.Handler whole, which bounds and refuses it.
const maxAllowBody = 64 << 10

// passNegativeCosts gives an allow of a negative cost to the library.
// adapters.Handler answers 400 to one before calling its limiter: graded
// through it, robust/cost-negative would grade the server's check, not
// the library, and a library that takes a negative weight (a refund)
// would pass. The card answers what the library does: the shim's error
// (400 for the contract's invalid input, else 503) or its decision. Every
// other request, and any allow it cannot read, goes to h.
func passNegativeCosts(h http.Handler, lim contract.CostLimiter, clock *fakeclock.Fake) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, cost, ok := negativeAllow(r)
		if !ok || !setClock(clock, r) {
			h.ServeHTTP(w, r)
			return
		}
		ok, err := lim.AllowRequestN(r.Context(), user, cost)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case errors.Is(err, contract.ErrInvalidCost) || errors.Is(err, contract.ErrInvalidUserID):
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		case err != nil:
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		default:
			now := time.Now()
			if clock != nil {
				now = clock.Now()
			}
			json.NewEncoder(w).Encode(map[string]any{"allowed": ok, "now_ms": now.UnixMilli()})
		}
	})
}

// negativeAllow reads an allow of a negative cost that adapters.Handler
// would take (a JSON POST of no other origin); for any other request it
// reports false, and r's body is whole again.
func negativeAllow(r *http.Request) (user string, cost int, ok bool) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if r.Method != http.MethodPost || r.URL.Path != adapters.PathAllow || ct != "application/json" || r.Header.Get("Origin") != "" {
		return "", 0, false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxAllowBody+1))
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	var in struct {
		UserID string `json:"user_id"`
		Cost   *int   `json:"cost"`
	}
	if err != nil || len(body) > maxAllowBody || json.Unmarshal(body, &in) != nil || in.Cost == nil || *in.Cost >= 0 {
		return "", 0, false
	}
	return in.UserID, *in.Cost, true
}

// setClock applies the request's clock header as adapters.Handler does
// (no header: the real time); it reports false for a malformed one, which
// the handler then refuses.
func setClock(clock *fakeclock.Fake, r *http.Request) bool {
	if clock == nil {
		return true
	}
	v := r.Header.Get(adapters.HeaderNow)
	if v == "" {
		clock.Set(time.Now())
		return true
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return false
	}
	clock.Set(time.UnixMilli(ms))
	return true
}
