// Package taskstoretest is the conformance suite of mcp.TaskStore: every
// implementation (mcp.MemoryTaskStore, and stores shared by several
// processes) must pass Run. It checks the contract the Server relies on:
// records round-trip as plain data, owners see only their own tasks,
// updates are compare and swap on the record's version (also under
// concurrent writers), the task bounds hold per quota key (tasks in
// progress, finished tasks by count and by bytes, the oldest finished
// evicted first) and in all (tasks in progress, bytes of finished tasks,
// made room for only from the finishing task's own quota), also when
// many goroutines create at once (exactly the bound's number succeed),
// expired records read as not found, a method called with a context that
// is done changes nothing and returns an error matching the context's,
// and every failure is one of the store's errors, matchable with
// errors.Is (a bound's refusal names it).
package taskstoretest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// Run runs the conformance suite, each case on a new, empty store from
// newStore. The store's clock must be the wall clock (expiry is tested
// with records that expire expiryDelay after their creation).
func Run(t *testing.T, newStore func(t *testing.T) mcp.TaskStore) {
	cases := []struct {
		name string
		f    func(t *testing.T, s mcp.TaskStore)
	}{
		{"RoundTrip", testRoundTrip},
		{"ReturnedRecordsAreCopies", testCopies},
		{"IDTaken", testIDTaken},
		{"OwnerScoping", testOwnerScoping},
		{"ListInCreationOrder", testListOrder},
		{"CompareAndSwap", testCompareAndSwap},
		{"ConcurrentWriters", testConcurrentWriters},
		{"UpdateMissing", testUpdateMissing},
		{"Delete", testDelete},
		{"MaxTasksPerQuota", testMaxTasks},
		{"MaxFinishedTasksPerQuota", testMaxFinishedTasks},
		{"MaxFinishedBytesPerQuota", testMaxFinishedBytes},
		{"ResultAloneOverTheBytes", testResultAloneOver},
		{"MaxTasksTotal", testMaxTasksTotal},
		{"MaxFinishedBytesTotal", testMaxFinishedBytesTotal},
		{"NoRoomForANewTask", testNoRoomForANewTask},
		{"ConcurrentCreateAtTheBounds", testConcurrentCreate},
		{"DoneContext", testDoneContext},
		{"Expiry", testExpiry},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.f(t, newStore(t))
		})
	}
}

var ctx = context.Background()

// expiryDelay is how long after its creation the Expiry case's record
// expires: long enough for a store behind a network round trip (a
// database on a loaded machine) to create it and read it back first.
const expiryDelay = 400 * time.Millisecond

// record returns a working record of owner, counted against quota.
func record(id, owner, quota string) *mcp.TaskRecord {
	ttl := int64(60000)
	return &mcp.TaskRecord{ID: id, Owner: owner, Quota: quota, Revision: mcp.Version20251125,
		State: mcp.Task{TaskID: id, Status: mcp.TaskStatusWorking, CreatedAt: "2026-01-02T03:04:05Z",
			LastUpdatedAt: "2026-01-02T03:04:05Z", TTL: &ttl}}
}

// finish makes rec terminal with a result of size bytes and stores it.
func finish(t *testing.T, s mcp.TaskStore, rec *mcp.TaskRecord, size int64, lim mcp.TaskLimits) {
	t.Helper()
	rec.State.Status = mcp.TaskStatusCompleted
	rec.Result, rec.Size = mcp.TextResult("done"), size
	require.NoError(t, s.Update(ctx, rec, lim))
}

func ids(recs []*mcp.TaskRecord) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

