package repro

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// serveCard starts cmd, a card's server (its Env set but for PORT), on a
// free port, in its own process group, which stop ends when the test
// does, and returns its base URL once ready(base) says it answers,
// polling for at most wait; past that it fails the test with what the
// server printed, naming it name.
func serveCard(t *testing.T, name string, cmd *exec.Cmd, stop syscall.Signal, wait time.Duration, ready func(base string) error) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd.Env = append(cmd.Env, fmt.Sprintf("PORT=%d", port))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, stop)
		cmd.Wait()
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(wait); ; {
		err := ready(base)
		if err == nil {
			return base
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer: %v\n%s", name, err, out.String())
		}
		time.Sleep(20 * time.Millisecond) // polling a server that starts, not waiting for a limiter's time
	}
}

// capabilities is ready when base answers protocol v1's capabilities,
// whatever it says.
func capabilities(base string) error {
	resp, err := http.Get(base + "/rlc/v1/capabilities")
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
