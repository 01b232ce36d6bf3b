// Package container is the third rung of redisenv's ladder: a Redis started
// by testcontainers-go where a Docker engine answers. It is a package of its
// own so that only the programs that want it link testcontainers and its
// dependencies (about 110 packages); importing it, even blank, adds the rung
// to redisenv.Obtain:
//
//	import _ "github.com/rlconform/rlconform/redisenv/container"
//
// The rlconform command imports it. redisenv.Obtain reaches the rung after
// REDIS_URL and a redis-server on PATH, or first and alone when
// RLCONFORM_REDIS=container; Start is the same rung called directly.
//
// Where Redis runs and which address is dialled (see [Start]) never depends
// on whether this process runs inside a container: for an engine on this
// machine the rung dials 127.0.0.1 only. Every container carries [Label]
// and [OwnerLabel]; it is removed by Close, by a watchdog process when this
// process dies first (killed, interrupted, a test binary's timeout), and
// otherwise by [Sweep], which every Start runs first. Ryuk, testcontainers'
// own reaper, is not needed (TESTCONTAINERS_RYUK_DISABLED=true suits
// machines that cannot pull its image).
package container

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	dcontainer "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"

	"github.com/rlconform/rlconform/redisenv"
)

func init() {
	if id := os.Getenv(watchdogIDEnv); id != "" {
		// This process is the watchdog of another one's container (see
		// watchdog.go): it does that job and nothing else.
		os.Exit(watch(id, os.Getenv(watchdogHostEnv)))
	}
	redisenv.RegisterContainerRung(Start)
}

// DefaultImage is the image the rung starts unless ImageEnv names another.
const DefaultImage = "redis:7-alpine"

// ImageEnv names the environment variable that replaces DefaultImage, for
// registries that mirror images under other names and for images built
// locally. The image must have redis-server on its PATH.
const ImageEnv = "RLCONFORM_REDIS_IMAGE"

// NetworkEnv names the environment variable that forces how the container
// is reached: "host" (the host's network, Redis on a free port) or "bridge"
// (a published port). Unset, the rung decides (see Start).
const NetworkEnv = "RLCONFORM_REDIS_NETWORK"

// Labels every container of the rung carries.
const (
	// Label marks the containers the rung starts; its value is "redis".
	// `docker ps -a --filter label=org.rlconform.redisenv` lists them.
	Label = "org.rlconform.redisenv"
	// OwnerLabel names the process that started the container, as
	// hostname/pid/start (start: the process's start time where the system
	// tells it), so that Sweep removes only the leftovers of ended processes.
	OwnerLabel = "org.rlconform.owner"
)

// Image is the image the rung starts: ImageEnv when set, else DefaultImage.
func Image() string {
	if img := strings.TrimSpace(os.Getenv(ImageEnv)); img != "" {
		return img
	}
	return DefaultImage
}

// dockerTimeout bounds the question "does a Docker engine answer?".
const dockerTimeout = 10 * time.Second

// readyTimeout bounds the wait for a started container's Redis to answer:
// generous, for slow shared machines; a container that exits ends it early.
const readyTimeout = 60 * time.Second

// DockerAvailable reports whether a Docker engine answers, within 10 s and
// without panicking (testcontainers-go may panic when it finds no Docker
// host). The error says why not.
func DockerAvailable(ctx context.Context) error {
	e, err := connect(ctx)
	if err != nil {
		return err
	}
	return e.cli.Close()
}

// Start starts Image() with testcontainers-go's Redis module when a Docker
// engine answers, waits until its Redis answers, and connects to it. Close
// removes the container.
//
// How the container is reached:
//   - an engine on this machine (a unix socket; the engine's name is this
//     machine's hostname; not rootless): the container runs on the host's
//     network, Redis bound to 127.0.0.1 on a free port, dialled at
//     127.0.0.1. Nothing else is dialled, whatever /.dockerenv says;
//   - TESTCONTAINERS_HOST_OVERRIDE set: a published port, dialled at that host;
//   - an engine elsewhere (DOCKER_HOST=tcp://host:port, Docker Desktop's
//     VM, a socket of another machine's engine mounted into a container): a
//     published port, dialled where testcontainers-go says the engine's
//     ports are (the tcp host; localhost; the gateway inside a container).
//
// NetworkEnv forces the host network or a published port.
func Start(ctx context.Context) (*redisenv.Redis, error) {
	return start(ctx, owner())
}

// start is Start with the owner label given (tests forge dead owners).
func start(ctx context.Context, ownerID string) (_ *redisenv.Redis, err error) {
	e, err := connect(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			e.cli.Close()
		}
	}()
	_, _ = sweep(ctx, e.cli) // best effort: a failure here must not cost the user a Redis
	hostname, _ := os.Hostname()
	pl, err := decide(e.facts, hostname, os.Getenv("TESTCONTAINERS_HOST_OVERRIDE"), os.Getenv(NetworkEnv))
	if err != nil {
		return nil, err
	}
	image := Image()

	port := redisPort
	if pl.hostNetwork {
		if port, err = freePort(); err != nil {
			return nil, fmt.Errorf("container rung: finding a free loopback port: %w", err)
		}
	}
	return launch(ctx, e, pl, image, port, ownerID)
}

