//go:build !unix

package redisenv

import "errors"

// Pause is not supported without Unix signals.
func (s *Server) Pause() error { return errors.New("redisenv: Pause needs a Unix system") }

// Resume is not supported without Unix signals.
func (s *Server) Resume() error { return errors.New("redisenv: Resume needs a Unix system") }
