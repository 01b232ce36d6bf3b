//go:build unix

package redisenv

import (
	"errors"
	"syscall"
)

// Pause freezes the server (SIGSTOP): connections stay open and nothing
// answers, as in a network partition. Resume undoes it.
func (s *Server) Pause() error { return s.signal(syscall.SIGSTOP) }

// Resume lets a paused server answer again (SIGCONT).
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("redisenv: the server is not running")
	}
	return s.cmd.Process.Signal(sig)
}
