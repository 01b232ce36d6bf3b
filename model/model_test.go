package model

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
)

// op is one step of a model table: at ms, do kind for user, expect want.
type op struct {
	at   int64
	kind string // "allow", "remaining", "reset", "configure"
	user string
	n    int   // configure: limit
	w    int64 // configure: window ms
	want int   // allow: 1 allowed, 0 denied; remaining: the count
}

func allow(at int64, u string, ok bool) op {
	w := 0
	if ok {
		w = 1
	}
	return op{at: at, kind: "allow", user: u, want: w}
}
func remaining(at int64, u string, n int) op { return op{at: at, kind: "remaining", user: u, want: n} }
func reset(at int64, u string) op            { return op{at: at, kind: "reset", user: u} }
func configure(n int, w int64) op            { return op{kind: "configure", n: n, w: w} }

func TestStateRules(t *testing.T) {
	tests := []struct {
		name string
		n    int
		w    int64
		ops  []op
	}{
		{"allows up to N then denies", 3, 1000, []op{
			allow(0, "u", true), allow(1, "u", true), allow(2, "u", true), allow(3, "u", false),
		}},
		{"an entry counts at s+W-1 and stops at exactly s+W", 1, 1000, []op{
			allow(0, "u", true), allow(999, "u", false), remaining(999, "u", 0),
			remaining(1000, "u", 1), allow(1000, "u", true),
		}},
		{"entries free their slots one by one", 2, 1000, []op{
			allow(0, "u", true), allow(400, "u", true), allow(999, "u", false),
			allow(1000, "u", true), allow(1399, "u", false), allow(1400, "u", true),
		}},
		{"same millisecond requests all count", 3, 1000, []op{
			allow(5, "u", true), allow(5, "u", true), allow(5, "u", true), allow(5, "u", false), remaining(5, "u", 0),
		}},
		{"denied requests are not logged", 2, 1000, []op{
			allow(0, "u", true), allow(10, "u", true), allow(500, "u", false), allow(999, "u", false),
			allow(1000, "u", true), allow(1009, "u", false), allow(1010, "u", true),
		}},
		{"no fixed window: N before and N after an edge never make 2N", 2, 1000, []op{
			allow(998, "u", true), allow(999, "u", true), allow(1000, "u", false), allow(1001, "u", false),
			allow(1998, "u", true),
		}},
		{"reset forgets one user only", 1, 1000, []op{
			allow(0, "a", true), allow(0, "ab", true), reset(1, "a"), allow(2, "a", true), allow(2, "ab", false),
		}},
		{"users are isolated and case-sensitive", 1, 1000, []op{
			allow(0, "a", true), allow(0, "A", true), allow(0, "a", false), remaining(0, "A", 0), remaining(0, "b", 1),
		}},
		{"lowering the limit applies to existing logs and remaining clamps at 0", 4, 1000, []op{
			allow(0, "u", true), allow(1, "u", true), allow(2, "u", true), configure(1, 1000),
			remaining(3, "u", 0), allow(3, "u", false), remaining(1001, "u", 0), remaining(1002, "u", 1),
		}},
		{"raising the limit admits at once", 1, 1000, []op{
			allow(0, "u", true), allow(1, "u", false), configure(3, 1000), allow(2, "u", true), remaining(2, "u", 1),
		}},
		{"lowering the window expires entries at once", 2, 10000, []op{
			allow(0, "u", true), allow(100, "u", true), allow(5000, "u", false), configure(2, 1000),
			allow(5000, "u", true), remaining(5000, "u", 1),
		}},
		{"entries after now do not count", 1, 1000, []op{
			allow(500, "u", true), remaining(400, "u", 1), allow(400, "u", true), allow(600, "u", false),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := newSlidingLog(tt.n, time.Duration(tt.w)*time.Millisecond)
			require.NoError(t, err)
			for i, o := range tt.ops {
				at := time.UnixMilli(o.at)
				switch o.kind {
				case "allow":
					got, err := s.Allow(at, o.user)
					require.NoError(t, err)
					assert.Equal(t, o.want == 1, got, "step %d: Allow(+%d, %q)", i, o.at, o.user)
				case "remaining":
					got, err := s.Remaining(at, o.user)
					require.NoError(t, err)
					assert.Equal(t, o.want, got, "step %d: Remaining(+%d, %q)", i, o.at, o.user)
				case "reset":
					require.NoError(t, s.Reset(o.user))
				case "configure":
					require.NoError(t, s.Configure(at, o.n, time.Duration(o.w)*time.Millisecond))
				}
			}
		})
	}
}

