package targets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/internal/freeport"
	"github.com/rlconform/rlconform/internal/supervisor"
)

// waitDelay is how long a process that exited may keep its output open
// through a child that holds it: then it counts as exited (the pipes are
// closed), and its process group is killed.
const waitDelay = 2 * time.Second

// ExecOptions says how to start a limiter service for a run: the grader
// owns its processes and its Redis.
type ExecOptions struct {
	// Command is run by sh -c, once per instance.
	Command string
	// Instances is how many processes to start (at least 1).
	Instances int
	// RedisURL and KeyPrefix are given to every process, as
	// RLCONFORM_REDIS_URL and RLCONFORM_KEY_PREFIX.
	RedisURL, KeyPrefix string
	// Ready bounds the wait for each process to answer its capabilities
	// (0: 30 s).
	Ready time.Duration
	// Lane, when not 0, is the lane of a run these processes serve
	// (grade.Target.Lanes: specs side by side, each configuring the
	// instances of its own lane): they get RLCONFORM_LANE, and
	// LanePrefix(KeyPrefix, Lane) as RLCONFORM_KEY_PREFIX, so that no two
	// lanes share a key.
	Lane int
}

// LanePrefix is the key prefix of lane's processes, for a run whose
// processes of lane 0 write under prefix: prefix itself for lane 0, else,
// for a prefix that ends with a colon (as --exec's do), one that no other
// lane's starts, nor starts another's ("rlc-exec-ab:" for lane 2:
// "rlc-exec-ab-2:"). Another prefix gets "-laneN-" appended: distinct,
// but under lane 0's.
func LanePrefix(prefix string, lane int) string {
	if lane == 0 {
		return prefix
	}
	base, colon := strings.CutSuffix(prefix, ":")
	if !colon {
		return fmt.Sprintf("%s-lane%d-", prefix, lane)
	}
	return fmt.Sprintf("%s-%d:", base, lane)
}

// Processes are the instances of a limiter service started by [Exec].
type Processes struct {
	// URLs are the instances' base URLs, in the order they were started.
	URLs  []string
	procs []*process
}

// process is one instance: its command and the tail of its output.
type process struct {
	cmd    *exec.Cmd
	port   int
	output *tailBuffer
	done   chan struct{}
	err    error // how it ended, once done is closed
}

// Exec starts opts.Instances processes of opts.Command, each in its own
// process group, with PORT (a free loopback port), RLCONFORM_REDIS_URL and
// RLCONFORM_KEY_PREFIX in their environment, and waits until each answers
// GET /rlc/v1/capabilities. A process that exits first, or does not answer
// within opts.Ready, is an error that quotes the end of its output; the
// processes started are then stopped. The caller must Stop the result.
//
// A process group dies with its process: when sh exits (or, if a child of
// it still holds its output, waitDelay later), what is left of the group
// is killed. On Linux it also dies with the caller, even one killed with
// SIGKILL: each sh runs under a supervisor (internal/supervisor) that
// kills its group when its parent dies; if the supervisor cannot start,
// sh is started as elsewhere, with SIGKILL as its own parent-death signal,
// which reaches sh alone. Elsewhere, the groups outlive a caller that dies
// without Stop.
func Exec(ctx context.Context, opts ExecOptions) (*Processes, error) {
	return execOn(ctx, opts, nil)
}

// ExecLanes starts lanes 1 to lanes-1 of opts all at once, each as Exec
// with opts.Lane set, on ports found together (freeport.LoopbackN), so
// that no two of their processes get one port (measured: lanes each
// finding its own once gave two processes one port). It returns each
// lane's processes, or why that lane did not start; index 0 is lane 0's,
// which the caller started, and is left nil.
func ExecLanes(ctx context.Context, opts ExecOptions, lanes int) ([]*Processes, []error) {
	lanes = max(lanes, 1)
	procs, errs := make([]*Processes, lanes), make([]error, lanes)
	n := opts.Instances
	var ports []int
	err := fmt.Errorf("exec: %d instances: want at least 1", n)
	if n >= 1 {
		if ports, err = freeport.LoopbackN((lanes - 1) * n); err != nil {
			err = fmt.Errorf("exec: free ports for %d lanes of %d instances: %w", lanes-1, n, err)
		}
	}
	var wg sync.WaitGroup
	for lane := 1; lane < lanes; lane++ {
		if err != nil {
			errs[lane] = err
			continue
		}
		wg.Go(func() {
			o := opts
			o.Lane = lane
			procs[lane], errs[lane] = execOn(ctx, o, ports[(lane-1)*n:lane*n])
		})
	}
	wg.Wait()
	return procs, errs
}

