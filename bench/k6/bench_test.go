package k6

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/rlconform/rlconform/bench"
)

// syntheticOutput is what k6 writes for n requests of users users (9
// points each, the shape of testdata's), 1ms apart in turn, decided by a
// sliding log of 5 per 100ms.
func syntheticOutput(n, users int) []byte { return syntheticOutputAt(n, users, 0) }

// syntheticOutputAt is syntheticOutput's part k, from n·k ms on (its
// users' logs start empty: use users with windows apart).
func syntheticOutputAt(n, users, k int) []byte {
	var buf bytes.Buffer
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(n*k) * time.Millisecond)
	logs := make([][]time.Time, users)
	for i := range n {
		u := i % users
		at := start.Add(time.Duration(i) * time.Millisecond)
		for len(logs[u]) > 0 && !logs[u][0].After(at.Add(-100*time.Millisecond)) {
			logs[u] = logs[u][1:]
		}
		status := "429"
		if len(logs[u]) < 5 {
			status = "200"
			logs[u] = append(logs[u], at)
		}
		tags, _ := json.Marshal(map[string]string{"expected_response": "true", "group": "", "method": "GET", "name": "http://127.0.0.1:8080/",
			"proto": "HTTP/1.1", "scenario": "ratelimit", "status": status, "url": "http://127.0.0.1:8080/", "user": fmt.Sprintf("user-%d", u)})
		for _, m := range []string{"http_reqs", "http_req_duration", "http_req_blocked", "http_req_connecting", "http_req_tls_handshaking",
			"http_req_sending", "http_req_waiting", "http_req_receiving", "http_req_failed"} {
			buf.WriteString(pointLine(m, at, 0.123456, tags))
			buf.WriteByte('\n')
		}
	}
	return buf.Bytes()
}

// BenchmarkRead measures reading k6's output: decisions per second
// parsed, and the heap each decision keeps (the recording's).
func BenchmarkRead(b *testing.B) {
	const n = 20_000
	out := syntheticOutput(n, 10)
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	var kept uint64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r := NewReader(Options{})
		if err := r.Read("synthetic", bytes.NewReader(out)); err != nil {
			b.Fatal(err)
		}
		rec, err := r.Recording()
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		kept = after.HeapAlloc - before.HeapAlloc
		runtime.KeepAlive(rec)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	b.ReportMetric(float64(kept)/n, "kept-B/decision")
}

// BenchmarkReadAndJudge adds the judging (with the search of the
// smallest skew): the whole of rlconform bench --from-k6 but the files.
func BenchmarkReadAndJudge(b *testing.B) {
	const n = 20_000
	out := syntheticOutput(n, 10)
	b.ReportAllocs()
	var peak uint64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r := NewReader(Options{})
		if err := r.Read("synthetic", bytes.NewReader(out)); err != nil {
			b.Fatal(err)
		}
		rec, err := r.Recording()
		if err != nil {
			b.Fatal(err)
		}
		res, err := bench.Replay{Judge: bench.Judge{Limit: 5, Window: 100 * time.Millisecond}, ClockSkew: time.Millisecond}.Run(rec)
		if err != nil {
			b.Fatal(err)
		}
		if res.Exactness == nil || res.Failed() {
			b.Fatalf("the synthetic run is exact: %+v", res.Exactness)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		peak = after.HeapAlloc - before.HeapAlloc
		runtime.KeepAlive(res)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	b.ReportMetric(float64(peak)/n, "kept-B/decision")
}
