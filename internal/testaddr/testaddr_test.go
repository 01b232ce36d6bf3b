package testaddr

import (
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRefusedRefuses(t *testing.T) {
	addr := Refused(t)
	for i := 0; i < 3; i++ {
		_, err := net.DialTimeout("tcp", addr, time.Second)
		assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	}
	// Nobody else can listen there while the test holds it.
	if l, err := net.Listen("tcp", addr); err == nil {
		l.Close()
		t.Errorf("%s could be taken by another listener", addr)
	}
}
