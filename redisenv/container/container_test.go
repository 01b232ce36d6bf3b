package container_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"

	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/redisenv/container"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// childEnv makes the test binary a helper process of a test: "hold" obtains
// a Redis through the rung, prints its address, and waits to be killed;
// "fallback" runs TestWhenTheContainerRungFailsTheErrorNamesEveryWay's checks.
const childEnv = "RLCONFORM_CONTAINER_TEST_CHILD"

func TestMain(m *testing.M) {
	// Ryuk cannot be pulled where no registry answers; the rung removes its
	// own containers, which is what these tests check.
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	if os.Getenv(childEnv) == "hold" {
		os.Exit(hold())
	}
	os.Exit(m.Run())
}

// hold is the helper process that a test kills while it holds a container.
func hold() int {
	os.Setenv(redisenv.SelectEnv, "container")
	r, err := redisenv.Obtain(context.Background())
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("ready", r.Addr)
	bufio.NewReader(os.Stdin).ReadString('\n') // blocks until killed
	return 0
}

// needDocker skips the test when no Docker engine answers, saying so; where
// the CI started one (RLCONFORM_REQUIRE_DOCKER set), not finding it fails.
// go test -short skips it anyway.
func needDocker(t *testing.T) {
	t.Helper()
	testtier.SkipShort(t, "starts Redis containers")
	if err := container.DockerAvailable(t.Context()); err != nil {
		if os.Getenv("RLCONFORM_REQUIRE_DOCKER") != "" {
			t.Fatalf("RLCONFORM_REQUIRE_DOCKER is set (a Docker engine was started for these tests), but none answers: %v", err)
		}
		t.Skipf("skipped: no Docker engine: %v", err)
	}
}

// dockerClient talks to the engine the rung uses, to check on its containers.
func dockerClient(t *testing.T) *testcontainers.DockerClient {
	t.Helper()
	cli, err := testcontainers.NewDockerClientWithOpts(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })
	return cli
}

// containersOf lists the rung's containers whose owner is process pid of
// this machine.
func containersOf(t *testing.T, cli *testcontainers.DockerClient, pid int) []string {
	t.Helper()
	list, err := cli.ContainerList(t.Context(), client.ContainerListOptions{
		All: true, Filters: make(client.Filters).Add("label", container.Label),
	})
	require.NoError(t, err)
	hostname, err := os.Hostname()
	require.NoError(t, err)
	var ids []string
	for _, c := range list.Items {
		if strings.HasPrefix(c.Labels[container.OwnerLabel], hostname+"/"+strconv.Itoa(pid)+"/") {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

func TestContainerRungGradesTheReference(t *testing.T) {
	needDocker(t)
	cli := dockerClient(t)
	require.Empty(t, containersOf(t, cli, os.Getpid()), "no container of this process before the test")

	// Chosen explicitly, the rung wins over REDIS_URL and a redis-server on PATH.
	t.Setenv(redisenv.SelectEnv, "container")
	t.Setenv("REDIS_URL", "redis://127.0.0.1:1/0")
	begin := time.Now()
	r, err := redisenv.Obtain(t.Context())
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			r.Close()
		}
	})
	_, dockerenv := os.Stat("/.dockerenv")
	t.Logf("container rung: a ready Redis at %s in %v (image %s; /.dockerenv present: %v)",
		r.Addr, time.Since(begin).Round(time.Millisecond), container.Image(), dockerenv == nil)
	assert.Equal(t, redisenv.SourceContainer, r.Source)
	assert.Nil(t, r.Server, "a container is not a redis-server process of ours")

	ids := containersOf(t, cli, os.Getpid())
	require.Len(t, ids, 1, "one labelled container, owned by this process")
	in, err := cli.ContainerInspect(t.Context(), ids[0], client.ContainerInspectOptions{})
	require.NoError(t, err)
	assert.Equal(t, container.Image(), in.Container.Config.Image)
	assert.Equal(t, "redis", in.Container.Config.Labels[container.Label])

	// An engine on this machine: the container is on the host's network and
	// the rung dials 127.0.0.1 on Redis's port, whatever /.dockerenv says
	// (testcontainers-go alone would dial the default gateway).
	info, err := cli.Client.Info(t.Context(), client.InfoOptions{})
	require.NoError(t, err)
	hostname, _ := os.Hostname()
	host, port, err := net.SplitHostPort(r.Addr)
	require.NoError(t, err)
	if _, set := os.LookupEnv("TESTCONTAINERS_HOST_OVERRIDE"); !set && os.Getenv(container.NetworkEnv) == "" &&
		strings.HasPrefix(cli.DaemonHost(), "unix://") && info.Info.Name == hostname {
		assert.Equal(t, "127.0.0.1", host, "an engine on this machine is dialled on loopback only")
		assert.Equal(t, "host", string(in.Container.HostConfig.NetworkMode))
		assert.Contains(t, in.Container.Config.Cmd, port, "Redis listens on the port dialled")
		assert.Equal(t, "redis://"+r.Addr, r.URL)
	} else {
		t.Logf("the engine is not on this machine (%s, named %q): dialled at %s", cli.DaemonHost(), info.Info.Name, r.Addr)
	}

	rep, err := suite.Check(t.Context(), suite.Config{Redis: r, Level: result.Core}, targets.Reference())
	require.NoError(t, err)
	v := rep.Verdict()
	require.Equal(t, result.Conformant, v.Outcome, "%v", v.Reasons)
	assert.Positive(t, v.Coverage.Graded)
	assert.Equal(t, v.Coverage.Graded, v.Coverage.Passed)

	begin = time.Now()
	require.NoError(t, r.Close())
	closed = true
	t.Logf("container rung: removed in %v", time.Since(begin).Round(time.Millisecond))
	_, err = cli.ContainerInspect(t.Context(), ids[0], client.ContainerInspectOptions{})
	assert.True(t, cerrdefs.IsNotFound(err), "Close removes the container: %v", err)
	assert.Empty(t, containersOf(t, cli, os.Getpid()))
}

