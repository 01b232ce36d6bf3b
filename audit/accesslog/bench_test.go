package accesslog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkParseCaddy measures the JSON scanner on Caddy's lines (nested
// objects, header arrays, fields skipped): bytes a second, and its
// allocations per line (none expected).
func BenchmarkParseCaddy(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "caddy.log"))
	if err != nil {
		b.Fatal(err)
	}
	var lines [][]byte
	for l := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		lines = append(lines, []byte(l))
	}
	p, err := New("caddy", Options{User: "X-User"})
	if err != nil {
		b.Fatal(err)
	}
	emit := func(*Request) error { return nil }
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		for i, l := range lines {
			_ = p.Parse(l, int64(i+1), emit)
		}
	}
}
