package redisenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/rlconform/rlconform/internal/freeport"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server process this process started on loopback. It
// can be stopped and started again on the same port, to test how a limiter
// lives through an outage. Its methods are safe for concurrent use.
type Server struct {
	binary string
	port   int
	dir    string
	extra  []string // further redis-server arguments

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when cmd has exited
	output *bytes.Buffer
}

// StartServer starts binary (a redis-server) on a free loopback port, with
// no persistence and any extra arguments, and waits until it answers PING.
//
// The free port is found by listening and closing, so another process may
// take it before redis-server binds it; then the server exits at once and
// is started again on another port, up to three times.
func StartServer(ctx context.Context, binary string, extraArgs ...string) (*Server, error) {
	sweepStaleDirs()
	dir, err := os.MkdirTemp("", dirPattern)
	if err != nil {
		return nil, fmt.Errorf("redisenv: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("redisenv: %w", err)
	}
	for attempt := 1; ; attempt++ {
		port, err := freeport.Loopback()
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("redisenv: finding a free port: %w", err)
		}
		s := &Server{binary: binary, port: port, dir: dir, extra: extraArgs}
		err = s.Start(ctx)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errExited) || attempt == 3 {
			os.RemoveAll(dir)
			return nil, err
		}
	}
}

// errExited is the server process exiting before it answered.
var errExited = errors.New("it exited")

// Addr is host:port of the server.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Start starts the server again after Stop, on the same port, and waits
// until it answers. Starting a running server does nothing.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	cmd := exec.Command(s.binary,
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir,
		"--protected-mode", "no", "--loglevel", "warning")
	cmd.Args = append(cmd.Args, s.extra...)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redisenv: starting %s: %w", s.binary, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.cmd, s.done, s.output = cmd, done, out

	if err := waitReady(ctx, s.Addr(), cmd.Process.Pid, done); err != nil {
		s.stopLocked()
		return fmt.Errorf("redisenv: %s on port %d did not become ready: %w\n%s", s.binary, s.port, err, out.String())
	}
	return nil
}

// Stop kills the server and waits for it to exit. Stopping a stopped server
// does nothing.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked()
}

// Close stops the server and removes its working directory.
func (s *Server) Close() error {
	return errors.Join(s.Stop(), os.RemoveAll(s.dir))
}

func (s *Server) stopLocked() error {
	if s.cmd == nil {
		return nil
	}
	err := s.cmd.Process.Kill()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		err = errors.Join(err, fmt.Errorf("redisenv: redis-server pid %d did not exit", s.cmd.Process.Pid))
	}
	s.cmd = nil
	if errors.Is(err, os.ErrProcessDone) {
		err = nil
	}
	return err
}

// waitReady waits until the Redis at addr answers as process pid: one that
// another process started on the same port does not count.
func waitReady(ctx context.Context, addr string, pid int, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer client.Close()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		// The port first, with a dial of our own: go-redis would retry a
		// refused dial five times, 100ms apart, and log each failure.
		err := listening(ctx, addr)
		if err == nil {
			var info map[string]map[string]string
			if info, err = client.InfoMap(ctx, "server").Result(); err == nil {
				got := info["Server"]["process_id"]
				if got == strconv.Itoa(pid) {
					return nil
				}
				err = fmt.Errorf("the Redis there is process %s, not %d", got, pid)
			}
		}
		select {
		case <-exited:
			return errExited
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// listening reports whether something accepts connections at addr.
func listening(ctx context.Context, addr string) error {
	conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return conn.Close()
}

// dirPattern names the working directories of the servers this package
// starts; ownerFile in each holds the pid of the process that started it.
const (
	dirPattern = "rlconform-redis-"
	ownerFile  = "owner.pid"
)

// sweepStaleDirs removes the working directories left by processes that
// were killed before they could remove them. Several test binaries may run
// at once, so only a directory whose owner process is gone is removed.
func sweepStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPattern+"*"))
	for _, dir := range dirs {
		raw, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // not ours, or being created
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		os.RemoveAll(dir)
	}
}