// launch runs image on the engine e, placed as pl with Redis listening on
// port, waits until that Redis answers and returns it connected; closing it
// removes the container and the engine's client. A failed launch removes
// whatever it started, so that no container outlives the error.
func launch(ctx context.Context, e *engine, pl placement, image string, port int, ownerID string) (*redisenv.Redis, error) {
	var dog *watchdog
	watch := func(_ context.Context, c testcontainers.Container) error {
		var err error
		dog, err = startWatchdog(c.GetContainerID(), e.facts.host)
		return err
	}
	opts := append(containerOptions(redisArgs(pl, port), ownerID, watch), networkOptions(pl)...)

	c, runErr := tcredis.Run(ctx, image, opts...)
	var id string
	if c != nil {
		id = c.GetContainerID()
	}
	remove := func(ctx context.Context) error {
		var err error
		if id != "" {
			err = removeContainer(ctx, e.cli, id)
		}
		dog.stop(err == nil)
		return err
	}
	fail := func(err error) (*redisenv.Redis, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		return nil, errors.Join(err, remove(ctx))
	}
	if runErr != nil {
		return fail(fmt.Errorf("container rung: starting %s on the Docker engine at %s: %w%s", image, e.facts.host, runErr, hint(runErr, image)))
	}

	addr, err := dialAddr(ctx, c, pl, image, port)
	if err != nil {
		return fail(err)
	}
	if err := waitReady(ctx, addr, e.cli, id); err != nil {
		return fail(notReady(pl, image, addr, err))
	}
	rc := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	return redisenv.Wrap(rc, redisenv.SourceContainer, addr, "redis://"+addr,
		func(ctx context.Context) error {
			defer e.cli.Close()
			if err := remove(ctx); err != nil {
				return fmt.Errorf("container rung: removing container %.12s: %w", id, err)
			}
			return nil
		}), nil
}