func TestTheImageIsConfigurable(t *testing.T) {
	needDocker(t)
	cli := dockerClient(t)
	// A second name for the image, as a registry mirror would give it.
	alias := "rlconform-test/redis-alias:" + strconv.Itoa(os.Getpid())
	_, err := cli.ImageTag(t.Context(), client.ImageTagOptions{Source: container.Image(), Target: alias})
	require.NoError(t, err, "the image %s must be on the engine (scripts/docker-engine up builds one)", container.Image())
	t.Cleanup(func() {
		cli.ImageRemove(context.Background(), alias, client.ImageRemoveOptions{})
	})
	t.Setenv(container.ImageEnv, alias)
	require.Equal(t, alias, container.Image())
	r, err := container.Start(t.Context())
	require.NoError(t, err)
	defer r.Close()
	ids := containersOf(t, cli, os.Getpid())
	require.Len(t, ids, 1)
	in, err := cli.ContainerInspect(t.Context(), ids[0], client.ContainerInspectOptions{})
	require.NoError(t, err)
	assert.Equal(t, alias, in.Container.Config.Image)
	require.NoError(t, r.Client.Set(t.Context(), "k", "v", time.Minute).Err())
}

func TestAKilledProcessLeavesNoContainer(t *testing.T) {
	needDocker(t)
	cli := dockerClient(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	child := exec.Command(exe)
	child.Env = append(os.Environ(), childEnv+"=hold")
	child.Stderr = os.Stderr
	stdin, err := child.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	defer child.Process.Kill()

	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(line, "ready "), "the helper got a Redis: %s", line)
	ids := containersOf(t, cli, child.Process.Pid)
	require.Len(t, ids, 1, "the helper's container is labelled with its owner")

	require.NoError(t, child.Process.Kill()) // SIGKILL: no Close, no deferred call runs
	_ = child.Wait()
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := cli.ContainerInspect(t.Context(), ids[0], client.ContainerInspectOptions{})
		if cerrdefs.IsNotFound(err) {
			break
		}
		require.True(t, time.Now().Before(deadline), "the killed process's container is still there after 60 s (%v)", err)
		<-tick.C
	}
	assert.Empty(t, containersOf(t, cli, child.Process.Pid))
}

func TestAnUnknownChoiceOfRungIsAnError(t *testing.T) {
	t.Setenv(redisenv.SelectEnv, "docker")
	_, err := redisenv.Obtain(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "container, redis-server")
}

func TestWhenTheContainerRungFailsTheErrorNamesEveryWay(t *testing.T) {
	// testcontainers-go resolves the Docker host once per process: a child
	// process gets the missing one, so that the other tests keep theirs.
	if os.Getenv(childEnv) != "fallback" {
		exe, err := os.Executable()
		require.NoError(t, err)
		child := exec.Command(exe, "-test.run=^"+t.Name()+"$", "-test.v")
		child.Env = append(os.Environ(), childEnv+"=fallback")
		out, err := child.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "--- PASS: "+t.Name(), "%s", out)
		return
	}
	t.Setenv("REDIS_URL", "")
	t.Setenv(redisenv.SelectEnv, "")
	t.Setenv("PATH", t.TempDir()) // no redis-server
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/rlconform-docker.sock")
	// testcontainers-go goes on to the default socket when DOCKER_HOST does
	// not answer: where an engine listens there, a network mode that does
	// not exist makes the rung fail all the same.
	t.Setenv(container.NetworkEnv, "no-such-network")
	start := time.Now()
	_, err := redisenv.Obtain(context.Background())
	require.ErrorIs(t, err, redisenv.ErrNoRedis)
	for _, way := range []string{"REDIS_URL", "redis-server", "Docker"} {
		assert.Contains(t, err.Error(), way, "the error names every way to get Redis")
	}
	assert.NotContains(t, err.Error(), "not linked in", "importing the package adds the rung")
	assert.Less(t, time.Since(start), 30*time.Second)

	// Chosen explicitly, the rung's failure is the error.
	t.Setenv(redisenv.SelectEnv, "container")
	_, err = redisenv.Obtain(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "RLCONFORM_REDIS=container")
}
