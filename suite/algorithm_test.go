package suite_test

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// The set of algorithms is open: one registered from outside package
// model (here, a fixed window of whole windows on the epoch, with a slack
// of extra requests per window) is graded like a built-in one. Its own
// model passes; a limiter that lets one more request through per window
// than the variant graded fails, with the catalogue's usual evidence.
func TestAnAlgorithmRegisteredFromOutsideIsGraded(t *testing.T) {
	set := model.Builtin()
	require.NoError(t, set.Register(toyAlgorithm()))
	require.Error(t, set.Register(toyAlgorithm()), "a name is registered once")
	honest, err := set.Parse("toy-window")
	require.NoError(t, err)
	loose, err := set.Parse("toy-window:slack=1")
	require.NoError(t, err)
	_, err = model.ParseVariant("toy-window")
	require.Error(t, err, "the built-in set does not know it: registering is per set, no global state")

	cfg := suite.Config{Profile: "toy-window", Algorithms: set, Level: result.Strict, Seed: 7}
	rep, err := suite.Check(context.Background(), cfg, targets.ProfileModel(honest))
	require.NoError(t, err)
	var passed []string
	for _, r := range rep.Results {
		assert.NotEqual(t, result.Failed, r.Status, "%s: %s", r.ID, r.Message)
		if r.Status == result.Passed {
			passed = append(passed, r.ID)
		}
	}
	assert.Contains(t, passed, "core/allow-within-limit")
	assert.Contains(t, passed, "strict/lowered-limit")
	assert.Contains(t, passed, "strict/differential")

	rep, err = suite.Check(context.Background(), cfg, targets.ProfileModel(loose))
	require.NoError(t, err)
	var failed []string
	for _, r := range rep.Results {
		if r.Status == result.Failed {
			failed = append(failed, r.ID)
		}
	}
	assert.Contains(t, failed, "core/block-over-limit", "one request more than the limit per window is caught")

	id, err := suite.Identify(context.Background(), suite.Config{Algorithms: set, Seed: 7}, targets.ProfileModel(loose))
	require.NoError(t, err)
	var fits []string
	for _, f := range id.Fits {
		fits = append(fits, f.Profile)
	}
	assert.Equal(t, []string{"toy-window:slack=1"}, fits, "identify tries the registered algorithm's candidates")
}

// toyAlgorithm is a fixed window of W on the epoch allowing N+slack
// requests per window: written here, from outside package model, with
// only what an Algorithm requires and a parameter.
func toyAlgorithm() model.Algorithm {
	return model.Algorithm{
		Name:    "toy-window",
		Summary: "a counter per window [kW, (k+1)W) on the epoch: allowed while the count is below N + slack",
		Params:  []model.ParamInfo{{Name: "slack", Default: "0", Values: []string{"0", "1"}, Doc: "extra requests allowed per window"}},
		New: func(p map[string]string, n int, w time.Duration) model.Replayable {
			slack, _ := strconv.Atoi(p["slack"])
			return &toyWindow{n: n, slack: slack, w: w.Milliseconds(), counts: map[string]toyCount{}}
		},
		GradesLimitChange: true,
		Candidates:        func([]string) []string { return []string{"slack=0", "slack=1"} },
	}
}

type toyCount struct{ window, count int64 }

type toyWindow struct {
	n, slack int
	w        int64
	counts   map[string]toyCount
}

func (t *toyWindow) Describe() string {
	return fmt.Sprintf("a toy window of %dms allowing %d+%d", t.w, t.n, t.slack)
}
func (t *toyWindow) Limit() int            { return t.n }
func (t *toyWindow) Window() time.Duration { return time.Duration(t.w) * time.Millisecond }

func (t *toyWindow) current(now time.Time, user string) toyCount {
	k := now.UnixMilli() / t.w
	if c := t.counts[user]; c.window == k {
		return c
	}
	return toyCount{window: k}
}

func (t *toyWindow) Allow(now time.Time, user string) (bool, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return false, err
	}
	c := t.current(now, user)
	if c.count >= int64(t.n+t.slack) {
		return false, nil
	}
	c.count++
	t.counts[user] = c
	return true, nil
}

func (t *toyWindow) Remaining(now time.Time, user string) (int, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return 0, err
	}
	return max(0, t.n+t.slack-int(t.current(now, user).count)), nil
}

func (t *toyWindow) RetryAfter(now time.Time, user string) time.Duration {
	c := t.current(now, user)
	if c.count < int64(t.n+t.slack) {
		return 0
	}
	return time.Duration((c.window+1)*t.w-now.UnixMilli()) * time.Millisecond
}

func (t *toyWindow) Reset(user string) error {
	if err := contract.ValidateUserID(user); err != nil {
		return err
	}
	delete(t.counts, user)
	return nil
}

func (t *toyWindow) Configure(_ time.Time, n int, w time.Duration) error {
	if err := contract.ValidateConfig(n, w); err != nil {
		return err
	}
	t.n, t.w = n, w.Milliseconds()
	return nil
}

func (t *toyWindow) Lifetime(now time.Time, user string) time.Duration {
	c, ok := t.counts[user]
	if !ok {
		return 0
	}
	return max(0, time.Duration((c.window+1)*t.w-now.UnixMilli())*time.Millisecond)
}

func (t *toyWindow) Explain(now, _ time.Time, user string) string {
	return fmt.Sprintf("%s's window has counted %d of %d+%d", user, t.current(now, user).count, t.n, t.slack)
}

func (t *toyWindow) Clone() model.Profile {
	c := *t
	c.counts = maps.Clone(t.counts)
	return &c
}

func (t *toyWindow) StateKey(user string) string { return fmt.Sprint(t.counts[user]) }