// redisArgs is the command line of the container's redis-server: a
// throwaway store on port, bound to loopback when it shares this machine's
// network so that nothing else can reach it.
func redisArgs(pl placement, port int) []string {
	args := []string{"redis-server", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--protected-mode", "no"}
	if pl.hostNetwork && pl.dialLoopback() {
		args = append(args, "--bind", "127.0.0.1")
	}
	return args
}

// containerOptions are the options every container of the rung gets,
// wherever it runs: its command, the labels Sweep finds it by, no waiting
// by testcontainers, and watch, run once the container exists, to start
// the watchdog that removes it should this process die.
func containerOptions(args []string, ownerID string, watch testcontainers.ContainerHook) []testcontainers.ContainerCustomizer {
	return []testcontainers.ContainerCustomizer{
		testcontainers.WithCmd(args...),
		testcontainers.WithLabels(map[string]string{Label: "redis", OwnerLabel: ownerID}),
		// Readiness is ours (launch): testcontainers' waits dial the address
		// it computes, the gateway when /.dockerenv exists.
		testcontainers.CustomizeRequestOption(func(req *testcontainers.GenericContainerRequest) error {
			req.WaitingFor = nil
			return nil
		}),
		testcontainers.WithAdditionalLifecycleHooks(testcontainers.ContainerLifecycleHooks{
			PostCreates: []testcontainers.ContainerHook{watch},
		}),
	}
}

// networkOptions put the container where pl says: on the engine's host
// network, or behind a published port (on loopback only when the rung
// dials loopback).
func networkOptions(pl placement) []testcontainers.ContainerCustomizer {
	if pl.hostNetwork {
		return []testcontainers.ContainerCustomizer{
			testcontainers.CustomizeRequestOption(func(req *testcontainers.GenericContainerRequest) error {
				req.ExposedPorts = nil // nothing to publish on the host's network
				return nil
			}),
			testcontainers.WithHostConfigModifier(func(hc *dcontainer.HostConfig) { hc.NetworkMode = "host" }),
			// testcontainers attaches containers to its own network when the
			// engine has no "bridge" one: not a container on the host's network.
			testcontainers.WithEndpointSettingsModifier(func(s map[string]*network.EndpointSettings) { clear(s) }),
		}
	}
	if pl.publishLoopback {
		return []testcontainers.ContainerCustomizer{testcontainers.WithHostConfigModifier(func(hc *dcontainer.HostConfig) {
			hc.PortBindings = network.PortMap{
				network.MustParsePort(redisPortSpec): {{HostIP: loopbackIP}},
			}
		})}
	}
	return nil
}

// dialAddr is the address the rung dials to reach the Redis of container c:
// the port Redis listens on, or the one the engine published for it, at the
// host pl names or, when it names none, where testcontainers-go says the
// engine's ports are.
func dialAddr(ctx context.Context, c testcontainers.Container, pl placement, image string, port int) (string, error) {
	dialPort := port
	if !pl.hostNetwork {
		mapped, err := c.MappedPort(ctx, redisPortSpec)
		if err != nil {
			return "", fmt.Errorf("container rung: the port of %s: %w", image, err)
		}
		dialPort = int(mapped.Num())
	}
	host := pl.dialHost
	if host == "" {
		var err error
		if host, err = c.Host(ctx); err != nil {
			return "", fmt.Errorf("container rung: where the engine's ports are: %w", err)
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(dialPort)), nil
}

// notReady is the error of a container whose Redis never answered at addr;
// on the host network it says how to leave it, the likely cause being an
// engine that does not share this machine's network.
func notReady(pl placement, image, addr string, err error) error {
	msg := fmt.Errorf("container rung: %s at %s did not answer: %w", image, addr, err)
	if pl.hostNetwork {
		msg = fmt.Errorf("%w (the container runs on the engine's host network: set %s=bridge when the engine does not share this machine's network)", msg, NetworkEnv)
	}
	return msg
}

const (
	redisPort     = 6379
	redisPortSpec = "6379/tcp"
)

// removeContainer kills and removes the container id with its anonymous
// volumes; a container already gone is no error.
func removeContainer(ctx context.Context, cli *testcontainers.DockerClient, id string) error {
	_, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return err
	}
	return nil
}

// waitReady polls Redis at addr until it answers PING, giving up when the
// container stops running or after readyTimeout.
func waitReady(ctx context.Context, addr string, cli *testcontainers.DockerClient, id string) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	probe := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, ContextTimeoutEnabled: true})
	defer probe.Close()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var nextInspect time.Time
	for {
		err := probe.Ping(ctx).Err()
		if err == nil {
			return nil
		}
		if now := time.Now(); now.After(nextInspect) {
			nextInspect = now.Add(250 * time.Millisecond)
			if res, ierr := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); ierr == nil &&
				res.Container.State != nil && !res.Container.State.Running {
				return fmt.Errorf("the container stopped (%s, exit code %d)%s",
					res.Container.State.Status, res.Container.State.ExitCode, logTail(ctx, cli, id))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// logTail is the end of the container's output, for an error message.
func logTail(ctx context.Context, cli *testcontainers.DockerClient, id string) string {
	rc, err := cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: "20"})
	if err != nil {
		return ""
	}
	defer rc.Close()
	var out bytes.Buffer
	_, _ = stdcopy.StdCopy(&out, &out, io.LimitReader(rc, 64<<10))
	if out.Len() == 0 {
		return ""
	}
	return ":\n" + out.String()
}

// hint adds what to do about the failures of a machine without registry access.
func hint(err error, image string) string {
	msg := strings.ToLower(err.Error())
	switch {
	case strings.Contains(msg, "ryuk") || strings.Contains(msg, "reaper"):
		return "\n(Ryuk, testcontainers' reaper, could not start: where its image cannot be pulled, set TESTCONTAINERS_RYUK_DISABLED=true; the rung removes its own containers)"
	case strings.Contains(msg, "pull") || strings.Contains(msg, "no such image") || strings.Contains(msg, "not found"):
		return fmt.Sprintf("\n(the image %s is not on the engine and could not be pulled: name a mirror's image with %s, or build one locally: scripts/docker-engine up)", image, ImageEnv)
	}
	return ""
}

// freePort is a TCP port free on 127.0.0.1 of this machine.
func freePort() (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(loopbackIP.String(), "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Sweep removes the containers the rung started in processes of this
// machine that have ended without removing them (the watchdog of a killed
// process was killed too, or the engine did not answer it). Containers of
// live processes and of other machines are left alone: tests running at
// the same time keep theirs. Start sweeps first; Sweep returns how many
// containers it removed.
func Sweep(ctx context.Context) (int, error) {
	e, err := connect(ctx)
	if err != nil {
		return 0, err
	}
	defer e.cli.Close()
	return sweep(ctx, e.cli)
}

func sweep(ctx context.Context, cli *testcontainers.DockerClient) (int, error) {
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{
		All: true, Filters: make(client.Filters).Add("label", Label),
	})
	if err != nil {
		return 0, fmt.Errorf("container rung: listing leftover containers: %w", err)
	}
	removed := 0
	var errs []error
	for _, c := range list.Items {
		if ownerAlive(c.Labels[OwnerLabel]) {
			continue
		}
		if err := removeContainer(ctx, cli, c.ID); err != nil {
			errs = append(errs, fmt.Errorf("container rung: removing leftover %.12s: %w", c.ID, err))
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}
