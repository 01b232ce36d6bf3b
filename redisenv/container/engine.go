package container

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// loopbackIP is where the rung publishes and dials for an engine on this machine.
var loopbackIP = netip.AddrFrom4([4]byte{127, 0, 0, 1})

// engine is a Docker engine that answered, and what the rung needs to know
// of it.
type engine struct {
	cli   *testcontainers.DockerClient
	facts facts
}

// facts are what decides where the container runs and how it is dialled.
type facts struct {
	host     string // the engine's address as testcontainers-go resolved it: unix:///var/run/docker.sock, tcp://h:2376
	name     string // the engine's name: the hostname of the machine it runs on
	osType   string // "linux" or "windows"
	rootless bool   // a rootless engine: its host network is not this machine's
}

// onThisMachine reports whether the engine runs on this very machine, in
// its network: a unix socket, a Linux engine whose name is this machine's
// hostname, not rootless. Docker Desktop's VM has a name of its own, and so
// has the machine behind a socket mounted into a container.
func (f facts) onThisMachine(hostname string) bool {
	return strings.HasPrefix(f.host, "unix://") && f.osType == "linux" && !f.rootless &&
		f.name != "" && strings.EqualFold(f.name, hostname)
}

// connect asks the Docker engine testcontainers-go finds (DOCKER_HOST, its
// properties file, the default socket, a rootless one) whether it answers,
// within dockerTimeout and without panicking (testcontainers-go panics
// when it finds no Docker host).
func connect(ctx context.Context) (*engine, error) {
	ctx, cancel := context.WithTimeout(ctx, dockerTimeout)
	defer cancel()
	type result struct {
		e   *engine
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{err: fmt.Errorf("testcontainers-go panicked looking for Docker: %v", r)}
			}
		}()
		cli, err := testcontainers.NewDockerClientWithOpts(ctx)
		if err != nil {
			done <- result{err: fmt.Errorf("testcontainers-go found no Docker engine (DOCKER_HOST, ~/.testcontainers.properties, /var/run/docker.sock, a rootless socket): %w", err)}
			return
		}
		// The embedded client's Info: testcontainers' own caches the first
		// answer for the whole process, whichever engine gave it.
		info, err := cli.Client.Info(ctx, client.InfoOptions{})
		if err != nil {
			cli.Close()
			done <- result{err: fmt.Errorf("docker info at %s: %w", cli.DaemonHost(), err)}
			return
		}
		done <- result{e: &engine{cli: cli, facts: facts{
			host:     cli.DaemonHost(),
			name:     info.Info.Name,
			osType:   info.Info.OSType,
			rootless: slices.Contains(info.Info.SecurityOptions, "name=rootless"),
		}}}
	}()
	select {
	case r := <-done:
		return r.e, r.err
	case <-ctx.Done():
		go func() { // the answer may still come: close what it opened
			if r := <-done; r.e != nil {
				r.e.cli.Close()
			}
		}()
		return nil, fmt.Errorf("no answer from Docker within %v", dockerTimeout)
	}
}

// placement is where the container runs and how the rung dials it.
type placement struct {
	hostNetwork     bool   // the engine's host network (else a published port)
	dialHost        string // the host to dial; "" asks testcontainers-go (Container.Host)
	publishLoopback bool   // publish the port on 127.0.0.1 only
}

// dialLoopback reports whether the rung dials this machine's loopback.
func (p placement) dialLoopback() bool {
	if p.dialHost == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(p.dialHost)
	return err == nil && ip.IsLoopback()
}

// decide places the container: see Start. override is
// TESTCONTAINERS_HOST_OVERRIDE, network is NetworkEnv's value.
func decide(f facts, hostname, override, network string) (placement, error) {
	switch network {
	case "", "auto", "host", "bridge":
	default:
		return placement{}, fmt.Errorf("container rung: %s=%q: want host, bridge or nothing", NetworkEnv, network)
	}
	switch {
	case override != "":
		return placement{hostNetwork: network == "host", dialHost: override}, nil
	case f.onThisMachine(hostname):
		return placement{hostNetwork: network != "bridge", dialHost: loopbackIP.String(), publishLoopback: true}, nil
	}
	var host string
	if u, err := url.Parse(f.host); err == nil && (u.Scheme == "tcp" || u.Scheme == "http" || u.Scheme == "https") {
		host = u.Hostname()
	}
	return placement{hostNetwork: network == "host", dialHost: host}, nil
}
