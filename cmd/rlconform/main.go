// Command rlconform grades rate limiters against the exact sliding-window
// contract. See the README for usage.
package main

import (
	"os"

	"github.com/rlconform/rlconform/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
