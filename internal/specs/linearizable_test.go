package specs_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
)

// allowAll allows every request: no serial order explains its answers.
type allowAll struct{}

func (allowAll) AllowRequest(context.Context, string) (bool, error)        { return true, nil }
func (allowAll) GetRemainingRequests(context.Context, string) (int, error) { return 1, nil }
func (allowAll) Configure(context.Context, int, time.Duration) error       { return nil }
func (allowAll) Reset(context.Context, string) error                       { return nil }

// The visualisation of a history that is not linearizable is written
// under a name nobody can guess beforehand (os.CreateTemp), in the report
// directory: a link placed at a predictable name in a shared temporary
// directory would have the grader write through it.
func TestVisualisationHasAnUnguessableName(t *testing.T) {
	dir := t.TempDir()
	caps := contract.All()
	caps.StoreInspection = false
	target := suite.Target{Name: "allow-all", Capabilities: caps,
		New: func(context.Context, suite.Env) (contract.RateLimiterContract, func() error, error) {
			return allowAll{}, nil, nil
		}}
	const seed = 7
	predictable := filepath.Join(dir, "rlconform-allow-all-strict_linearizable-7.html")
	require.NoError(t, os.Symlink(filepath.Join(dir, "victim"), predictable))
	rep, err := suite.Check(context.Background(), suite.Config{IDs: []string{"strict/linearizable"}, ReportDir: dir, Seed: seed}, target)
	require.NoError(t, err)
	require.Len(t, rep.Results, 1)
	r := rep.Results[0]
	require.Equal(t, result.Failed, r.Status, r.Message)
	m := regexp.MustCompile(`porcupine's visualisation: (\S+)`).FindStringSubmatch(r.Message)
	require.NotNil(t, m, r.Message)
	assert.Regexp(t, `^`+regexp.QuoteMeta(dir)+`/rlconform-allow-all-strict_linearizable-7-\d+\.html$`, m[1])
	info, err := os.Stat(m[1])
	require.NoError(t, err)
	assert.Positive(t, info.Size())
	assert.NoFileExists(t, filepath.Join(dir, "victim"), "nothing is written through a link at the predictable name")
}
