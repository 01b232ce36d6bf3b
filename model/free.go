package model

import "time"

// freeWriter is a profile in which a request of cost 0 may save the user's
// state as a query that writes does (query=write), though it counts
// nothing: a window a request opens may be opened by one that costs
// nothing. Both readings are honest: rate-limiter-flexible's consume(0)
// runs SET key 0 EX W NX, then INCRBY key 0 (a window opens), while
// another limiter returns before touching its store. No state of any user
// but user changes, and no answer tells the two apart at once: only when
// the window then ends does.
type freeWriter interface {
	Replayable
	// writeFree saves user's state at now as a query that writes does.
	writeFree(now time.Time, user string)
	// freeMoves says whether such a write can change a later answer (a
	// window laid on a fixed grid it cannot move).
	freeMoves() bool
}

// FreeMayWrite reports whether, under v, a request of cost 0 that saves
// the user's state can be told apart from one that does not (see
// [TimedOp.Free]), so that a history with one in it has two honest
// readings. The real-time oracles follow both; a grader replaying one
// model at a time sends no such request.
func (v Variant) FreeMayWrite() bool {
	p, err := v.New(1, time.Second)
	if err != nil {
		return false
	}
	fw, ok := p.(freeWriter)
	return ok && fw.freeMoves()
}

// writeFree implements [freeWriter]: the window a query that writes keeps.
func (f *fixedWindow) writeFree(now time.Time, user string) {
	f.save(user, f.current(now.UnixMilli(), user))
}

// freeMoves implements [freeWriter]: windows on a fixed grid do not move.
func (f *fixedWindow) freeMoves() bool { return !f.fixedGrid() }

// writeFree implements [freeWriter]: the counts rolled to now (a user with
// none gets a grid at now), as renew=any saves them.
func (s *slidingCounter) writeFree(now time.Time, user string) {
	t := now.UnixMilli()
	s.save(user, s.at(t, user))
}

// freeMoves implements [freeWriter]: only a grid anchored at a request
// moves.
func (s *slidingCounter) freeMoves() bool { return s.align == "first-grid" }

// writeFree implements [freeWriter]: the bucket refilled up to now, saved.
func (b *tokenBucket) writeFree(now time.Time, user string) {
	t := now.UnixMilli()
	st, _ := b.at(t, user)
	b.save(t, user, st)
}

// freeMoves implements [freeWriter]: a save restarts a refill interval
// (refill=interval) and an idle expiry (expire=idle); a bucket that
// refills continuously and is forgotten once full holds the same tokens
// whenever it is saved.
func (b *tokenBucket) freeMoves() bool { return b.interval || b.idle }