func testRoundTrip(t *testing.T, s mcp.TaskStore) {
	rec := record("t1", "alice", "q")
	rec.Revision = mcp.Version20260728
	rec.ExpiresAt = time.Now().Add(time.Hour).Truncate(time.Microsecond)
	rec.Input = &mcp.TaskInput{
		Pending: map[string]mcp.TaskInputRequest{"input-1": {Key: "who", Request: mcp.InputRequest{Method: "roots/list", Params: map[string]any{}}}},
		Answers: map[string]json.RawMessage{"before": json.RawMessage(`{"roots":[]}`)},
		State:   []byte("opaque"), Round: 2, Minted: 1}
	require.NoError(t, s.Create(ctx, rec, mcp.TaskLimits{}))
	assert.EqualValues(t, 1, rec.Version, "Create sets Version 1")
	assert.NotZero(t, rec.Seq, "Create sets Seq")

	got, err := s.Get(ctx, "alice", "t1")
	require.NoError(t, err)
	assert.Equal(t, rec.ID, got.ID)
	assert.Equal(t, rec.Owner, got.Owner)
	assert.Equal(t, rec.Quota, got.Quota)
	assert.Equal(t, rec.Revision, got.Revision)
	assert.Equal(t, rec.Seq, got.Seq)
	assert.Equal(t, rec.Version, got.Version)
	assert.Equal(t, rec.State, got.State)
	assert.True(t, rec.ExpiresAt.Equal(got.ExpiresAt), "ExpiresAt %v, got %v", rec.ExpiresAt, got.ExpiresAt)
	require.NotNil(t, got.Input)
	assert.Equal(t, "who", got.Input.Pending["input-1"].Key)
	assert.Equal(t, "roots/list", got.Input.Pending["input-1"].Request.Method)
	assert.JSONEq(t, `{"roots":[]}`, string(got.Input.Answers["before"]))
	assert.Equal(t, []byte("opaque"), got.Input.State)
	assert.Equal(t, 2, got.Input.Round)
	assert.Equal(t, 1, got.Input.Minted)

	got.State.Status, got.State.StatusMessage = mcp.TaskStatusFailed, "boom"
	got.Error, got.Size = &mcp.Error{Code: mcp.CodeInternalError, Message: "Internal error: boom"}, 42
	require.NoError(t, s.Update(ctx, got, mcp.TaskLimits{}))
	assert.EqualValues(t, 2, got.Version, "Update sets the next version")
	again, err := s.Get(ctx, "alice", "t1")
	require.NoError(t, err)
	assert.Equal(t, mcp.TaskStatusFailed, again.State.Status)
	assert.Equal(t, "boom", again.State.StatusMessage)
	require.NotNil(t, again.Error)
	assert.EqualValues(t, mcp.CodeInternalError, again.Error.Code)
	assert.Equal(t, "Internal error: boom", again.Error.Message)
	assert.EqualValues(t, 42, again.Size)
	assert.True(t, again.Terminal())
}

func testCopies(t *testing.T, s mcp.TaskStore) {
	rec := record("t1", "alice", "q")
	rec.Input = &mcp.TaskInput{Pending: map[string]mcp.TaskInputRequest{"input-1": {Key: "k"}}}
	require.NoError(t, s.Create(ctx, rec, mcp.TaskLimits{}))
	rec.State.Status = mcp.TaskStatusFailed // the caller's copy, after Create
	delete(rec.Input.Pending, "input-1")

	got, err := s.Get(ctx, "alice", "t1")
	require.NoError(t, err)
	assert.Equal(t, mcp.TaskStatusWorking, got.State.Status, "changing a record given to Create changes nothing stored")
	assert.Contains(t, got.Input.Pending, "input-1")
	got.State.Status = mcp.TaskStatusCompleted
	got.Input.Pending["input-2"] = mcp.TaskInputRequest{Key: "x"}
	list, err := s.List(ctx, "alice")
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, mcp.TaskStatusWorking, list[0].State.Status, "changing a returned record changes nothing stored")
	assert.NotContains(t, list[0].Input.Pending, "input-2")
}

func testIDTaken(t *testing.T, s mcp.TaskStore) {
	require.NoError(t, s.Create(ctx, record("t1", "alice", "q"), mcp.TaskLimits{}))
	err := s.Create(ctx, record("t1", "bob", "q2"), mcp.TaskLimits{})
	assert.ErrorIs(t, err, mcp.ErrTaskExists, "an id is unique across owners")
	got, err := s.Get(ctx, "alice", "t1")
	require.NoError(t, err)
	assert.Equal(t, "alice", got.Owner, "the first record is kept")
}

