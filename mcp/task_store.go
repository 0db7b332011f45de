package mcp

import (
	"cmp"
	"container/list"
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The server's tasks, of both revisions: an in-memory table shared by the
// sessions of one Server. Each task belongs to an owner — the
// authorization context its request came with (TaskOptions.Owner), or the
// session itself when there is none — and is visible to that owner only.
// Expired tasks (createdAt + ttl in the past) are purged when the table is
// next used; a purged task that still runs is cancelled. Session-bound
// tasks are cancelled and dropped when their session ends.
//
// Quotas (tasks in progress, finished tasks, pool slots) are counted per
// quota key (quotaOf): the authorization context when there is one, else
// the peer (PeerFromContext), so that a peer with many sessions or names
// has one share, and no other peer can use it up. Finished tasks are
// bounded per quota key: at most MaxFinishedTasks of them, holding at most
// MaxFinishedBytes of results (each counts the JSON size of its result or
// error plus finishedTaskOverhead); beyond either, the oldest finished
// task of that key is evicted and reads as not found, as an expired one
// does. The server's totals (MaxTasksTotal, MaxFinishedBytesTotal) are
// counted beside them (activeAll, bytesAll).

// finishedTaskOverhead is what every finished task counts against
// MaxFinishedBytes besides its result: the entry itself.
const finishedTaskOverhead = 512

// taskTable is the task store as the tasks/* handlers and the task runner
// use it: create, look up, list, change and finish tasks, and evict
// finished ones (finish does, within the per-owner bounds). taskStore, the
// in-memory table, implements it; a store shared by replicas (PostgreSQL)
// is meant to implement the same operations over task records. It stays
// unexported while entries carry live handles of the process that runs
// them (the call, its cancel function, the done channel): a shared store
// needs those split from the record first.
type taskTable interface {
	// create adds a working task for owner ("" = the session ss),
	// counted against quota, or returns nil and the limit's error when
	// quota has MaxTasks tasks in progress or the server MaxTasksTotal, or
	// finished tasks hold MaxFinishedBytesTotal.
	create(ss *Session, owner, quota string, call *ToolCall, ttl *int64, cancel context.CancelFunc) (*taskEntry, *StructuredError)
	// get returns owner's task id, or nil (unknown, expired, evicted, or
	// another owner's).
	get(owner, id string) *taskEntry
	// list returns owner's tasks in creation order.
	list(owner string) []*taskEntry
	// snapshot returns a task's current state.
	snapshot(e *taskEntry) Task
	// setWaiting counts the requests a task waits for (input_required).
	setWaiting(e *taskEntry, delta int) bool
	// finish moves a task to a terminal status with its outcome (size is
	// its JSON size), evicting its quota key's oldest finished tasks beyond
	// the bounds; false when the task was terminal already.
	finish(e *taskEntry, status TaskStatus, message string, res *CallToolResult, rpcErr *Error, size int64) bool
	// outcome returns a terminal task's result or error.
	outcome(e *taskEntry) (*CallToolResult, *Error)
}

var _ taskTable = (*taskStore)(nil)

// taskEntry is one task. Its mutable fields are guarded by the store's mu.
type taskEntry struct {
	id    string
	owner string // who may see it
	quota string // what it counts against (quotaOf)
	seq   uint64
	key   string   // pagination key: creation order
	ss    *Session // the session that created it: status notifications go there
	call  *ToolCall

	task    Task      // current state; task.TTL is never modified
	expires time.Time // zero: never
	done    chan struct{}
	cancel  context.CancelFunc
	waits   int // server-to-client requests waiting for an answer

	result *CallToolResult // terminal: the result of the call (isError for failures and cancellation)
	rpcErr *Error          // terminal: the JSON-RPC error the call ended with
	size   int64           // terminal: what it counts against MaxFinishedBytes
	fin    *list.Element   // terminal: its place in its owner's finished list

	notifyMu sync.Mutex // serializes status notifications
	notified Task       // the state last notified (guarded by notifyMu)

	mod *modernTask // a task of the 2026-07-28 extension (tasks_modern.go)
}

// taskStore holds the tasks of one Server.
type taskStore struct {
	opts TaskOptions
	now  func() time.Time

	mu         sync.Mutex
	byID       map[string]*taskEntry
	seq        uint64
	nextExpiry time.Time           // earliest expiry among the tasks (zero: none)
	sessions   map[*Session]string // owner keys of the sessions with tasks (their end is watched)
	sessionSeq uint64
	active     map[string]int            // quota key → non-terminal tasks
	finished   map[string]*finishedTasks // quota key → its terminal tasks, oldest first
	activeAll  int                       // non-terminal tasks, all quota keys (MaxTasksTotal)
	bytesAll   int64                     // bytes of finished tasks, all quota keys (MaxFinishedBytesTotal)
	index      atomic.Pointer[toolIndex] // tool definitions by name (see findTool)

	// runner runs the handlers of both eras (task_runner.go).
	runner *taskRunner

	// onChange is told of every status change of a 2026-07-28 task
	// (subscriptions that listen to it: listen.go).
	onChange func(e *taskEntry)
}

// changed reports a status change of a 2026-07-28 task.
func (st *taskStore) changed(e *taskEntry) {
	if st.onChange != nil {
		st.onChange(e)
	}
}

// finishedTasks are the terminal tasks of one quota key, in the order they
// finished, and the bytes they count.
type finishedTasks struct {
	l     list.List // of *taskEntry
	bytes int64
}

func newTaskStore(o TaskOptions, now func() time.Time, tools ToolSource) *taskStore {
	st := &taskStore{opts: o, now: now, byID: map[string]*taskEntry{},
		sessions: map[*Session]string{}, active: map[string]int{}, finished: map[string]*finishedTasks{}}
	st.runner = newTaskRunner(&st.opts, tools)
	return st
}

// formatTime formats t as an ISO 8601 (RFC 3339) UTC timestamp with at most
// millisecond precision.
func formatTime(t time.Time) string {
	return t.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)
}

