package k6

import (
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/middleware"
	"github.com/rlconform/rlconform/mutants"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/reference"
)

// recordFlag (-record) rewrites testdata/ from live runs: go test
// ./bench/k6 -run TestRecordFixtures -record
var recordFlag = flag.Bool("record", false, "rewrite testdata/ from live runs")

// The load of every recording: limit 5 per 100ms, 3 users, two
// generators of 2 VUs each.
const (
	fixtureLimit  = 5
	fixtureWindow = 100 * time.Millisecond
)

var fixtureUsers = []string{"alice", "bob", "carol"}

// generator is one k6 process of a recording: vus virtual users, each
// sending count requests, one every interval (0: each as soon as the last
// is answered), to url for a user drawn from users, named in the X-User
// header and in the user tag; it writes what k6 writes for each request
// to its JSON output.
type generator struct {
	url      string
	vus      int
	count    int
	interval time.Duration
	users    []string
	seed     uint64
	zone     *time.Location // the zone k6's timestamps are written in
}

// endpoint serves a demo API behind the middleware over decide, on a test
// Redis; it returns its URL.
func endpoint(t *testing.T, atomic bool) string {
	t.Helper()
	ctx := context.Background()
	red, err := redisenv.Obtain(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { red.Close() })
	prefix := fmt.Sprintf("rlc-k6-test-%x:", rand.Uint64())
	var decide middleware.Decider
	if atomic {
		lim, err := reference.New(red.Client, reference.Options{MaxRequests: fixtureLimit, Window: fixtureWindow, Prefix: prefix})
		require.NoError(t, err)
		decide = middleware.Reference(lim)
	} else {
		// Counts, then adds, in two round trips: concurrent requests of
		// one user pass the same count.
		lim, err := mutants.NonAtomic(mutants.Store{Redis: red.Client, Prefix: prefix, MaxRequests: fixtureLimit, Window: fixtureWindow})
		require.NoError(t, err)
		decide = func(ctx context.Context, key string) (middleware.Decision, error) {
			ok, err := lim.AllowRequest(ctx, key)
			return middleware.Decision{Allowed: ok, Limit: fixtureLimit, Window: fixtureWindow, RetryAfter: fixtureWindow}, err
		}
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	srv := httptest.NewServer(middleware.New(decide, middleware.Options{Key: middleware.Header("X-User")})(api))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// lineWriter writes JSON lines from many goroutines, each line whole, and
// declares each metric (a "Metric" line) before its first point, as k6
// does.
type lineWriter struct {
	mu       sync.Mutex
	w        io.Writer
	declared map[string]bool
}

// metricLine is the documented shape of a metric's declaration.
func metricLine(name, typ, contains string) string {
	return fmt.Sprintf(`{"type":"Metric","data":{"type":%q,"contains":%q,"tainted":null,"thresholds":[],"submetrics":null},"metric":%q}`, typ, contains, name)
}

// pointLine is the documented shape of a point.
func pointLine(name string, at time.Time, value float64, tags []byte) string {
	v, _ := json.Marshal(value)
	return fmt.Sprintf(`{"type":"Point","data":{"time":%q,"value":%s,"tags":%s},"metric":%q}`, at.Format(time.RFC3339Nano), v, tags, name)
}

// sample is one point to write.
type sample struct {
	metric, typ, contains string
	value                 float64
}

func (lw *lineWriter) write(at time.Time, tags []byte, samples []sample) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	for _, s := range samples {
		if !lw.declared[s.metric] {
			lw.declared[s.metric] = true
			fmt.Fprintln(lw.w, metricLine(s.metric, s.typ, s.contains))
		}
		fmt.Fprintln(lw.w, pointLine(s.metric, at, s.value, tags))
	}
}

// trace times one request's phases as k6's http_req_* metrics define
// them (https://grafana.com/docs/k6/latest/using-k6/metrics/reference/):
// blocked until a connection is had, connecting and the TLS handshake,
// sending the request, waiting for the first byte, receiving the rest;
// duration is sending + waiting + receiving; all stamped at the end of
// the request.
type trace struct {
	// The hooks of a dial may run on the dialing goroutine, after the
	// request took another connection.
	mu                                                                               sync.Mutex
	getConn, connectStart, connectDone, tlsStart, tlsDone, gotConn, wrote, firstByte time.Time
}

// stamp sets *at to now, the first time.
func (tr *trace) stamp(at *time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if at.IsZero() {
		*at = time.Now()
	}
}

func (tr *trace) clientTrace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GetConn:              func(string) { tr.stamp(&tr.getConn) },
		ConnectStart:         func(string, string) { tr.stamp(&tr.connectStart) },
		ConnectDone:          func(string, string, error) { tr.stamp(&tr.connectDone) },
		TLSHandshakeStart:    func() { tr.stamp(&tr.tlsStart) },
		TLSHandshakeDone:     func(tls.ConnectionState, error) { tr.stamp(&tr.tlsDone) },
		GotConn:              func(httptrace.GotConnInfo) { tr.stamp(&tr.gotConn) },
		WroteRequest:         func(httptrace.WroteRequestInfo) { tr.stamp(&tr.wrote) },
		GotFirstResponseByte: func() { tr.stamp(&tr.firstByte) },
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// span is b − a when both happened and b is later, else 0.
func span(a, b time.Time) time.Duration {
	if a.IsZero() || b.IsZero() || !b.After(a) {
		return 0
	}
	return b.Sub(a)
}

// run drives the generator's load and writes its JSON output to w.
func (g generator) run(ctx context.Context, w io.Writer) error {
	lw := &lineWriter{w: w, declared: map[string]bool{}}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: g.vus}, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	zone := g.zone
	if zone == nil {
		zone = time.UTC
	}
	errs := make(chan error, g.vus)
	var wg sync.WaitGroup
	for vu := range g.vus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(g.seed, uint64(vu)))
			next := time.Now()
			for range g.count {
				if g.interval > 0 {
					time.Sleep(time.Until(next)) // the arrival rate's pace
					next = next.Add(g.interval)
				}
				user := g.users[r.IntN(len(g.users))]
				if err := g.request(ctx, client, lw, zone, user); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func (g generator) request(ctx context.Context, client *http.Client, lw *lineWriter, zone *time.Location, user string) error {
	tr := &trace{}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, tr.clientTrace()), http.MethodGet, g.url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-User", user)
	res, err := client.Do(req)
	status := 0
	if err == nil {
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		status = res.StatusCode
	}
	done := time.Now()
	if err != nil {
		return err
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.connectDone.After(tr.gotConn) {
		// A dial this request started and another took: the request
		// used a connection it did not wait for.
		tr.connectStart, tr.connectDone = time.Time{}, time.Time{}
	}
	connected := tr.connectDone
	if !tr.tlsDone.IsZero() {
		connected = tr.tlsDone
	}
	if connected.IsZero() {
		connected = tr.gotConn
	}
	sending, waiting, receiving := span(connected, tr.wrote), span(tr.wrote, tr.firstByte), span(tr.firstByte, done)
	failed := 0.0
	if status != 200 && status != 429 {
		failed = 1
	}
	tags, err := json.Marshal(map[string]string{
		"expected_response": strconv.FormatBool(failed == 0), "group": "", "method": "GET", "name": g.url,
		"proto": "HTTP/1.1", "scenario": "ratelimit", "status": strconv.Itoa(status), "url": g.url, "user": user,
	})
	if err != nil {
		return err
	}
	lw.write(done.In(zone), tags, []sample{
		{"http_reqs", "counter", "default", 1},
		{"http_req_duration", "trend", "time", ms(sending + waiting + receiving)},
		{"http_req_blocked", "trend", "time", ms(span(tr.getConn, tr.gotConn))},
		{"http_req_connecting", "trend", "time", ms(span(tr.connectStart, tr.connectDone))},
		{"http_req_tls_handshaking", "trend", "time", ms(span(tr.tlsStart, tr.tlsDone))},
		{"http_req_sending", "trend", "time", ms(sending)},
		{"http_req_waiting", "trend", "time", ms(waiting)},
		{"http_req_receiving", "trend", "time", ms(receiving)},
		{"http_req_failed", "rate", "default", failed},
	})
	return nil
}

// recordPair drives two generators at once against url and writes their
// outputs to a and b.
func recordPair(t *testing.T, url string, closedLoop bool, a, b io.Writer) {
	t.Helper()
	g := generator{url: url, vus: 2, count: 100, interval: 4 * time.Millisecond, users: fixtureUsers, seed: rand.Uint64()}
	if closedLoop {
		// As fast as answered, 8 VUs on one user: requests race at
		// every edge of the window.
		g.interval, g.vus, g.count, g.users = 0, 4, 75, fixtureUsers[:1]
	}
	h := g
	h.seed++
	// The second writes its timestamps with an offset, as a machine in
	// another zone does.
	h.zone = time.FixedZone("", 2*3600)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, run := range []struct {
		g generator
		w io.Writer
	}{{g, a}, {h, b}} {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = run.g.run(context.Background(), run.w) }()
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
}

// TestRecordFixtures rewrites testdata/ with -record; without it, it is
// skipped (the other tests record live runs of their own).
func TestRecordFixtures(t *testing.T) {
	if !*recordFlag {
		t.Skip("rewrites testdata/ only with -record")
	}
	for _, f := range []struct {
		name   string
		atomic bool
	}{{"exact", true}, {"nonatomic", false}} {
		// Gzipped, as k6 writes --out json=FILE.gz: a tenth of the size.
		var files [2]*os.File
		var gz [2]*gzip.Writer
		for i, side := range []string{"a", "b"} {
			var err error
			files[i], err = os.Create(filepath.Join("testdata", f.name+"-"+side+".json.gz"))
			require.NoError(t, err)
			gz[i] = gzip.NewWriter(files[i])
		}
		recordPair(t, endpoint(t, f.atomic), !f.atomic, gz[0], gz[1])
		for i := range files {
			require.NoError(t, gz[i].Close())
			require.NoError(t, files[i].Close())
		}
	}
}
