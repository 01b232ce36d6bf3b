package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// identify's JSON, as --from-identify reads it, with at and version set.
func priorFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "id.json")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	return path
}

const priorBody = `{"version": "v1", "target": "http://x", "limit": 5, "window_ms": 1000, "mode": "real-time", "at": "2026-11-28T21:00:00Z",
 "graded": [{"id": "core/remaining", "status": "pass", "mode": "real-time", "profile": "sliding-log", "limit": 5, "window_ms": 1000, "message": "\u001b[2Jhello"}]}`

// run --from-identify takes a fresh identification of this version; one
// of another version or over an hour old is not taken, and says why; a
// file that is not an identification is an error naming the flag; the
// messages in the file are not taken (text from outside).
func TestReadPrior(t *testing.T) {
	at := time.Date(2026, 11, 28, 21, 0, 0, 0, time.UTC)
	path := priorFile(t, priorBody)

	id, why, err := readPrior(path, "v1", at.Add(10*time.Minute))
	require.NoError(t, err)
	assert.Empty(t, why)
	require.Len(t, id.Graded, 1)
	assert.Equal(t, "core/remaining", id.Graded[0].Result.ID)
	assert.Equal(t, time.Second, id.Graded[0].Window)
	assert.Empty(t, id.Graded[0].Result.Message, "the file's text is not taken")

	id, why, err = readPrior(path, "v2", at)
	require.NoError(t, err)
	assert.Nil(t, id)
	assert.Contains(t, why, "made by rlconform v1, this is v2")

	id, why, err = readPrior(path, "v1", at.Add(2*time.Hour))
	require.NoError(t, err)
	assert.Nil(t, id)
	assert.Contains(t, why, "not within the last 1h0m0s")

	for name, body := range map[string]string{
		"not JSON":            "{",
		"a run's report":      `{"version": "v1", "target": "x", "results": []}`,
		"a bad mode":          strings.Replace(priorBody, `"mode": "real-time", "at"`, `"mode": "sideways", "at"`, 1),
		"a probe with no id":  strings.Replace(priorBody, `"id": "core/remaining"`, `"id": ""`, 1),
		"a window of nothing": strings.Replace(priorBody, `"limit": 5, "window_ms": 1000, "message"`, `"limit": 5, "window_ms": 0, "message"`, 1),
	} {
		_, _, err := readPrior(priorFile(t, body), "v1", at)
		if assert.Error(t, err, name) {
			assert.Contains(t, err.Error(), "--from-identify", name)
		}
	}
	big := priorFile(t, strings.Repeat(" ", maxPriorBytes+1))
	_, _, err = readPrior(big, "v1", at)
	assert.ErrorContains(t, err, "over 8 MiB")
}