func testOwnerScoping(t *testing.T, s mcp.TaskStore) {
	require.NoError(t, s.Create(ctx, record("a1", "alice", "q"), mcp.TaskLimits{}))
	require.NoError(t, s.Create(ctx, record("b1", "bob", "q"), mcp.TaskLimits{}))

	_, err := s.Get(ctx, "bob", "a1")
	assert.ErrorIs(t, err, mcp.ErrTaskNotFound, "another owner's task reads as not found")
	_, err = s.Get(ctx, "alice", "nope")
	assert.ErrorIs(t, err, mcp.ErrTaskNotFound)

	list, err := s.List(ctx, "alice")
	require.NoError(t, err)
	assert.Equal(t, []string{"a1"}, ids(list))
	list, err = s.List(ctx, "carol")
	require.NoError(t, err)
	assert.Empty(t, list)

	stolen := record("a1", "bob", "q")
	stolen.Version = 1
	assert.ErrorIs(t, s.Update(ctx, stolen, mcp.TaskLimits{}), mcp.ErrTaskNotFound, "another owner cannot update")
	assert.ErrorIs(t, s.Delete(ctx, "bob", "a1"), mcp.ErrTaskNotFound, "another owner cannot delete")
	got, err := s.Get(ctx, "alice", "a1")
	require.NoError(t, err)
	assert.EqualValues(t, 1, got.Version, "untouched")
}

func testListOrder(t *testing.T, s mcp.TaskStore) {
	// Ids that sort otherwise than their creation.
	for _, id := range []string{"z", "b", "m", "a", "y"} {
		require.NoError(t, s.Create(ctx, record(id, "alice", "q"), mcp.TaskLimits{}))
	}
	list, err := s.List(ctx, "alice")
	require.NoError(t, err)
	assert.Equal(t, []string{"z", "b", "m", "a", "y"}, ids(list))
	for i := 1; i < len(list); i++ {
		assert.Greater(t, list[i].Seq, list[i-1].Seq, "Seq grows with creation")
	}
}

func testCompareAndSwap(t *testing.T, s mcp.TaskStore) {
	require.NoError(t, s.Create(ctx, record("t1", "alice", "q"), mcp.TaskLimits{}))
	a, err := s.Get(ctx, "alice", "t1")
	require.NoError(t, err)
	b, err := s.Get(ctx, "alice", "t1")
	require.NoError(t, err)

	a.State.StatusMessage = "first"
	require.NoError(t, s.Update(ctx, a, mcp.TaskLimits{}))
	b.State.StatusMessage = "second"
	err = s.Update(ctx, b, mcp.TaskLimits{})
	assert.ErrorIs(t, err, mcp.ErrTaskConflict, "a stale version is refused")
	assert.EqualValues(t, 1, b.Version, "a refused update leaves the caller's version")

	got, err := s.Get(ctx, "alice", "t1")
	require.NoError(t, err)
	assert.Equal(t, "first", got.State.StatusMessage, "a refused update stores nothing")
	assert.EqualValues(t, 2, got.Version)
}

