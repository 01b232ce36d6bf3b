// Package freeport finds TCP ports free on the loopback interface.
package freeport

import "net"

// Loopback returns a TCP port free on 127.0.0.1 now. The caller binds it
// later (or hands it to a process that does), so another may take it in
// between: callers that start a server on it check that theirs answers.
func Loopback() (int, error) {
	ports, err := LoopbackN(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// LoopbackN returns n distinct TCP ports free on 127.0.0.1 now, as
// Loopback does: each is held until all n are found, so that processes
// started together never get one port twice (measured: lanes of --exec
// processes started at once, each asking Loopback, once got one port for
// two processes).
func LoopbackN(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		held = append(held, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
