// Package freeport finds TCP ports free on the loopback interface.
package freeport

import "net"

// Loopback returns a TCP port free on 127.0.0.1 now. The caller binds it
// later (or hands it to a process that does), so another may take it in
// between: callers that start a server on it check that theirs answers.
func Loopback() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