func testConcurrentWriters(t *testing.T, s mcp.TaskStore) {
	rec := record("t1", "alice", "q")
	rec.Input = &mcp.TaskInput{}
	require.NoError(t, s.Create(ctx, rec, mcp.TaskLimits{}))
	const writers, each = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				for { // read, change, compare and swap; again on conflict
					r, err := s.Get(ctx, "alice", "t1")
					if err != nil {
						errs <- err
						return
					}
					r.Input.Round++
					err = s.Update(ctx, r, mcp.TaskLimits{})
					if err == nil {
						break
					}
					if !errors.Is(err, mcp.ErrTaskConflict) {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	got, err := s.Get(ctx, "alice", "t1")
	require.NoError(t, err)
	assert.Equal(t, writers*each, got.Input.Round, "no update is lost")
	assert.EqualValues(t, 1+writers*each, got.Version)
}

func testUpdateMissing(t *testing.T, s mcp.TaskStore) {
	rec := record("t1", "alice", "q")
	rec.Version = 1
	assert.ErrorIs(t, s.Update(ctx, rec, mcp.TaskLimits{}), mcp.ErrTaskNotFound)
}

func testDelete(t *testing.T, s mcp.TaskStore) {
	lim := mcp.TaskLimits{MaxTasks: 1}
	require.NoError(t, s.Create(ctx, record("t1", "alice", "q"), lim))
	require.NoError(t, s.Delete(ctx, "alice", "t1"))
	_, err := s.Get(ctx, "alice", "t1")
	assert.ErrorIs(t, err, mcp.ErrTaskNotFound)
	assert.ErrorIs(t, s.Delete(ctx, "alice", "t1"), mcp.ErrTaskNotFound)
	require.NoError(t, s.Create(ctx, record("t2", "alice", "q"), lim), "a deleted task no longer counts against MaxTasks")
}

func testMaxTasks(t *testing.T, s mcp.TaskStore) {
	lim := mcp.TaskLimits{MaxTasks: 2}
	// One quota key, two owners (two sessions of one peer): one share.
	require.NoError(t, s.Create(ctx, record("a1", "alice-1", "peer"), lim))
	require.NoError(t, s.Create(ctx, record("a2", "alice-2", "peer"), lim))
	err := s.Create(ctx, record("a3", "alice-1", "peer"), lim)
	assert.ErrorIs(t, err, mcp.ErrTaskLimit, "the quota key has MaxTasks tasks in progress")
	_, err = s.Get(ctx, "alice-1", "a3")
	assert.ErrorIs(t, err, mcp.ErrTaskNotFound, "a refused record is not stored")
	require.NoError(t, s.Create(ctx, record("b1", "bob", "other"), lim), "another quota key has its own share")

	a1, err := s.Get(ctx, "alice-1", "a1")
	require.NoError(t, err)
	finish(t, s, a1, 10, lim)
	require.NoError(t, s.Create(ctx, record("a3", "alice-1", "peer"), lim), "a terminal task is no longer in progress")
	assert.ErrorIs(t, s.Create(ctx, record("a4", "alice-1", "peer"), lim), mcp.ErrTaskLimit)
	require.NoError(t, s.Create(ctx, record("a4", "alice-1", "peer"), mcp.TaskLimits{}), "zero: no limit")
}

func testMaxFinishedTasks(t *testing.T, s mcp.TaskStore) {
	lim := mcp.TaskLimits{MaxFinishedTasks: 2}
	for i := range 4 {
		require.NoError(t, s.Create(ctx, record(fmt.Sprint("a", i), "alice", "qa"), lim))
	}
	require.NoError(t, s.Create(ctx, record("b0", "bob", "qb"), lim))
	b0, err := s.Get(ctx, "bob", "b0")
	require.NoError(t, err)
	finish(t, s, b0, 10, lim)
	// Finish in another order than creation: eviction follows the order
	// tasks finished in.
	for _, id := range []string{"a2", "a0", "a3"} {
		r, err := s.Get(ctx, "alice", id)
		require.NoError(t, err)
		finish(t, s, r, 10, lim)
	}
	list, err := s.List(ctx, "alice")
	require.NoError(t, err)
	assert.Equal(t, []string{"a0", "a1", "a3"}, ids(list), "the first to finish (a2) is evicted; a1 still runs")
	_, err = s.Get(ctx, "alice", "a2")
	assert.ErrorIs(t, err, mcp.ErrTaskNotFound, "an evicted task reads as not found")
	_, err = s.Get(ctx, "bob", "b0")
	assert.NoError(t, err, "another quota key's finished tasks are not evicted")
}

func testMaxFinishedBytes(t *testing.T, s mcp.TaskStore) {
	// Three results of 1000 bytes hold 3*(1000+overhead); the limit
	// leaves room for two.
	lim := mcp.TaskLimits{MaxFinishedBytes: 2*(1000+mcp.TaskRecordOverhead) + 100}
	for i := range 3 {
		id := fmt.Sprint("a", i)
		require.NoError(t, s.Create(ctx, record(id, "alice", "qa"), lim))
		r, err := s.Get(ctx, "alice", id)
		require.NoError(t, err)
		finish(t, s, r, 1000, lim)
	}
	list, err := s.List(ctx, "alice")
	require.NoError(t, err)
	assert.Equal(t, []string{"a1", "a2"}, ids(list), "the oldest finished is evicted beyond MaxFinishedBytes")

	require.NoError(t, s.Create(ctx, record("b0", "bob", "qb"), lim))
	b0, err := s.Get(ctx, "bob", "b0")
	require.NoError(t, err)
	finish(t, s, b0, 1000, lim)
	list, err = s.List(ctx, "alice")
	require.NoError(t, err)
	assert.Len(t, list, 2, "another quota key's bytes evict none of alice's")
}

func testResultAloneOver(t *testing.T, s mcp.TaskStore) {
	lim := mcp.TaskLimits{MaxFinishedBytes: 4096}
	require.NoError(t, s.Create(ctx, record("small", "alice", "q"), lim))
	small, err := s.Get(ctx, "alice", "small")
	require.NoError(t, err)
	finish(t, s, small, 100, lim)
	require.NoError(t, s.Create(ctx, record("big", "alice", "q"), lim))
	big, err := s.Get(ctx, "alice", "big")
	require.NoError(t, err)
	finish(t, s, big, 5000, lim)
	_, err = s.Get(ctx, "alice", "big")
	assert.ErrorIs(t, err, mcp.ErrTaskNotFound, "a record over the bytes alone is evicted too")
	_, err = s.Get(ctx, "alice", "small")
	assert.ErrorIs(t, err, mcp.ErrTaskNotFound, "after the older ones")
}

func testExpiry(t *testing.T, s mcp.TaskStore) {
	lim := mcp.TaskLimits{MaxTasks: 1}
	rec := record("soon", "alice", "q")
	rec.ExpiresAt = time.Now().Add(expiryDelay)
	require.NoError(t, s.Create(ctx, rec, lim))
	keep := record("later", "bob", "qb")
	keep.ExpiresAt = time.Now().Add(time.Hour)
	require.NoError(t, s.Create(ctx, keep, lim))
	_, err := s.Get(ctx, "alice", "soon")
	require.NoError(t, err, "not expired yet")
	assert.ErrorIs(t, s.Create(ctx, record("next", "alice", "q"), lim), mcp.ErrTaskLimit)

	time.Sleep(time.Until(rec.ExpiresAt) + 10*time.Millisecond)
	_, err = s.Get(ctx, "alice", "soon")
	assert.ErrorIs(t, err, mcp.ErrTaskNotFound, "an expired record reads as not found")
	list, err := s.List(ctx, "alice")
	require.NoError(t, err)
	assert.Empty(t, list, "and is left out of List")
	assert.ErrorIs(t, s.Update(ctx, rec, lim), mcp.ErrTaskNotFound, "and cannot be updated")
	require.NoError(t, s.Create(ctx, record("next", "alice", "q"), lim), "and counts against no bound")
	_, err = s.Get(ctx, "bob", "later")
	assert.NoError(t, err, "a record that has not expired stays")
}

// limitOf returns the bound err names, requiring a *mcp.TaskLimitError
// that matches mcp.ErrTaskLimit.
func limitOf(t *testing.T, err error) string {
	t.Helper()
	require.ErrorIs(t, err, mcp.ErrTaskLimit)
	var le *mcp.TaskLimitError
	require.ErrorAs(t, err, &le)
	return le.Limit
}

func testMaxTasksTotal(t *testing.T, s mcp.TaskStore) {
	lim := mcp.TaskLimits{MaxTasks: 2, MaxTasksTotal: 3}
	require.NoError(t, s.Create(ctx, record("a1", "alice", "qa"), lim))
	require.NoError(t, s.Create(ctx, record("a2", "alice", "qa"), lim))
	assert.Equal(t, mcp.TaskLimitMaxTasks, limitOf(t, s.Create(ctx, record("a3", "alice", "qa"), lim)), "the quota's share first")
	in := record("b1", "bob", "qb")
	in.State.Status = mcp.TaskStatusInputRequired
	require.NoError(t, s.Create(ctx, in, lim))
	err := s.Create(ctx, record("c1", "carol", "qc"), lim)
	assert.Equal(t, mcp.TaskLimitMaxTasksTotal, limitOf(t, err), "all quotas together, input_required included")
	_, err = s.Get(ctx, "carol", "c1")
	assert.ErrorIs(t, err, mcp.ErrTaskNotFound, "a refused record is not stored")

	b1, err := s.Get(ctx, "bob", "b1")
	require.NoError(t, err)
	finish(t, s, b1, 10, lim)
	require.NoError(t, s.Create(ctx, record("c1", "carol", "qc"), lim), "a terminal task is no longer in progress")
	require.NoError(t, s.Delete(ctx, "alice", "a1"))
	require.NoError(t, s.Create(ctx, record("c2", "carol", "qc"), lim), "nor a deleted one")
}

func testMaxFinishedBytesTotal(t *testing.T, s mcp.TaskStore) {
	// Room for four results of 1000 bytes in all, and the overhead of two
	// more records.
	const size = 1000
	lim := mcp.TaskLimits{MaxFinishedBytesTotal: 4*(size+mcp.TaskRecordOverhead) + 2*mcp.TaskRecordOverhead + 100}
	run := func(owner, quota, id string, n int64) error {
		require.NoError(t, s.Create(ctx, record(id, owner, quota), lim))
		r, err := s.Get(ctx, owner, id)
		require.NoError(t, err)
		r.State.Status = mcp.TaskStatusCompleted
		r.Result, r.Size = mcp.TextResult("done"), n
		return s.Update(ctx, r, lim)
	}
	for i := range 4 {
		require.NoError(t, run("alice", "qa", fmt.Sprint("a", i), size))
	}
	err := run("bob", "qb", "b0", size)
	assert.Equal(t, mcp.TaskLimitMaxFinishedBytesTotal, limitOf(t, err), "another quota's records are never evicted for it")
	b0, err := s.Get(ctx, "bob", "b0")
	require.NoError(t, err)
	assert.Equal(t, mcp.TaskStatusWorking, b0.State.Status, "a refused update stores nothing")
	list, err := s.List(ctx, "alice")
	require.NoError(t, err)
	assert.Len(t, list, 4, "and evicts nothing")

	b0.State.Status, b0.Result, b0.Size = mcp.TaskStatusFailed, nil, 0
	b0.Error = &mcp.Error{Code: mcp.CodeInternalError, Message: "Internal error: no room"}
	require.NoError(t, s.Update(ctx, b0, lim), "an outcome of Size zero is never refused")

	require.NoError(t, run("alice", "qa", "a4", size), "a quota makes room from its own finished records")
	list, err = s.List(ctx, "alice")
	require.NoError(t, err)
	assert.Equal(t, []string{"a1", "a2", "a3", "a4"}, ids(list), "its oldest is evicted")
	_, err = s.Get(ctx, "bob", "b0")
	assert.NoError(t, err, "the other quota's record stays")
}

func testNoRoomForANewTask(t *testing.T, s mcp.TaskStore) {
	lim := mcp.TaskLimits{MaxFinishedBytesTotal: 1000}
	require.NoError(t, s.Create(ctx, record("a0", "alice", "qa"), lim))
	a0, err := s.Get(ctx, "alice", "a0")
	require.NoError(t, err)
	finish(t, s, a0, 100, lim)
	err = s.Create(ctx, record("b0", "bob", "qb"), lim)
	assert.Equal(t, mcp.TaskLimitMaxFinishedBytesTotal, limitOf(t, err),
		"no room for a new record's overhead among the finished ones")
	require.NoError(t, s.Delete(ctx, "alice", "a0"))
	require.NoError(t, s.Create(ctx, record("b0", "bob", "qb"), lim), "deleting a finished record makes room")
}

// testConcurrentCreate starts many Creates at once against the task
// bounds: exactly the bound's number succeed, per quota key and in all,
// and every other one is refused with the *mcp.TaskLimitError of a bound
// that was reached, storing nothing.
func testConcurrentCreate(t *testing.T, s mcp.TaskStore) {
	const quotas, perQuota = 3, 8 // 24 creators
	cases := []struct {
		name string
		lim  mcp.TaskLimits
		// want: successes per quota key and in all.
		maxPerQuota, total int
		limits             []string // the bounds a refusal may name
	}{
		{"MaxTasks", mcp.TaskLimits{MaxTasks: 2}, 2, quotas * 2, []string{mcp.TaskLimitMaxTasks}},
		{"MaxTasksTotal", mcp.TaskLimits{MaxTasksTotal: 5}, perQuota, 5, []string{mcp.TaskLimitMaxTasksTotal}},
		{"Both", mcp.TaskLimits{MaxTasks: 2, MaxTasksTotal: 5}, 2, 5, []string{mcp.TaskLimitMaxTasks, mcp.TaskLimitMaxTasksTotal}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prefix := c.name + "-"
			start := make(chan struct{})
			errs := make([]error, quotas*perQuota)
			var wg sync.WaitGroup
			for i := range errs {
				q := i % quotas
				// Two owners per quota key: one share between them.
				rec := record(fmt.Sprint(prefix, i), fmt.Sprint(prefix, "owner-", q, "-", i%2), fmt.Sprint(prefix, "quota-", q))
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					errs[i] = s.Create(ctx, rec, c.lim)
				}()
			}
			close(start)
			wg.Wait()

			okPerQuota := make([]int, quotas)
			ok := 0
			for i, err := range errs {
				if err == nil {
					okPerQuota[i%quotas]++
					ok++
					continue
				}
				assert.Contains(t, c.limits, limitOf(t, err), "creator %d refused for a bound", i)
			}
			assert.Equal(t, c.total, ok, "exactly the bound's number of creations succeed")
			for q, n := range okPerQuota {
				assert.LessOrEqual(t, n, c.maxPerQuota, "quota %d holds at most MaxTasks", q)
			}
			stored := 0
			for q := range quotas {
				for o := range 2 {
					list, err := s.List(ctx, fmt.Sprint(prefix, "owner-", q, "-", o))
					require.NoError(t, err)
					stored += len(list)
				}
			}
			assert.Equal(t, ok, stored, "a refused record is not stored")
			for i, err := range errs { // leave the store empty for the next case
				if err == nil {
					require.NoError(t, s.Delete(ctx, fmt.Sprint(prefix, "owner-", i%quotas, "-", i%2), fmt.Sprint(prefix, i)))
				}
			}
		})
	}
}

