// Package testaddr gives tests loopback addresses with a known behaviour.
package testaddr

import "testing"

// Refused returns "127.0.0.1:PORT" where a TCP connection is refused for as
// long as the test runs.
//
// Closing a listener and dialling its old port is not enough: while tests
// run in parallel, another package's server or Redis may be handed that
// port in between and answer (or hang). Where the platform allows it, the
// port stays bound without listening, so nothing else can take it and a
// connection gets a reset.
func Refused(t testing.TB) string {
	t.Helper()
	return refused(t)
}
