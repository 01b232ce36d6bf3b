package main

import (
	"net/http"

	"github.com/rlconform/rlconform/middleware"
	"github.com/rlconform/rlconform/reference"
)

// referenceMiddleware is the baseline: rlconform's reference sliding log
// behind its own middleware, keyed by X-User.
func referenceMiddleware(e *env) (http.Handler, error) {
	lim, err := reference.New(e.rdb, reference.Options{MaxRequests: e.limit, Window: e.window, Prefix: e.prefix})
	if err != nil {
		return nil, err
	}
	return middleware.New(middleware.Reference(lim), middleware.Options{Key: middleware.Header("X-User")})(ok), nil
}

// newReference is the baseline over protocol v1: rlconform's reference
// sliding log, on the clock protocol v1 sets.
func newReference(e *env) (contractLimiter, error) {
	return reference.New(e.rdb, reference.Options{MaxRequests: e.limit, Window: e.window, Prefix: e.prefix, Clock: e.clock})
}
