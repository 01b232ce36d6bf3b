package cli

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/internal/faultproxy"
	"github.com/rlconform/rlconform/internal/testtier"
)

// far is a network between two regions: oneWay ± jitter each way (50 ±
// 45 ms: a round trip of 100 ± 90 ms).
func far(oneWay, jitter time.Duration) []faultproxy.Toxic {
	attrs := map[string]any{"latency": oneWay.Milliseconds(), "jitter": jitter.Milliseconds()}
	return []faultproxy.Toxic{
		{Name: "far-up", Type: "latency", Stream: "upstream", Attributes: attrs},
		{Name: "far-down", Type: "latency", Stream: "downstream", Attributes: attrs},
	}
}

// TestFarTargetIsGradedInFull grades the reference served by two
// processes of rlconform serve (clock control, on the tests' Redis)
// through a fault proxy that adds 50 ± 45 ms each way, 100 ± 90 ms a
// round trip, at level strict: exit 0 (7m21s on two cores, the figure in
// docs/realtime.md). It is a measurement, minutes long, run only when
// RLCONFORM_FAR is set (RLCONFORM_FAR=1 go test ./cli -run
// TestFarTargetIsGradedInFull -timeout 20m); what it depends on is
// tested quickly by TestSpecTimeoutFollowsTheTargetsSpeed and
// internal/engine's TestBurstWidthFollowsTheTargetsSpeed.
func TestFarTargetIsGradedInFull(t *testing.T) {
	testtier.SkipShort(t, "grades a far target for minutes")
	if os.Getenv("RLCONFORM_FAR") == "" {
		t.Skip("a measurement of minutes: set RLCONFORM_FAR=1 to run it")
	}
	var addrs []string
	for range 2 {
		url, stop := serveProcess(t, "serve", "--addr", "127.0.0.1:0", "--prefix", "rlc-far:")
		t.Cleanup(func() { stop() })
		a, p := throughProxy(t, url)
		for _, x := range far(50*time.Millisecond, 45*time.Millisecond) {
			p.Add(t, x)
		}
		addrs = append(addrs, a)
	}
	began := time.Now()
	code, out, errOut := protocolRun(t, addrs, "--level", "strict")
	t.Logf("exit %d after %v\n%s\n%s", code, time.Since(began).Round(time.Second), out, errOut)
	require.Equal(t, ExitConformant, code)
}
