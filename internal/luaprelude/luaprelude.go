// Package luaprelude holds the start that every Lua script of rlconform's
// reference and mutant limiters shares: reading "now" from ARGV[1] or the
// server's TIME. Redis cannot share code between scripts, so it is put
// before each one when the script is loaded.
package luaprelude

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

//go:embed prelude.lua
var prelude string

// Source is the text Redis runs for a script whose own text is body: the
// prelude, then body, which reads the local now it sets.
func Source(body string) string { return prelude + body }

// Script is Source(body) as a script, hashed once.
func Script(body string) *redis.Script { return redis.NewScript(Source(body)) }
