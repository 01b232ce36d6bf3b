// Package scripthook lets rlconform's mutants plant a fault in the
// reference's Lua scripts: reference.NewProfile, given a Client, rewrites
// its profile's script with Rewrite before using it, on the client
// inside. Being internal, no caller outside this module can make one: the
// reference's public options hold nothing but production settings.
package scripthook

import "github.com/redis/go-redis/v9"

// Client is a Redis client with a rewrite of the scripts run on it.
type Client struct {
	redis.UniversalClient
	// Rewrite takes a profile script's Lua source and returns the source
	// to run instead.
	Rewrite func(script string) (string, error)
}
