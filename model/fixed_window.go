package model

import (
	"fmt"
	"maps"
	"time"

	"github.com/rlconform/rlconform/contract"
)

// fixedWindow is the fixed-window profile: a counter per user and window of
// W, a request allowed while the count of its window is below N. Windows
// are laid out by align:
//
//   - epoch: [kW, (k+1)W) for every whole k, on the Unix epoch in ms;
//   - go-zero: [z+kW, z+(k+1)W), z Go's zero time (0001-01-01 UTC), the
//     windows time.Time.Truncate makes;
//   - first-grid: [a+kW, a+(k+1)W), anchored at the instant a of the
//     user's first counted request; the user (anchor and all) is forgotten
//     once a whole window has passed with no counted request, i.e. at
//     s+2W for the window [s, s+W) of the last one;
//   - first-hit: [s, s+W), opened by the first request at or after the end
//     of the previous window (the INCR + PEXPIRE pattern).
//
// countDenied counts denied requests too (INCR before the check).
//
// writes (query=write) makes a query of what remains save the state as a
// request does, without counting: a user with none gets a window
// (first-hit) or a grid (first-grid) at the query's instant, and a
// first-grid user is forgotten a whole window after its last write.
// Symfony RateLimiter's only query, consume(0), saves this way.
type fixedWindow struct {
	align       string // epoch, go-zero, first-grid, first-hit
	countDenied bool
	writes      bool
	n           int
	w           int64
	users       map[string]fixedState
}

type fixedState struct {
	anchor int64 // first-grid: the grid's anchor
	start  int64 // the window of the last counted request is [start, start+W)
	count  int
}

// Spec implements [Profile].
func (f *fixedWindow) Spec() Spec {
	query := "read"
	if f.writes {
		query = "write"
	}
	return Spec{Name: ProfileFixedWindow, Params: map[string]string{"align": f.align, "count-denied": fmt.Sprint(f.countDenied), "query": query}}
}

// Describe implements [Profile].
func (f *fixedWindow) Describe() string {
	s := fmt.Sprintf("a fixed window of %v aligned to the epoch", ms(f.w))
	switch f.align {
	case "go-zero":
		s = fmt.Sprintf("a fixed window of %v aligned to Go's zero time (0001-01-01 UTC, as time.Time.Truncate)", ms(f.w))
	case "first-hit":
		s = fmt.Sprintf("a fixed window of %v opened by the first request", ms(f.w))
	case "first-grid":
		s = fmt.Sprintf("fixed windows of %v on a grid anchored at the user's first request", ms(f.w))
	}
	if f.writes && !f.fixedGrid() { // a query moves no window on a fixed grid
		s += " (or a query)"
	}
	if f.countDenied {
		return fmt.Sprintf("%s, counting denied requests, limit %d", s, f.n)
	}
	return fmt.Sprintf("%s, not counting denied requests, limit %d", s, f.n)
}

// Limit implements [Profile].
func (f *fixedWindow) Limit() int { return f.n }

// Window implements [Profile].
func (f *fixedWindow) Window() time.Duration { return ms(f.w) }

// current returns the user's state for the window holding t: its start,
// and the count so far (0 in a window not yet counted in).
func (f *fixedWindow) current(t int64, user string) fixedState {
	st, ok := f.users[user]
	switch f.align {
	case "epoch", "go-zero":
		z := gridOrigin(f.align)
		start := z + floorDiv(t-z, f.w)*f.w
		if !ok || st.start != start {
			return fixedState{start: start}
		}
	case "first-hit":
		if !ok || t >= st.start+f.w || t < st.start {
			return fixedState{start: t}
		}
	default: // first-grid
		if !ok || t >= st.start+2*f.w || t < st.anchor {
			return fixedState{anchor: t, start: t}
		}
		start := st.anchor + floorDiv(t-st.anchor, f.w)*f.w
		if start != st.start {
			return fixedState{anchor: st.anchor, start: start}
		}
	}
	return st
}

// fixedGrid reports whether the windows lie on a grid fixed in time (the
// epoch's or Go's), whatever the requests.
func (f *fixedWindow) fixedGrid() bool { return f.align == "epoch" || f.align == "go-zero" }

// Allow implements [Profile].
func (f *fixedWindow) Allow(now time.Time, user string) (bool, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return false, err
	}
	t := now.UnixMilli()
	st := f.current(t, user)
	ok := st.count < f.n
	if ok || f.countDenied {
		st.count++
		f.save(user, st)
	}
	return ok, nil
}

// save keeps st as the user's state.
func (f *fixedWindow) save(user string, st fixedState) {
	if f.users == nil {
		f.users = map[string]fixedState{}
	}
	f.users[user] = st
}

// Remaining implements [Profile].
func (f *fixedWindow) Remaining(now time.Time, user string) (int, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return 0, err
	}
	st := f.current(now.UnixMilli(), user)
	if f.writes {
		f.save(user, st)
	}
	return max(0, f.n-st.count), nil
}

// RetryAfter implements [Profile]: the end of the current window.
func (f *fixedWindow) RetryAfter(now time.Time, user string) time.Duration {
	t := now.UnixMilli()
	st := f.current(t, user)
	if st.count < f.n {
		return 0
	}
	return ms(st.start + f.w - t)
}

// Lifetime implements [Profile].
func (f *fixedWindow) Lifetime(now time.Time, user string) time.Duration {
	t := now.UnixMilli()
	st, ok := f.users[user]
	if !ok {
		return 0
	}
	end := st.start + f.w
	if f.align == "first-grid" {
		end += f.w // the anchor outlives the count by a window
	}
	return ms(max(0, end-t))
}

// Reset implements [Profile].
func (f *fixedWindow) Reset(user string) error {
	if err := contract.ValidateUserID(user); err != nil {
		return err
	}
	delete(f.users, user)
	return nil
}

// Configure implements [Profile]: the counts are kept and read against the
// new limit; windows are laid out with the new W from the next decision.
func (f *fixedWindow) Configure(n int, w time.Duration) error {
	if err := contract.ValidateConfig(n, w); err != nil {
		return err
	}
	f.n, f.w = n, w.Milliseconds()
	return nil
}

// Explain implements [Profile].
func (f *fixedWindow) Explain(now, base time.Time, user string) string {
	st := f.current(now.UnixMilli(), user)
	return fmt.Sprintf("the window [%s, %s) of %s has counted %d of limit %d",
		offset(time.UnixMilli(st.start), base), offset(time.UnixMilli(st.start+f.w), base), user, st.count, f.n)
}

// Clone implements [Profile].
func (f *fixedWindow) Clone() Profile {
	c := *f
	c.users = maps.Clone(f.users)
	return &c
}

// StateKey implements [Profile].
func (f *fixedWindow) StateKey(user string) string {
	st, ok := f.users[user]
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d/%d/%d", st.anchor, st.start, st.count)
}