// errTaskNotFound is the -32602 answer for an unknown, expired or foreign
// task id.
func errTaskNotFound(id string) *Error {
	return &Error{Code: CodeInvalidParams, Message: "Failed to retrieve task: Task not found",
		Data: map[string]any{"taskId": id}}
}

// errTooManyTasks is the tools/call answer when an owner has MaxTasks tasks
// running: an isError result (RESOURCE_EXHAUSTED, retryable), as for
// other limits.
func errTooManyTasks(limit int) *StructuredError {
	return NewToolError(ErrResourceExhausted,
		"too many tasks in progress (at most "+strconv.Itoa(limit)+"); wait for some to finish or cancel them",
		map[string]any{"limit": "maxTasks", "maxTasks": limit})
}

// errTooManyTasksTotal is errTooManyTasks for the server's bound, all
// owners together (MaxTasksTotal).
func errTooManyTasksTotal(limit int) *StructuredError {
	return NewToolError(ErrResourceExhausted,
		"too many tasks in progress on the server (at most "+strconv.Itoa(limit)+", TaskOptions.MaxTasksTotal); retry later",
		map[string]any{"limit": "maxTasksTotal", "maxTasksTotal": limit})
}

// errFinishedBytesTotal is the tools/call answer when the finished tasks
// of all owners hold MaxFinishedBytesTotal.
func errFinishedBytesTotal(limit int64) *StructuredError {
	return NewToolError(ErrResourceExhausted,
		"finished tasks hold "+strconv.FormatInt(limit, 10)+" bytes of results on the server (TaskOptions.MaxFinishedBytesTotal); retry once some expire",
		map[string]any{"limit": "maxFinishedBytesTotal", "maxFinishedBytesTotal": limit})
}