// execOn is Exec with each instance's port given (nil: free ones found
// together).
func execOn(ctx context.Context, opts ExecOptions, ports []int) (*Processes, error) {
	if strings.TrimSpace(opts.Command) == "" {
		return nil, errors.New("exec: no command")
	}
	if opts.Instances < 1 {
		return nil, fmt.Errorf("exec: %d instances: want at least 1", opts.Instances)
	}
	if opts.Ready <= 0 {
		opts.Ready = 30 * time.Second
	}
	if ports == nil {
		var err error
		if ports, err = freeport.LoopbackN(opts.Instances); err != nil {
			return nil, fmt.Errorf("exec: free ports for %d instances: %w", opts.Instances, err)
		}
	}
	p := &Processes{}
	for i := range opts.Instances {
		proc, err := startProcess(opts, i, ports[i])
		if err != nil {
			p.Stop()
			return nil, err
		}
		p.procs = append(p.procs, proc)
		p.URLs = append(p.URLs, "http://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(proc.port)))
	}
	for i, proc := range p.procs {
		if err := proc.waitReady(ctx, p.URLs[i], opts.Ready); err != nil {
			p.Stop()
			return nil, fmt.Errorf("exec: instance %d (%s, PORT=%d): %w", i+1, opts.Command, proc.port, err)
		}
	}
	return p, nil
}

func startProcess(opts ExecOptions, i, port int) (*process, error) {
	cmd := exec.Command("sh", "-c", opts.Command)
	cmd.Env = append(os.Environ(),
		"PORT="+strconv.Itoa(port),
		"RLCONFORM_REDIS_URL="+opts.RedisURL,
		"RLCONFORM_KEY_PREFIX="+LanePrefix(opts.KeyPrefix, opts.Lane),
		"RLCONFORM_INSTANCE="+strconv.Itoa(i),
		"RLCONFORM_LANE="+strconv.Itoa(opts.Lane))
	out := &tailBuffer{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = waitDelay
	proc := &process{port: port, output: out}
	if sup, ok := supervisor.Wrap(cmd); ok && proc.start(sup) == nil {
		return proc, nil
	}
	ownGroup(cmd)
	if err := proc.start(cmd); err != nil {
		return nil, fmt.Errorf("exec: starting instance %d (%s): %w", i+1, opts.Command, err)
	}
	return proc, nil
}

// start starts cmd as p's process, and waits for it: once it has ended,
// p.done is closed and what is left of its group is killed. The goroutine
// that starts it keeps its OS thread until then, as the parent-death
// signal (Linux) comes when the thread that forked ends.
func (p *process) start(cmd *exec.Cmd) error {
	started := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		p.cmd, p.done = cmd, make(chan struct{})
		started <- nil
		p.err = cmd.Wait()
		signalGroup(cmd, true) // its children may outlive it
		groupExited(cmd, 5*time.Second)
		close(p.done)
	}()
	return <-started
}

// ended says how the process ended: its exit status, or why Wait failed.
func (p *process) ended() string {
	if p.cmd.ProcessState != nil {
		return p.cmd.ProcessState.String() // not ErrWaitDelay's text for a 0 status
	}
	return p.err.Error()
}

// waitReady polls the capabilities endpoint until it answers (2xx, or the
// 404 of a server that declares none), the process exits, or ready passes.
func (p *process) waitReady(ctx context.Context, base string, ready time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, ready)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+adapters.PathCapabilities, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 || resp.StatusCode == http.StatusNotFound {
				return nil
			}
			err = fmt.Errorf("GET %s: status %d", adapters.PathCapabilities, resp.StatusCode)
		}
		last = err
		select {
		case <-p.done:
			return fmt.Errorf("it exited (%s) before answering%s", p.ended(), p.output.quote())
		case <-ctx.Done():
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return ctx.Err() // interrupted
			}
			return fmt.Errorf("no answer to GET %s within %v (last: %v)%s", adapters.PathCapabilities, ready, last, p.output.quote())
		case <-tick.C:
		}
	}
}

// Stop stops every process: SIGTERM to its process group, then SIGKILL to
// the group when the process has ended, or after 5 s. It returns once
// every process of the group has exited (on Linux; elsewhere, once the
// process has), so a port it listened on is closed. Stopping twice does
// nothing more.
func (p *Processes) Stop() error {
	var wg sync.WaitGroup
	errs := make([]error, len(p.procs))
	for i, proc := range p.procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = proc.stop(5 * time.Second)
		}()
	}
	wg.Wait()
	p.procs = nil
	return errors.Join(errs...)
}

func (p *process) stop(grace time.Duration) error {
	select {
	case <-p.done: // and its group killed
		return nil
	default:
	}
	signalGroup(p.cmd, false)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	signalGroup(p.cmd, true)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		return fmt.Errorf("exec: pid %d did not exit", p.cmd.Process.Pid)
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// quote is the output as the end of an error message: "" when empty.
func (t *tailBuffer) quote() string {
	s := strings.TrimRight(t.String(), "\n")
	if s == "" {
		return " (it printed nothing)"
	}
	var b bytes.Buffer
	b.WriteString("; the end of its output:")
	for _, line := range strings.Split(s, "\n") {
		b.WriteString("\n    " + line)
	}
	return b.String()
}
