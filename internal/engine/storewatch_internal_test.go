package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/result"
)

// A span in which the store failed counts for the specs that ran then,
// and for storeGrace after it; not for one that ended before it, nor
// when a spec of the run put the fault on the store itself.
func TestStoreWatchSpans(t *testing.T) {
	w := &storeWatch{addr: "127.0.0.1:6379", every: storeWatchEvery}
	t0 := time.Now()
	w.mark(t0.Add(10*time.Second), t0.Add(11*time.Second), "stopped answering (EOF)")
	assert.Empty(t, w.during(t0, t0.Add(9*time.Second)), "ended before it")
	assert.Contains(t, w.during(t0, t0.Add(10500*time.Millisecond)), "the store at 127.0.0.1:6379 stopped answering (EOF), from")
	assert.NotEmpty(t, w.during(t0.Add(12*time.Second), t0.Add(20*time.Second)), "within the grace after it")
	assert.Empty(t, w.during(t0.Add(11*time.Second+storeGrace+time.Millisecond), t0.Add(20*time.Second)), "past the grace")

	w.setDown(t0.Add(30*time.Second), t0.Add(31*time.Second), "does not answer (EOF)")
	assert.Contains(t, w.during(t0.Add(30500*time.Millisecond), t0.Add(40*time.Second)), "does not answer (EOF)", "a spell still going on counts")
	w.mark(t0.Add(30*time.Second), t0.Add(32*time.Second), "stopped answering (EOF)")
	assert.Nil(t, w.down, "ended by the answer that came")

	w.own(t0.Add(10*time.Second), t0.Add(11*time.Second))
	assert.Empty(t, w.during(t0, t0.Add(20*time.Second)), "a fault the run put on the store")
	assert.NotEmpty(t, w.during(t0.Add(31*time.Second), t0.Add(33*time.Second)), "one it did not")
	for i := range 2 * maxStoreSpans {
		at := t0.Add(time.Duration(100+i) * time.Second)
		w.mark(at, at, "started afresh")
	}
	assert.Len(t, w.spans, maxStoreSpans, "bounded")
}

// A spec that passed or failed while the store failed is inconclusive,
// naming it, and saying what it would have been; the spec that puts the
// fault on the store grades it.
func TestStoreFailedSpecsAreInconclusive(t *testing.T) {
	w := &storeWatch{addr: "127.0.0.1:6379", every: storeWatchEvery}
	from := time.Now()
	w.mark(from, from, "started afresh (its run_id changed): what it held before may be lost")
	r := &runner{watch: w}
	res := result.Result{Status: result.Passed, Duration: time.Since(from) + time.Millisecond}
	r.storeFailed(t.Context(), Target{}, &Spec{ID: "core/x"}, &res)
	assert.Equal(t, result.Inconclusive, res.Status)
	require.NotNil(t, res.Failure)
	assert.Equal(t, result.KindStoreFailed, res.Failure.Kind)
	assert.Contains(t, res.Message, "the target's store failed while the spec ran (the store at 127.0.0.1:6379 started afresh")
	assert.Contains(t, res.Message, "it would have passed")

	owned := result.Result{Status: result.Failed, Duration: time.Since(from), Message: "x"}
	r.storeFailed(t.Context(), Target{}, &Spec{ID: "robust/store-outage", Needs: []Need{NeedOwnRedis}}, &owned)
	assert.Equal(t, result.Failed, owned.Status, "the spec that faults the store grades it")

	said := result.Result{Status: result.Failed, Duration: time.Second, Message: "y"}
	told := Target{StoreFailing: func(from, to time.Time) string { return "the target said so" }}
	(&runner{}).storeFailed(t.Context(), told, &Spec{ID: "core/y"}, &said)
	assert.Equal(t, result.Inconclusive, said.Status)
	assert.Contains(t, said.Message, "the target said so")
}

// The pattern of a store failing under a declared allow or deny policy:
// every answer of two users or more the policy's, to the spec's end,
// after answers that were not, and the failure among them. A limiter
// that refuses everything from the start, one user alone, or a failure
// before the pattern are not it.
func TestPolicyPattern(t *testing.T) {
	op := func(step int, user, got string) result.Op {
		return result.Op{Step: step, At: time.Duration(step) * time.Millisecond, User: user, Op: `AllowRequest("` + user + `")`, Got: got, Kind: result.OpAllow, Count: 1}
	}
	failed := func(step int, ops ...result.Op) *result.Result {
		return &result.Result{Status: result.Failed, Failure: &result.Failure{Kind: result.KindWrongAnswer, Step: step, Timeline: &result.Timeline{Ops: ops}}}
	}
	outage := []result.Op{op(1, "a", "allowed"), op(2, "b", "denied"), op(3, "a", "denied"), op(4, "b", "denied"), op(5, "c", "denied"), op(6, "a", "denied")}
	got := policyPattern(failed(4, outage...), contract.StoreFailureDeny)
	assert.Contains(t, got, "every AllowRequest from +2ms to the spec's end was denied (5 answers, 3 users), as the declared store-failure policy deny answers")
	assert.Empty(t, policyPattern(failed(4, outage...), contract.StoreFailureAllow), "allow answers allowed")
	assert.Empty(t, policyPattern(failed(4, outage...), contract.StoreFailureError), "no pattern under error: 503s say it")
	assert.Empty(t, policyPattern(failed(1, outage...), contract.StoreFailureDeny), "the failure came before the pattern")
	assert.Empty(t, policyPattern(failed(3, outage[1:]...), contract.StoreFailureDeny), "denied from the start, no first request seen")
	dead := []result.Op{op(1, "a", "denied"), op(2, "b", "denied"), op(3, "a", "denied"), op(4, "b", "denied")}
	assert.Contains(t, policyPattern(failed(1, dead...), contract.StoreFailureDeny), "denied (4 answers, 2 users)", "a user's first request refused")
	burst := result.Op{Step: 1, User: "a", Op: "10 × AllowRequest(\"a\")", Got: "5 allowed", Kind: result.OpBurst, Count: 10}
	cburst := burst
	cburst.User, cburst.Step = "c", 2
	afterBurst := []result.Op{burst, cburst, op(3, "a", "denied"), op(4, "c", "denied"), op(5, "a", "denied"), op(6, "c", "denied")}
	assert.Empty(t, policyPattern(failed(3, afterBurst...), contract.StoreFailureDeny), "a user's requests after its burst are not its first")
	heavy := func(step int, user string) result.Op {
		o := op(step, user, "denied")
		o.Op = `AllowRequestN("` + user + `", 9)`
		return o
	}
	weighted := []result.Op{heavy(1, "a"), heavy(2, "c"), op(3, "a", "denied"), op(4, "c", "denied")}
	assert.Empty(t, policyPattern(failed(1, weighted...), contract.StoreFailureDeny), "a weighted first request may be refused (a cost above the limit)")
	allowed := []result.Op{op(1, "a", "allowed"), op(2, "b", "allowed"), op(3, "a", "allowed"), op(4, "b", "allowed")}
	assert.Empty(t, policyPattern(failed(4, allowed...), contract.StoreFailureAllow), "allowed from the start tells nothing")
	one := []result.Op{op(1, "a", "allowed"), op(2, "a", "denied"), op(3, "a", "denied"), op(4, "a", "denied"), op(5, "a", "denied")}
	assert.Empty(t, policyPattern(failed(3, one...), contract.StoreFailureDeny), "one user alone")
	passed := failed(4, outage...)
	passed.Status = result.Passed
	assert.Empty(t, policyPattern(passed, contract.StoreFailureDeny))
}
