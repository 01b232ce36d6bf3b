package report

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/result"
)

// TestEveryReportNamesTheGrader: the JSON report, identify's JSON, the
// JUnit properties and the Markdown summary carry the grader's version,
// and the JSON and JUnit the catalogue's version as a field of its own.
func TestEveryReportNamesTheGrader(t *testing.T) {
	meta := Meta{Version: "v0.1.0 (0123456789ab, catalogue 4f9aa46411ef)", Catalogue: "4f9aa46411ef"}
	rep := &result.Report{Target: "http://x", Level: "core", Results: []result.Result{{ID: "core/reset", Level: "core", Status: result.Passed}}}
	var b bytes.Buffer
	require.NoError(t, JSON(&b, rep, meta))
	var run struct{ Version, Catalogue string }
	require.NoError(t, json.Unmarshal(b.Bytes(), &run))
	assert.Equal(t, meta.Version, run.Version)
	assert.Equal(t, meta.Catalogue, run.Catalogue)

	b.Reset()
	require.NoError(t, IdentificationJSON(&b, &result.Identification{Target: "http://x", Limit: 5, Window: time.Second}, meta))
	var id struct{ Version, Catalogue string }
	require.NoError(t, json.Unmarshal(b.Bytes(), &id))
	assert.Equal(t, meta.Version, id.Version)
	assert.Equal(t, meta.Catalogue, id.Catalogue)

	b.Reset()
	require.NoError(t, JUnit(&b, rep, meta))
	assert.Contains(t, b.String(), `<property name="rlconform.version" value="`+meta.Version+`">`)
	assert.Contains(t, b.String(), `<property name="rlconform.catalogue" value="4f9aa46411ef">`)

	b.Reset()
	require.NoError(t, Markdown(&b, rep, meta))
	assert.Contains(t, b.String(), "rlconform "+meta.Version)
}
