package audit

import (
	"context"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/rlconform/rlconform/audit/accesslog"
	"github.com/rlconform/rlconform/bench"
)

// busy is a busy gateway's day, sampled: a request every 8.64ms on
// average (10 million a day), of 100,000 users, half of them from 20 hot
// ones that an exact limit of 2 a second refuses now and then.
func busy(seed uint64) *synth {
	return &synth{r: rand.New(rand.NewPCG(seed, seed+1)), at: start, gap: 4320 * time.Microsecond, users: 100_000, hot: 20, decide: sliding(100_000, 2, time.Second)}
}

func busyConfig() Config {
	return Config{Format: "nginx", Log: accesslog.Options{LogFormat: accesslog.NginxFormat, User: "$http_x_user"}, Judge: bench.Judge{Limit: 2, Window: time.Second}}
}

// BenchmarkAudit measures an audit of 1,000,000 nginx lines of a busy
// gateway (about 2.4 hours of its day), read from memory: lines a second
// (the lines/s metric), and the allocations of the whole audit.
func BenchmarkAudit(b *testing.B) {
	const n = 1_000_000
	log := busy(1).log(n)
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	var res *Result
	for b.Loop() {
		var err error
		res, err = Run(context.Background(), busyConfig(), []Source{memory("gw.log", log)})
		if err != nil {
			b.Fatal(err)
		}
		if res.Verdict.Code != 0 {
			b.Fatalf("an exact limiter's log: %+v", res.Verdict)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(res.Stream.Kept), "kept")
}

// BenchmarkAuditStreamed audits AUDIT_LINES (default 2,000,000) lines made
// as they are read (never held whole), and reports the heap in use at the
// end of the reading, with the most requests held at once: what the
// audit keeps does not grow with the lines. (The lines' making is in the
// time measured.)
func BenchmarkAuditStreamed(b *testing.B) {
	n := 2_000_000
	if v := testingEnvInt("AUDIT_LINES"); v > 0 {
		n = v
	}
	for b.Loop() {
		src := Source{Name: "gw.log", Open: func() (io.ReadCloser, error) { return io.NopCloser(&synthReader{s: busy(2), n: n}), nil }}
		res, err := Run(context.Background(), busyConfig(), []Source{src})
		if err != nil {
			b.Fatal(err)
		}
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		b.ReportMetric(float64(res.Stream.Kept), "kept")
		b.ReportMetric(float64(m.HeapInuse)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(n)/res.Took.Seconds(), "lines/s")
	}
}
