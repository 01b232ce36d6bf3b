package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	fiber2 "github.com/gofiber/fiber/v2"
	limiter2 "github.com/gofiber/fiber/v2/middleware/limiter"
	fiber3 "github.com/gofiber/fiber/v3"
	limiter3 "github.com/gofiber/fiber/v3/middleware/limiter"
)

// fiberEndpoints are the cards of Fiber's limiter middleware, by name:
// an app of Fiber v2 or v3 that answers 200, behind limiter.New with
// LimiterMiddleware FixedWindow or SlidingWindow on its default storage
// (the process's memory), Max the limit, Expiration the window and
// KeyGenerator the X-User header (the default, the client's IP, is every
// user of the grader at once). Each is served by Fiber itself (fasthttp).
var fiberEndpoints = map[string]struct {
	v3, sliding bool
}{
	"fiber2-fixed":   {},
	"fiber2-sliding": {sliding: true},
	"fiber3-fixed":   {v3: true},
	"fiber3-sliding": {v3: true, sliding: true},
}

// serveFiber serves the Fiber endpoint card name on addr until ctx is done.
func serveFiber(ctx context.Context, name, addr string, e *env) error {
	f := fiberEndpoints[name]
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	switch {
	case f.v3 && f.sliding:
		err = serveFiber3(ctx, ln, e, limiter3.SlidingWindow{})
	case f.v3:
		err = serveFiber3(ctx, ln, e, limiter3.FixedWindow{})
	case f.sliding:
		err = serveFiber2(ctx, ln, e, limiter2.SlidingWindow{})
	default:
		err = serveFiber2(ctx, ln, e, limiter2.FixedWindow{})
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// errNoUser is the answer to a request that names no user (400).
var errNoUser = errors.New("no X-User")

func serveFiber2(ctx context.Context, ln net.Listener, e *env, mw limiter2.LimiterHandler) error {
	app := fiber2.New(fiber2.Config{DisableStartupMessage: true})
	app.Use(func(c *fiber2.Ctx) error {
		if c.Get("X-User") == "" {
			return fiber2.NewError(fiber2.StatusBadRequest, errNoUser.Error())
		}
		return c.Next()
	})
	app.Use(limiter2.New(limiter2.Config{
		Max:               e.limit,
		Expiration:        e.window,
		KeyGenerator:      func(c *fiber2.Ctx) string { return c.Get("X-User") },
		LimiterMiddleware: mw,
	}))
	app.Get("/", func(c *fiber2.Ctx) error { return c.SendString("ok\n") })
	go func() {
		<-ctx.Done()
		app.ShutdownWithTimeout(time.Second)
	}()
	return app.Listener(ln)
}

func serveFiber3(ctx context.Context, ln net.Listener, e *env, mw limiter3.Handler) error {
	app := fiber3.New()
	app.Use(func(c fiber3.Ctx) error {
		if c.Get("X-User") == "" {
			return fiber3.NewError(fiber3.StatusBadRequest, errNoUser.Error())
		}
		return c.Next()
	})
	app.Use(limiter3.New(limiter3.Config{
		Max:               e.limit,
		Expiration:        e.window,
		KeyGenerator:      func(c fiber3.Ctx) string { return c.Get("X-User") },
		LimiterMiddleware: mw,
	}))
	app.Get("/", func(c fiber3.Ctx) error { return c.SendString("ok\n") })
	return app.Listener(ln, fiber3.ListenConfig{DisableStartupMessage: true, GracefulContext: ctx})
}