// create adds a new working task for owner ("" = the session ss), created
// by ss and counted against quota, unless quota already has MaxTasks tasks
// in progress, the server MaxTasksTotal, or finished tasks hold
// MaxFinishedBytesTotal (nil and the limit's error then). cancel cancels
// the task's context.
func (st *taskStore) create(ss *Session, owner, quota string, call *ToolCall, ttl *int64, cancel context.CancelFunc) (*taskEntry, *StructuredError) {
	now := st.now()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.purgeLocked(now)
	if owner == "" {
		owner = st.sessionOwnerLocked(ss)
	}
	if max := st.opts.MaxTasks; max > 0 && st.active[quota] >= max {
		return nil, errTooManyTasks(max)
	}
	if max := st.opts.MaxTasksTotal; max > 0 && st.activeAll >= max {
		return nil, errTooManyTasksTotal(max)
	}
	if max := st.opts.MaxFinishedBytesTotal; max > 0 && st.bytesAll+finishedTaskOverhead > max {
		return nil, errFinishedBytesTotal(max)
	}
	st.seq++
	id := st.opts.NewID()
	for st.byID[id] != nil { // never with random ids; guards a poor NewID
		id = st.opts.NewID()
	}
	ts := formatTime(now)
	e := &taskEntry{id: id, owner: owner, quota: quota, seq: st.seq, key: seqKey(st.seq), ss: ss, call: call,
		task: Task{TaskID: id, Status: TaskStatusWorking, CreatedAt: ts, LastUpdatedAt: ts, TTL: ttl},
		done: make(chan struct{}), cancel: cancel}
	if st.opts.PollInterval > 0 {
		ms := st.opts.PollInterval.Milliseconds()
		e.task.PollInterval = &ms
	}
	if ttl != nil {
		e.expires = now.Add(time.Duration(*ttl) * time.Millisecond)
		if st.nextExpiry.IsZero() || e.expires.Before(st.nextExpiry) {
			st.nextExpiry = e.expires
		}
	}
	e.notified = e.task
	st.byID[id] = e
	st.active[quota]++
	st.activeAll++
	return e, nil
}

// sessionOwnerLocked returns the owner key of the tasks ss creates without
// an authorization context, and watches the end of ss to drop them.
func (st *taskStore) sessionOwnerLocked(ss *Session) string {
	if k, ok := st.sessions[ss]; ok {
		return k
	}
	st.sessionSeq++
	k := "session:" + strconv.FormatUint(st.sessionSeq, 10)
	st.sessions[ss] = k
	context.AfterFunc(ss.ctx, func() { st.dropSession(ss) })
	return k
}

