package main

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"golang.org/x/time/rate"
)

// echoLimiter is the echo card: an Echo app that answers 200 behind its
// RateLimiter middleware on the memory store, as Echo's documentation sets
// it up (NewRateLimiterMemoryStoreWithConfig), with Rate the limit per
// second of the window (N/W), Burst N and the default ExpiresIn (3 min),
// and IdentifierExtractor the X-User header (the default, the client's
// IP, is every user of the grader at once; an empty one is its
// ErrorHandler's 403). A refusal is its DenyHandler's 429. Served by
// net/http.
func echoLimiter(e *env) (http.Handler, error) {
	app := echo.New()
	app.HideBanner, app.HidePort = true, true
	store := middleware.NewRateLimiterMemoryStoreWithConfig(middleware.RateLimiterMemoryStoreConfig{
		Rate:  rate.Limit(float64(e.limit) / e.window.Seconds()),
		Burst: e.limit,
	})
	app.Use(middleware.RateLimiterWithConfig(middleware.RateLimiterConfig{
		Store: store,
		IdentifierExtractor: func(c echo.Context) (string, error) {
			u := c.Request().Header.Get("X-User")
			if u == "" {
				return "", errNoUser
			}
			return u, nil
		},
	}))
	app.GET("/", func(c echo.Context) error { return c.String(http.StatusOK, "ok\n") })
	return app, nil
}