func TestInvalidInput(t *testing.T) {
	_, err := newSlidingLog(0, time.Second)
	assert.ErrorIs(t, err, contract.ErrInvalidConfig)
	_, err = newSlidingLog(1, 999*time.Microsecond)
	assert.ErrorIs(t, err, contract.ErrInvalidConfig)

	s, err := newSlidingLog(1, time.Second)
	require.NoError(t, err)
	for _, bad := range []struct {
		n int
		w time.Duration
	}{{0, time.Second}, {-1, time.Second}, {1, 0}, {1, -time.Second}, {1, time.Microsecond}} {
		assert.ErrorIs(t, s.Configure(time.Time{}, bad.n, bad.w), contract.ErrInvalidConfig, "Configure(%d, %v)", bad.n, bad.w)
	}
	assert.Equal(t, 1, s.Limit(), "an invalid Configure keeps the old limit")
	assert.Equal(t, time.Second, s.Window(), "an invalid Configure keeps the old window")

	_, err = s.Allow(time.UnixMilli(0), "")
	assert.ErrorIs(t, err, contract.ErrInvalidUserID)
	_, err = s.Remaining(time.UnixMilli(0), "")
	assert.ErrorIs(t, err, contract.ErrInvalidUserID)
	assert.ErrorIs(t, s.Reset(""), contract.ErrInvalidUserID)
}

func TestSubMillisecondPartsAreDropped(t *testing.T) {
	s, err := newSlidingLog(1, 1500*time.Microsecond)
	require.NoError(t, err)
	assert.Equal(t, time.Millisecond, s.Window())
	ok, _ := s.Allow(time.UnixMilli(10).Add(900*time.Microsecond), "u")
	assert.True(t, ok)
	ok, _ = s.Allow(time.UnixMilli(11), "u")
	assert.True(t, ok, "the entry at 10.9ms is at 10ms and stops counting at 11ms")
}

func TestRetryAfter(t *testing.T) {
	s, err := newSlidingLog(2, time.Second)
	require.NoError(t, err)
	assert.Zero(t, s.RetryAfter(time.UnixMilli(0), "u"))
	s.Allow(time.UnixMilli(100), "u")
	s.Allow(time.UnixMilli(300), "u")
	assert.Equal(t, 800*time.Millisecond, s.RetryAfter(time.UnixMilli(300), "u"), "the entry at 100 leaves at 1100")
	require.NoError(t, s.Configure(time.UnixMilli(300), 1, time.Second))
	assert.Equal(t, 900*time.Millisecond, s.RetryAfter(time.UnixMilli(400), "u"),
		"with the limit lowered to 1, both entries must go: the later one leaves at 1300")
}

func TestLimiterOnFakeClock(t *testing.T) {
	ctx := context.Background()
	clk := fakeclock.New(time.UnixMilli(1_700_000_000_000))
	l, err := NewLimiter(clk, 1, time.Minute)
	require.NoError(t, err)
	ok, err := l.AllowRequest(ctx, "u")
	require.NoError(t, err)
	assert.True(t, ok)
	ok, _ = l.AllowRequest(ctx, "u")
	assert.False(t, ok)
	clk.Advance(time.Minute)
	n, err := l.GetRemainingRequests(ctx, "u")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	require.NoError(t, l.Configure(ctx, 2, time.Minute))
	require.NoError(t, l.Reset(ctx, "u"))

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = l.AllowRequest(cancelled, "u")
	assert.True(t, errors.Is(err, context.Canceled))
}

func TestClockSteppingBack(t *testing.T) {
	// Entries later than now do not count, but stay in the log: allowing at
	// 400 after 500 must not drop the entry at 500.
	s, err := newSlidingLog(2, time.Second)
	require.NoError(t, err)
	u := "u"
	ok, _ := s.Allow(time.UnixMilli(500), u)
	require.True(t, ok)
	ok, _ = s.Allow(time.UnixMilli(400), u)
	assert.True(t, ok, "the entry at 500 does not count at 400")
	n, _ := s.Remaining(time.UnixMilli(400), u)
	assert.Equal(t, 1, n, "only the entry at 400 counts at 400")
	assert.Equal(t, 1, s.Active(time.UnixMilli(400), u), "the literal reading")
	assert.Equal(t, 2, s.Unexpired(time.UnixMilli(400), u), "the conservative reading (ZCARD) counts the entry at 500 too")
	ok, _ = s.Allow(time.UnixMilli(500), u)
	assert.False(t, ok, "back at 500 both entries count")
	assert.Equal(t, []time.Time{time.UnixMilli(400), time.UnixMilli(500)}, s.Log(time.UnixMilli(500), u))
	// The entry at 400 leaves at 1400, the one at 500 at 1500.
	n, _ = s.Remaining(time.UnixMilli(1400), u)
	assert.Equal(t, 1, n)
	assert.Equal(t, 1, s.Unexpired(time.UnixMilli(1400), u), "what has left the window is gone in both readings")
}

func TestIdleUsersAreForgotten(t *testing.T) {
	s, err := newSlidingLog(1, time.Second)
	require.NoError(t, err)
	for i := range 3 * forgetEvery {
		s.Allow(time.UnixMilli(int64(i)*10), fmt.Sprint("user-", i))
	}
	// Users idle for more than a window are swept, without being touched.
	assert.Less(t, s.Users(), forgetEvery, "idle users must not stay in the model for good")
}