// testDoneContext calls every method with a context that is cancelled,
// and with one whose deadline has passed: each returns an error matching
// the context's error and changes nothing.
func testDoneContext(t *testing.T, s mcp.TaskStore) {
	require.NoError(t, s.Create(ctx, record("t1", "alice", "q"), mcp.TaskLimits{}))
	stored, err := s.Get(ctx, "alice", "t1")
	require.NoError(t, err)

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, dc := range []struct {
		name string
		ctx  context.Context
	}{{"cancelled", cancelled}, {"deadline passed", expired}} {
		t.Run(dc.name, func(t *testing.T) {
			want := dc.ctx.Err()
			require.Error(t, want)
			assert.ErrorIs(t, s.Create(dc.ctx, record("t2", "alice", "q"), mcp.TaskLimits{}), want, "Create")
			_, err := s.Get(dc.ctx, "alice", "t1")
			assert.ErrorIs(t, err, want, "Get")
			_, err = s.List(dc.ctx, "alice")
			assert.ErrorIs(t, err, want, "List")
			upd := stored.Clone()
			upd.State.StatusMessage = "changed"
			assert.ErrorIs(t, s.Update(dc.ctx, upd, mcp.TaskLimits{}), want, "Update")
			assert.ErrorIs(t, s.Delete(dc.ctx, "alice", "t1"), want, "Delete")

			list, err := s.List(ctx, "alice")
			require.NoError(t, err)
			assert.Equal(t, []string{"t1"}, ids(list), "Create stored nothing, Delete deleted nothing")
			assert.Empty(t, list[0].State.StatusMessage, "Update changed nothing")
			assert.Equal(t, stored.Version, list[0].Version)
		})
	}
}
