// Command rlconform grades rate limiters against the exact sliding-window
// contract. See the README for usage.
package main

import (
	"context"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/cli"
)

// quiet drops go-redis's internal log lines (a pool that fails to dial logs
// "pool.go:… failed to dial" on its own): every failure that matters reaches
// the user as an error, with its context.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func main() {
	// Process-wide, so only the command sets it, never the library.
	redis.SetLogger(quiet{})
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