// ownerOf returns the owner key for a request on ss whose authorization
// context is owner ("" = none: the session).
func (st *taskStore) ownerOf(ss *Session, owner string) string {
	if owner != "" {
		return owner
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.sessionOwnerLocked(ss)
}

// seqKey is a pagination key that sorts in creation order.
func seqKey(seq uint64) string {
	s := strconv.FormatUint(seq, 10)
	return string(rune('a'+len(s))) + s // the length prefix makes string order numeric order
}

// get returns owner's task id (nil if unknown, expired or not owner's).
func (st *taskStore) get(owner, id string) *taskEntry {
	now := st.now()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.purgeLocked(now)
	if e := st.byID[id]; e != nil && e.owner == owner {
		return e
	}
	return nil
}

// cancelRun cancels the context of e's call.
func (st *taskStore) cancelRun(e *taskEntry) { e.cancel() }

// snapshot returns a copy of e's current state.
func (st *taskStore) snapshot(e *taskEntry) Task {
	st.mu.Lock()
	defer st.mu.Unlock()
	return e.task
}

// list returns owner's tasks in creation order.
func (st *taskStore) list(owner string) []*taskEntry {
	now := st.now()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.purgeLocked(now)
	var out []*taskEntry
	for _, e := range st.byID {
		if e.owner == owner {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *taskEntry) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// states returns copies of the states of es.
func (st *taskStore) states(es []*taskEntry) []*Task {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]*Task, len(es))
	for i, e := range es {
		t := e.task
		out[i] = &t
	}
	return out
}

// setWaiting records that a request to the client started (delta 1) or
// ended (-1) for e: the task is input_required while any is waiting. It
// reports whether the status changed.
func (st *taskStore) setWaiting(e *taskEntry, delta int) bool {
	now := st.now()
	st.mu.Lock()
	defer st.mu.Unlock()
	e.waits += delta
	if e.task.Status.Terminal() {
		return false
	}
	want := TaskStatusWorking
	if e.waits > 0 {
		want = TaskStatusInputRequired
	}
	if e.task.Status == want {
		return false
	}
	e.task.Status, e.task.LastUpdatedAt = want, formatTime(now)
	return true
}

// finish moves e to a terminal status with its outcome (size: its JSON
// size), unless it is terminal already; it reports whether it did. The
// quota key's oldest finished tasks are evicted beyond MaxFinishedTasks and
// MaxFinishedBytes (e itself too, when its result alone is over).
func (st *taskStore) finish(e *taskEntry, status TaskStatus, message string, res *CallToolResult, rpcErr *Error, size int64) bool {
	now := st.now()
	st.mu.Lock()
	defer st.mu.Unlock()
	if e.task.Status.Terminal() {
		return false
	}
	e.task.Status, e.task.StatusMessage, e.task.LastUpdatedAt = status, message, formatTime(now)
	e.result, e.rpcErr = res, rpcErr
	st.deactivateLocked(e)
	close(e.done)
	st.retireLocked(e, size)
	return true
}

// deactivateLocked uncounts the task e, no longer in progress, from the
// tasks in progress.
func (st *taskStore) deactivateLocked(e *taskEntry) {
	st.activeAll--
	st.active[e.quota]--
	if st.active[e.quota] <= 0 {
		delete(st.active, e.quota)
	}
}

// retireLocked adds the terminal task e to its quota key's finished list and
// evicts the oldest ones beyond the bounds: the key's own bounds, and the
// server's (MaxFinishedBytesTotal), never by evicting another key's
// tasks. Beyond the server's, e makes room by evicting its key's oldest
// finished tasks; where that is not enough, e fails naming the limit
// instead of storing its outcome (overTotalLocked), and where even that
// does not fit, e itself is evicted.
func (st *taskStore) retireLocked(e *taskEntry, size int64) {
	if st.byID[e.id] != e {
		return // removed meanwhile
	}
	e.size = size + finishedTaskOverhead
	maxN, maxB, maxAll := st.opts.MaxFinishedTasks, st.opts.MaxFinishedBytes, st.opts.MaxFinishedBytesTotal
	if maxAll > 0 && st.bytesAll+e.size > maxAll {
		for f := st.finished[e.quota]; f != nil && f.l.Len() > 0 && st.bytesAll+e.size > maxAll; {
			st.evictLocked(f.l.Front().Value.(*taskEntry))
		}
		if st.bytesAll+e.size > maxAll && e.task.Status != TaskStatusCancelled {
			st.overTotalLocked(e, maxAll)
		}
	}
	f := st.finished[e.quota]
	if f == nil {
		f = &finishedTasks{}
		st.finished[e.quota] = f
	}
	e.fin = f.l.PushBack(e)
	f.bytes += e.size
	st.bytesAll += e.size
	for f.l.Len() > 0 && ((maxN > 0 && f.l.Len() > maxN) || (maxB > 0 && f.bytes > maxB) || (maxAll > 0 && st.bytesAll > maxAll)) {
		st.evictLocked(f.l.Front().Value.(*taskEntry))
	}
}

// evictLocked removes the finished task old: it reads as not found.
func (st *taskStore) evictLocked(old *taskEntry) {
	delete(st.byID, old.id)
	st.unlinkLocked(old)
	old.cancel()
}

// overTotalLocked replaces the outcome of e, which just finished, by the
// failure naming MaxFinishedBytesTotal: the finished tasks of all owners
// hold it, and e's own owner's left no room. It is retryable, as
// RESOURCE_EXHAUSTED is.
func (st *taskStore) overTotalLocked(e *taskEntry, max int64) {
	msg := "the finished tasks on the server hold " + strconv.FormatInt(max, 10) +
		" bytes of results (TaskOptions.MaxFinishedBytesTotal): the task's result is not kept; retry once some expire"
	var corr, run string
	if e.call != nil {
		corr, run = e.call.CorrelationID, e.call.RunID
	}
	e.result, e.rpcErr = nil, &Error{Code: CodeInternalError, Message: "Internal error: " + msg,
		Data: &StructuredError{Code: ErrResourceExhausted, Message: msg, Retryable: true,
			Details:       map[string]any{"limit": "maxFinishedBytesTotal", "maxFinishedBytesTotal": max},
			CorrelationID: corr, RunID: run}}
	e.task.Status, e.task.StatusMessage = TaskStatusFailed, ""
	if e.mod == nil {
		e.task.StatusMessage = "Tool execution failed: " + msg
	}
	e.size = finishedTaskOverhead
}

// unlinkLocked takes a terminal task out of its quota key's finished list.
func (st *taskStore) unlinkLocked(e *taskEntry) {
	if e.fin == nil {
		return
	}
	f := st.finished[e.quota]
	f.l.Remove(e.fin)
	f.bytes -= e.size
	st.bytesAll -= e.size
	e.fin = nil
	if f.l.Len() == 0 {
		delete(st.finished, e.quota)
	}
}

// outcome returns e's final result or error (e must be terminal).
func (st *taskStore) outcome(e *taskEntry) (*CallToolResult, *Error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return e.result, e.rpcErr
}

// purgeLocked removes expired tasks, cancelling those still running.
func (st *taskStore) purgeLocked(now time.Time) {
	if st.nextExpiry.IsZero() || now.Before(st.nextExpiry) {
		return
	}
	st.nextExpiry = time.Time{}
	for id, e := range st.byID {
		if e.expires.IsZero() {
			continue
		}
		if !now.Before(e.expires) {
			st.removeLocked(id, e, "expired")
			continue
		}
		if st.nextExpiry.IsZero() || e.expires.Before(st.nextExpiry) {
			st.nextExpiry = e.expires
		}
	}
}

// removeLocked drops a task; a task still running is cancelled, and waiters
// of tasks/result see it vanish.
func (st *taskStore) removeLocked(id string, e *taskEntry, why string) {
	delete(st.byID, id)
	st.unlinkLocked(e)
	if !e.task.Status.Terminal() {
		st.deactivateLocked(e)
		e.task.Status = TaskStatusCancelled
		e.task.StatusMessage = "The task was removed (" + why + ")."
		e.result = ToolErrorResult(&StructuredError{Code: ErrInternal, Message: "task " + why,
			Details: map[string]any{"reason": why, "taskId": id}})
		close(e.done)
		e.call.responded.Store(true) // its late result is dropped
		e.call.progress.finish()
	}
	e.cancel()
}

// dropSession removes the tasks bound to ss (not those of an
// authorization context) once ss has ended.
func (st *taskStore) dropSession(ss *Session) {
	st.mu.Lock()
	defer st.mu.Unlock()
	own, ok := st.sessions[ss]
	if !ok {
		return
	}
	delete(st.sessions, ss)
	for id, e := range st.byID {
		if e.owner == own {
			st.removeLocked(id, e, "session closed")
		}
	}
}

// toolIndex maps the names of one ListTools answer to their definitions.
type toolIndex struct {
	list []*Tool
	byID map[string]*Tool
}
