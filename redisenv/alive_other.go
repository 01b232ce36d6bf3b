//go:build !unix

package redisenv

// processAlive cannot tell here, so every owner is taken to be alive and
// nothing is swept.
func processAlive(int) bool { return true }
