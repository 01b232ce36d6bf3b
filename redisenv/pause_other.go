//go:build !unix

package redisenv

import (
	"errors"
	"fmt"
)

// Pause is not supported without Unix signals: its error wraps
// errors.ErrUnsupported.
func (s *Server) Pause() error {
	return fmt.Errorf("redisenv: Pause needs a Unix system: %w", errors.ErrUnsupported)
}

// Resume is not supported without Unix signals: its error wraps
// errors.ErrUnsupported.
func (s *Server) Resume() error {
	return fmt.Errorf("redisenv: Resume needs a Unix system: %w", errors.ErrUnsupported)
}
