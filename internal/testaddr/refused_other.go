//go:build !unix

package testaddr

import (
	"net"
	"testing"
)

// refused falls back to a closed listener's port, which another process may
// take in between; the unix version holds the port.
func refused(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testaddr: %v", err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
