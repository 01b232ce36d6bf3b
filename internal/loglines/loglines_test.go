package loglines

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readAll(t *testing.T, in []byte) (lines []string, r *Reader) {
	t.Helper()
	r, err := New(bytes.NewReader(in))
	require.NoError(t, err)
	for {
		b, ok := r.Next()
		if !ok {
			return lines, r
		}
		lines = append(lines, string(b))
	}
}

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, err := w.Write([]byte(s))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return b.Bytes()
}

func TestLinesPlainAndGzipped(t *testing.T) {
	const text = "a\r\nb\n\nc"
	for name, in := range map[string][]byte{"plain": []byte(text), "gzip": gzipped(t, text), "two gzip members": append(gzipped(t, "a\r\nb\n"), gzipped(t, "\nc")...)} {
		lines, r := readAll(t, in)
		assert.Equal(t, []string{"a", "b", "", "c"}, lines, name)
		assert.Equal(t, int64(4), r.Line(), name)
		assert.True(t, r.Unterminated(), name)
		assert.NoError(t, r.Err(), name)
		assert.NoError(t, r.Cut(), name)
	}
}

// A line longer than MaxLine is skipped and counted, and still numbered.
func TestALongLineIsSkipped(t *testing.T) {
	for _, n := range []int{MaxLine + 1, 3 * MaxLine} {
		lines, r := readAll(t, []byte("a\n"+strings.Repeat("x", n)+"\nb\n"))
		assert.Equal(t, []string{"a", "b"}, lines)
		assert.Equal(t, int64(1), r.TooLong())
		assert.Equal(t, int64(3), r.Line())
		assert.False(t, r.Unterminated())
	}
	lines, _ := readAll(t, []byte(strings.Repeat("x", MaxLine)))
	assert.Len(t, lines, 1, "a line of MaxLine is read")
}

// A gzip stream cut short (k6 killed) is read up to the cut, and the cut
// is said.
func TestAGzipCutIsReadToTheCut(t *testing.T) {
	var text strings.Builder
	for i := range 10000 {
		text.WriteString(strings.Repeat("line ", 5) + string(rune('a'+i%26)) + "\n")
	}
	full := gzipped(t, text.String())
	lines, r := readAll(t, full[:len(full)/2])
	assert.NotEmpty(t, lines)
	assert.Less(t, len(lines), 10000)
	assert.Error(t, r.Cut())
	assert.NoError(t, r.Err())
	_, err := New(bytes.NewReader(full[:5]))
	assert.Error(t, err, "not even a gzip header")
}
