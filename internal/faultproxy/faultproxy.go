// Package faultproxy puts a Toxiproxy proxy between a test's grader and
// its target, in the test's own process: latency, resets and cuts on the
// way, as a network between two regions or a load balancer that drops
// connections would add them. It serves tests only: every call takes a
// testing.TB and fails it on error.
//
// Typical usage:
//
//	p := faultproxy.Start(t, targetAddr) // "127.0.0.1:PORT" of the target
//	p.Add(t, faultproxy.Toxic{Name: "rst", Type: "reset_peer", Stream: "downstream", Toxicity: 0.5})
//	grade("http://" + p.Addr())
package faultproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Proxy is one TCP proxy, listening on a free loopback port.
type Proxy struct {
	proxy *toxiproxy.Proxy
	addr  string
}

// Toxic is one fault, as Toxiproxy's API takes it: Type is a toxic's name
// ("latency", "reset_peer", "timeout", "slow_close", "limit_data",
// "bandwidth", "slicer"), Stream "upstream" (towards the target) or
// "downstream" (its answers), Toxicity the share of connections it
// applies to (0 is taken as 1), Attributes the toxic's own (latency and
// jitter in ms, a reset's timeout in ms…).
type Toxic struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float32        `json:"toxicity"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// Start starts a proxy to upstream (HOST:PORT) on a free loopback port,
// stopped when the test ends.
func Start(t testing.TB, upstream string) *Proxy {
	t.Helper()
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(server, t.Name(), "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("faultproxy: starting a proxy to %s: %v", upstream, err)
	}
	t.Cleanup(p.Stop)
	return &Proxy{proxy: p, addr: p.Listen}
}

// Addr is the proxy's HOST:PORT.
func (p *Proxy) Addr() string { return p.addr }

// Add adds a toxic: on the connections open now too, each taken with
// the toxic's toxicity.
func (p *Proxy) Add(t testing.TB, x Toxic) {
	t.Helper()
	if err := p.add(x); err != nil {
		t.Fatal(err)
	}
}

// Remove removes the toxic named name.
func (p *Proxy) Remove(t testing.TB, name string) {
	t.Helper()
	if err := p.remove(name); err != nil {
		t.Fatal(err)
	}
}

func (p *Proxy) add(x Toxic) error {
	if x.Toxicity == 0 {
		x.Toxicity = 1
	}
	b, err := json.Marshal(x)
	if err != nil {
		return fmt.Errorf("faultproxy: toxic %+v: %w", x, err)
	}
	if _, err := p.proxy.Toxics.AddToxicJson(bytes.NewReader(b)); err != nil {
		return fmt.Errorf("faultproxy: adding toxic %s: %w", b, err)
	}
	return nil
}

func (p *Proxy) remove(name string) error {
	if err := p.proxy.Toxics.RemoveToxic(context.Background(), name); err != nil {
		return fmt.Errorf("faultproxy: removing toxic %s: %w", name, err)
	}
	return nil
}

// Flap adds x for on, then takes it away for off, again and again until
// the test ends or stop is called: a fault that comes and goes (a load
// balancer resetting the connections it holds now and then). It returns how
// many times x was added so far.
func (p *Proxy) Flap(t testing.TB, x Toxic, on, off time.Duration) (stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	flaps := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if !pause(ctx, off) {
				return
			}
			if err := p.add(x); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			flaps++
			mu.Unlock()
			pause(ctx, on)
			if err := p.remove(x.Name); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	stop = func() int {
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return flaps
	}
	t.Cleanup(func() { stop() })
	return stop
}

// pause waits d, or until ctx ends (false).
func pause(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
