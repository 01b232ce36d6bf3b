package accesslog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fuzzLines parses lines of a log (one per line of data) with a parser of
// format made with opts (when New takes them), and checks that every
// request read is one a Stream takes: a user of 1 to 4096 bytes, a status
// of 0 to 999, instants from 1970 to 2200 at most a day apart, start no
// later than end, and a line number of the lines read. A line that does
// not fit is skipped with a Skip; nothing panics.
func fuzzLines(t *testing.T, format string, opts Options, data []byte) {
	p, err := New(format, opts)
	if err != nil {
		return
	}
	lines := strings.Split(string(data), "\n")
	emit := func(r *Request) error {
		switch {
		case len(r.User) == 0 || len(r.User) > maxUser:
			t.Fatalf("a user of %d bytes", len(r.User))
		case r.Status < 0 || r.Status > 999:
			t.Fatalf("status %d", r.Status)
		case !span(r.Start, r.End):
			t.Fatalf("an interval %d..%d", r.Start, r.End)
		case r.Line < 1 || r.Line > int64(len(lines)):
			t.Fatalf("line %d of %d", r.Line, len(lines))
		}
		return nil
	}
	for i, l := range lines {
		err := p.Parse([]byte(l), int64(i+1), emit)
		var s Skip
		if err != nil && !errors.As(err, &s) && format != "csv" {
			t.Fatalf("line %d: not a skip: %v", i+1, err)
		}
	}
	p.Close(emit)
	p.Notes()
}

func seedFile(f *testing.F, name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		f.Fatal(err)
	}
	return string(b)
}

func FuzzNginx(f *testing.F) {
	f.Add(NginxFormat, "$http_x_user", `127.0.0.1 [27/Nov/2024:16:32:00 +0000] "GET /ok HTTP/1.1" 200 3 1732725120.123 0.005 "alice"`)
	f.Add(`[$time_local] $status $request_time $remote_addr`, "remote_addr", `[27/Nov/2024:16:32:00 +0000] 429 0.000 1.2.3.4`)
	f.Add(`$time_iso8601|$status|$request_time|${cookie_u}`, "${cookie_u}", `2024-11-27T16:32:00+01:00|200|1.5|c`)
	f.Fuzz(func(t *testing.T, format, user, data string) {
		fuzzLines(t, "nginx", Options{LogFormat: format, User: user}, []byte(data))
	})
}

func FuzzEnvoy(f *testing.F) {
	f.Add("", "X-Forwarded-For", seedFile(f, "envoy-default.log"))
	f.Add(seedFile(f, "envoy-json.format"), "X-User", seedFile(f, "envoy-json.log"))
	f.Add(`%START_TIME(%s.%3f)% %RESPONSE_CODE% %DURATION% %REQ(X-USER):10%`, "%REQ(X-USER)%", "1704067200.000 200 3 u\n")
	f.Fuzz(func(t *testing.T, format, user, data string) {
		fuzzLines(t, "envoy", Options{LogFormat: format, User: user}, []byte(data))
	})
}

func FuzzHAProxy(f *testing.F) {
	f.Add("", "capture.req.hdr(0)", `127.0.0.1:41234 [27/Nov/2024:16:32:00.118] api api/<NOSRV> 0/-1/-1/-1/2 200 75 ---- {alice} "GET /ok HTTP/1.1"`)
	f.Add(`%ci [%trg] %ST %Ta %{+Q}[req.hdr(x-user)] %%`, "[req.hdr(x-user)]", `1.2.3.4 [01/Jan/2025:00:00:00 +0000] 200 10 "bob" %`)
	f.Add(`%ci [%t] %ST %Tt %ci`, "ci", `<134>Nov 27 h haproxy[1]: 1.2.3.4 [01/Jan/2025:00:00:00.1] -1 +5 1.2.3.4`)
	f.Fuzz(func(t *testing.T, format, user, data string) {
		fuzzLines(t, "haproxy", Options{LogFormat: format, User: user, Location: time.UTC}, []byte(data))
	})
}

func FuzzCaddy(f *testing.F) {
	f.Add("", "request.headers.X-User", seedFile(f, "caddy.log"))
	f.Add("duration_format=string", "request.client_ip", `{"ts":"2024-01-01T00:00:01.000+0100","logger":"http.log.access","request":{"client_ip":"10.0.0.1"},"duration":"1.5ms","status":200}`)
	f.Add("duration_format=nano", "user_id", `{"ts":1704067200000,"user_id":"u","duration":1500000,"status":429,"request":[1,{"a":[[[]]]}]}`)
	f.Fuzz(func(t *testing.T, format, user, data string) {
		fuzzLines(t, "caddy", Options{LogFormat: format, User: user}, []byte(data))
	})
}

func FuzzK6(f *testing.F) {
	var lines []string
	for _, m := range []string{"http_req_duration", "http_req_blocked", "http_req_connecting", "http_req_tls_handshaking", "http_req_sending", "http_req_waiting", "http_req_receiving"} {
		lines = append(lines, `{"type":"Point","metric":"`+m+`","data":{"time":"2024-01-01T00:00:00.010Z","value":-2,"tags":{"status":"429"},"metadata":{"user":"u"}}}`)
	}
	f.Add("user", strings.Join(lines, "\n"))
	f.Add("who", `{"type":"Point","metric":"http_req_duration","data":{"time":"2024-01-01T00:00:00.010Z","value":1e300,"tags":{"who":"u\u0031","status":200}}}`)
	f.Fuzz(func(t *testing.T, user, data string) {
		fuzzLines(t, "k6", Options{User: user}, []byte(data))
	})
}

func FuzzJSONLines(f *testing.F) {
	f.Add("", `{"start":1700000000.120,"end":1700000000.125,"user":"u","status":200}`+"\n"+`{"start":"2023-11-14T22:13:20.2Z","end":"2023-11-14T22:13:20.3Z","user":"u\"","status":"429"}`)
	f.Add("who", `{"start":1,"end":99999999999999999999,"who":["a"],"status":-1}`)
	f.Fuzz(func(t *testing.T, user, data string) {
		fuzzLines(t, "jsonl", Options{User: user}, []byte(data))
	})
}

func FuzzCSV(f *testing.F) {
	f.Add("", "start,end,user,status\n1700000000120,1700000000125,\"a,\"\"b\",200\n1,2,x")
	f.Add("client", `status,start,end,"client"`+"\n"+`429,2023-11-14T22:13:20Z,2023-11-14T22:13:20.5+01:00,c`)
	f.Fuzz(func(t *testing.T, user, data string) {
		fuzzLines(t, "csv", Options{User: user}, []byte(data))
	})
}
