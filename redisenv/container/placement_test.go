package container

import (
	"os"
	"os/exec"
	"strconv"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlacement(t *testing.T) {
	here := facts{host: "unix:///var/run/docker.sock", name: "vm", osType: "linux"}
	rootless := here
	rootless.rootless = true
	desktop := facts{host: "unix:///Users/me/.docker/run/docker.sock", name: "docker-desktop", osType: "linux"}
	remote := facts{host: "tcp://10.1.2.3:2376", name: "builder", osType: "linux"}
	tests := []struct {
		name              string
		f                 facts
		override, network string
		want              placement
	}{
		// The case of this machine: /.dockerenv exists, the engine runs here;
		// the answer does not depend on /.dockerenv at all.
		{"an engine on this machine", here, "", "", placement{hostNetwork: true, dialHost: "127.0.0.1", publishLoopback: true}},
		{"on this machine, a published port asked for", here, "", "bridge", placement{dialHost: "127.0.0.1", publishLoopback: true}},
		{"the user's host override wins", here, "172.17.0.1", "", placement{dialHost: "172.17.0.1"}},
		{"override with the host network asked for", here, "127.0.0.1", "host", placement{hostNetwork: true, dialHost: "127.0.0.1"}},
		{"rootless: its host network is not ours", rootless, "", "", placement{}},
		{"Docker Desktop's VM", desktop, "", "", placement{}},
		{"a tcp engine is dialled at its host", remote, "", "", placement{dialHost: "10.1.2.3"}},
		{"another machine's name on a unix socket", facts{host: here.host, name: "ci-host", osType: "linux"}, "", "", placement{}},
		{"a windows engine", facts{host: "npipe:////./pipe/docker_engine", name: "vm", osType: "windows"}, "", "", placement{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decide(tt.f, "vm", tt.override, tt.network)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	_, err := decide(here, "vm", "", "overlay")
	require.ErrorContains(t, err, NetworkEnv)
}

func TestOnThisMachineTheRungDialsLoopbackOnly(t *testing.T) {
	for _, network := range []string{"", "host", "bridge"} {
		p, err := decide(facts{host: "unix:///run/docker.sock", name: "box", osType: "linux"}, "BOX", "", network)
		require.NoError(t, err)
		assert.True(t, p.dialLoopback(), "network %q: dials %q", network, p.dialHost)
	}
}

func TestImageName(t *testing.T) {
	t.Setenv(ImageEnv, "")
	assert.Equal(t, DefaultImage, Image())
	t.Setenv(ImageEnv, " mirror.example/library/redis:7 ")
	assert.Equal(t, "mirror.example/library/redis:7", Image())
}

func TestOwners(t *testing.T) {
	me := owner()
	assert.True(t, ownerAlive(me), "this process: %s", me)
	hostname, err := os.Hostname()
	require.NoError(t, err)
	pid := strconv.Itoa(os.Getpid())
	if processStart(os.Getpid()) != "" {
		assert.False(t, ownerAlive(hostname+"/"+pid+"/1"), "this pid, another start time: an ended process whose pid was reused")
	}
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	assert.False(t, ownerAlive(hostname+"/"+strconv.Itoa(dead.Process.Pid)+"/"), "an ended process")
	assert.True(t, ownerAlive("another-machine/1/1"), "another machine's processes are not ours to judge")
	assert.True(t, ownerAlive("garbage"), "a label that does not parse is left alone")
}

func TestSweepRemovesTheLeftoversOfEndedProcessesOnly(t *testing.T) {
	testtier.SkipShort(t, "starts containers")
	if err := DockerAvailable(t.Context()); err != nil {
		if os.Getenv("RLCONFORM_REQUIRE_DOCKER") != "" {
			t.Fatalf("RLCONFORM_REQUIRE_DOCKER is set, but no Docker engine answers: %v", err)
		}
		t.Skipf("skipped: no Docker engine: %v", err)
	}
	hostname, err := os.Hostname()
	require.NoError(t, err)
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	deadOwner := hostname + "/" + strconv.Itoa(dead.Process.Pid) + "/"
	// Three containers: one of this process, one of another machine, one
	// of an ended process of this machine (as a killed run whose watchdog
	// died too leaves it), started last: every start sweeps first.
	mine, err := Start(t.Context())
	require.NoError(t, err)
	defer mine.Close()
	foreign, err := start(t.Context(), "another-machine/1/1")
	require.NoError(t, err)
	defer foreign.Close()
	leftover, err := start(t.Context(), deadOwner)
	require.NoError(t, err)
	defer leftover.Close()

	e, err := connect(t.Context())
	require.NoError(t, err)
	defer e.cli.Close()
	idOf := func(owner string) string {
		list, err := e.cli.ContainerList(t.Context(), client.ContainerListOptions{
			All: true, Filters: make(client.Filters).Add("label", OwnerLabel+"="+owner),
		})
		require.NoError(t, err)
		require.Len(t, list.Items, 1, owner)
		return list.Items[0].ID
	}
	leftoverID, foreignID, mineID := idOf(deadOwner), idOf("another-machine/1/1"), idOf(owner())
	gone := func(id string) bool {
		_, err := e.cli.ContainerInspect(t.Context(), id, client.ContainerInspectOptions{})
		return cerrdefs.IsNotFound(err)
	}

	n, err := Sweep(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.True(t, gone(leftoverID), "the ended process's container is removed")
	assert.False(t, gone(foreignID), "another machine's container is kept")
	assert.False(t, gone(mineID), "a live process's container is kept")
	require.NoError(t, mine.Client.Ping(t.Context()).Err(), "the live Redis still answers")
	require.NoError(t, leftover.Close(), "closing what a sweep removed is no error")

	// The next start sweeps too.
	again, err := start(t.Context(), deadOwner)
	require.NoError(t, err)
	defer again.Close()
	againID := idOf(deadOwner)
	next, err := Start(t.Context())
	require.NoError(t, err)
	defer next.Close()
	assert.True(t, gone(againID), "Start removes the leftovers of ended processes")

	require.NoError(t, foreign.Close())
	assert.True(t, gone(foreignID), "Close removes the container")
}
