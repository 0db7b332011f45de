package mcp

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The server's tasks, of both revisions, are in two parts:
//
//   - their records, in the TaskStore (TaskOptions.Store, by default a
//     MemoryTaskStore): plain data any process sharing the store can
//     read, changed by compare and swap (updateTask);
//   - their runs, in this process (taskHost.live): the call, the
//     cancel function of its context, the channel its waiters wait on. A
//     run is registered while its task is not terminal. Status
//     notifications of 2025-11-25 tasks go to the live sessions of the
//     task's owner (rev2025_task_owners.go), not to one connection.
//
// Each task belongs to an owner — the authorization context its request
// came with (TaskOptions.Owner), or the session itself when there is none
// (2025 revisions), or its peer (2026-07-28) — and is visible to that
// owner only. Session-bound tasks are cancelled and deleted when their
// session ends. A task still running when its ttl passes is cancelled and
// deleted; the store hides any expired record.
//
// Quotas (tasks in progress, finished tasks, pool slots) are counted per
// quota key (quotaOf): the authorization context when there is one, else
// the peer (PeerFromContext), so that a peer with many sessions or names
// has one share, and no other peer can use it up. The store applies the
// task bounds (TaskLimits); the task runner the pool's.

// taskHost is the tasks of one Server: its store and the runs of this
// process.
type taskHost struct {
	opts  TaskOptions
	now   func() time.Time
	store TaskStore
	lim   TaskLimits
	srv   *Server // whose options mask error text (errors_mask.go)

	mu    sync.Mutex
	live  map[string]*taskEntry     // the runs of this process, by task id
	sess  taskSessions              // the 2025 sessions of the tasks' owners (rev2025_task_owners.go)
	spare string                    // an id a refused creation left unused
	index atomic.Pointer[toolIndex] // tool definitions by name (see findTool)

	// runner runs the handlers of both eras (task_runner.go).
	runner *taskRunner

	// onChange is told of every status change of a 2026-07-28 task
	// (subscriptions that listen to it: rev2026_listen.go).
	onChange func(t Task)

	// unwatch stops watching a shared store's changes (task_store_watch.go).
	unwatch func()
}

// taskEntry is the run of one task in this process: live handles only,
// its record is in the store. Its mutable fields are guarded by the
// host's mu.
type taskEntry struct {
	id    string
	owner string
	rules taskRules // the rules of the task's revision (TaskRecord.Revision)
	call  *ToolCall

	done   chan struct{}      // closed when the task is terminal or deleted
	cancel context.CancelFunc // cancels the handler's context
	expiry *time.Timer        // deletes the task when its ttl passes
	ended  bool               // done is closed

	run   *modernRun    // a task of the 2026-07-28 extension (rev2026_tasks_serve.go)
	r2025 taskEntry2025 // a 2025-11-25 task's run (rev2025_tasks.go)
}

func newTaskHost(o TaskOptions, now func() time.Time, tools ToolSource) *taskHost {
	store := o.Store
	if store == nil {
		store = NewMemoryTaskStore(now)
	}
	st := &taskHost{opts: o, now: now, store: store, live: map[string]*taskEntry{},
		lim: TaskLimits{MaxTasks: o.MaxTasks, MaxTasksTotal: o.MaxTasksTotal, MaxFinishedTasks: o.MaxFinishedTasks,
			MaxFinishedBytes: o.MaxFinishedBytes, MaxFinishedBytesTotal: o.MaxFinishedBytesTotal}}
	st.runner = newTaskRunner(&st.opts, tools)
	return st
}

// changed reports a status change of a 2026-07-28 task.
func (st *taskHost) changed(t Task) {
	if st.onChange != nil {
		st.onChange(t)
	}
}

// formatTime formats t as an ISO 8601 (RFC 3339) UTC timestamp with at most
// millisecond precision.
func formatTime(t time.Time) string {
	return t.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)
}

// taskNotFoundError is the -32602 answer for an unknown, expired or
// foreign task id.
func taskNotFoundError(id string) *Error {
	return &Error{Code: CodeInvalidParams, Message: "Failed to retrieve task: Task not found",
		Data: taskErrData{TaskID: id}}
}

// taskErrData is error.data of a task method's protocol error: the task
// it names, and (filled in as it is answered) the request's correlationId.
type taskErrData struct {
	TaskID        string `json:"taskId"`
	CorrelationID string `json:"correlationId,omitempty"`
}

func (d taskErrData) correlatedWith(id func() string) any {
	if d.CorrelationID != "" {
		return nil
	}
	d.CorrelationID = id()
	return d
}

// errTooManyTasks is the tools/call answer when an owner has MaxTasks tasks
// running: an isError result (RESOURCE_EXHAUSTED, retryable), as for
// other limits.
func errTooManyTasks(limit int) *StructuredError {
	return NewToolError(ErrResourceExhausted,
		"too many tasks in progress (at most "+strconv.Itoa(limit)+"); wait for some to finish or cancel them",
		map[string]any{"limit": TaskLimitMaxTasks, TaskLimitMaxTasks: limit})
}

// errTooManyTasksTotal is errTooManyTasks for the server's bound, all
// owners together (MaxTasksTotal).
func errTooManyTasksTotal(limit int) *StructuredError {
	return NewToolError(ErrResourceExhausted,
		"too many tasks in progress on the server (at most "+strconv.Itoa(limit)+", TaskOptions.MaxTasksTotal); retry later",
		map[string]any{"limit": TaskLimitMaxTasksTotal, TaskLimitMaxTasksTotal: limit})
}

// errFinishedBytesTotal is the tools/call answer when the finished tasks
// of all owners hold MaxFinishedBytesTotal.
func errFinishedBytesTotal(limit int64) *StructuredError {
	return NewToolError(ErrResourceExhausted,
		"finished tasks hold "+strconv.FormatInt(limit, 10)+" bytes of results on the server (TaskOptions.MaxFinishedBytesTotal); retry once some expire",
		map[string]any{"limit": TaskLimitMaxFinishedBytesTotal, TaskLimitMaxFinishedBytesTotal: limit})
}

// limitError is the tools/call answer to a creation the store refused
// for a bound (err matches ErrTaskLimit): the RESOURCE_EXHAUSTED error
// naming it. A store that does not say which bound refused is taken to
// mean MaxTasks.
func (st *taskHost) limitError(err error) *StructuredError {
	var le *TaskLimitError
	if errors.As(err, &le) {
		switch le.Limit {
		case TaskLimitMaxTasksTotal:
			return errTooManyTasksTotal(int(le.Max))
		case TaskLimitMaxFinishedBytesTotal:
			return errFinishedBytesTotal(le.Max)
		}
	}
	return errTooManyTasks(st.opts.MaxTasks)
}

// overTotalError is the failure a task records instead of its outcome
// when the finished tasks of all owners hold MaxFinishedBytesTotal and
// its own owner's left no room: RESOURCE_EXHAUSTED naming the limit,
// retryable.
func overTotalError(call *ToolCall, max int64) (*Error, string) {
	msg := "the finished tasks on the server hold " + strconv.FormatInt(max, 10) +
		" bytes of results (TaskOptions.MaxFinishedBytesTotal): the task's result is not kept; retry once some expire"
	se := &StructuredError{Code: ErrResourceExhausted, Message: msg, Retryable: true,
		Details: map[string]any{"limit": TaskLimitMaxFinishedBytesTotal, TaskLimitMaxFinishedBytesTotal: max}}
	if call != nil {
		se.CorrelationID, se.RunID = call.CorrelationID, call.RunID
	}
	return &Error{Code: CodeInternalError, Message: "Internal error: " + msg, Data: se}, msg
}

// errTaskStore is the answer to a request the task store failed (the
// cause is logged, never sent).
func errTaskStore() *Error {
	return &Error{Code: CodeInternalError, Message: "Internal error: the task store failed"}
}

// storeError maps an error of the store on a request for task id: -32602
// for ErrTaskNotFound, else errTaskStore (logged).
func (st *taskHost) storeError(call *Request, id string, err error) *Error {
	if errors.Is(err, ErrTaskNotFound) {
		return taskNotFoundError(id)
	}
	if call != nil && call.Session != nil {
		if ctx := call.f.ctx; ctx != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			// The request ended (its client went away, or its deadline
			// passed) before the store answered: no fault of the store.
			// A store's own timeout stays an error.
			call.Session.log.Debug("mcp: the request ended before the task store answered", "taskId", id, "error", err)
		} else {
			call.Session.log.Error("mcp: the task store failed", "taskId", id, "error", err)
		}
	}
	return errTaskStore()
}

// maxIDTries bounds the ids tried for one task when NewID repeats itself.
const maxIDTries = 8

// create stores a new working task for owner of revision rev, counted
// against quota, and registers its
// run (for a 2026-07-28 task, run is its call). It returns ErrTaskLimit
// (a *TaskLimitError: limitError) when quota already has MaxTasks tasks
// in progress, the server MaxTasksTotal, or finished tasks hold
// MaxFinishedBytesTotal. cancel cancels the task's context.
func (st *taskHost) create(ctx context.Context, owner, quota, rev string, call *ToolCall, ttl *int64,
	in *TaskInput, run *modernRun, cancel context.CancelFunc) (*taskEntry, *TaskRecord, error) {
	now := st.now()
	ts := formatTime(now)
	rec := &TaskRecord{Owner: owner, Quota: quota, Revision: rev, Input: in,
		State: Task{Status: TaskStatusWorking, CreatedAt: ts, LastUpdatedAt: ts, TTL: ttl}}
	if st.opts.PollInterval > 0 {
		ms := st.opts.PollInterval.Milliseconds()
		rec.State.PollInterval = &ms
	}
	if ttl != nil {
		rec.ExpiresAt = now.Add(time.Duration(*ttl) * time.Millisecond)
	}
	var err error
	for range maxIDTries { // one try with random ids; more guard a poor NewID
		rec.ID = st.newID()
		rec.State.TaskID = rec.ID
		if err = st.store.Create(ctx, rec, st.lim); !errors.Is(err, ErrTaskExists) {
			break
		}
	}
	if err != nil {
		if !errors.Is(err, ErrTaskExists) {
			st.mu.Lock()
			st.spare = rec.ID // never stored: the next task takes it
			st.mu.Unlock()
		}
		return nil, nil, err
	}
	e := &taskEntry{id: rec.ID, owner: owner, rules: rulesFor(rev), call: call, done: make(chan struct{}), cancel: cancel,
		run: run}
	st.mu.Lock()
	st.live[e.id] = e
	if ttl != nil {
		e.expiry = time.AfterFunc(time.Duration(*ttl)*time.Millisecond, func() { st.remove(e, "expired") })
	}
	st.mu.Unlock()
	return e, rec, nil
}

// newID returns the id of a new task: one a refused creation left
// unused, else a new one (NewID).
func (st *taskHost) newID() string {
	st.mu.Lock()
	id := st.spare
	st.spare = ""
	st.mu.Unlock()
	if id == "" {
		id = st.opts.NewID()
	}
	return id
}

// liveOf returns the run of task id in this process, or nil.
func (st *taskHost) liveOf(id string) *taskEntry {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.live[id]
}

// endLocked closes e's done channel and unregisters it, once.
func (st *taskHost) endLocked(e *taskEntry) {
	if e.ended {
		return
	}
	e.ended = true
	close(e.done)
	if st.live[e.id] == e {
		delete(st.live, e.id)
	}
	if e.expiry != nil {
		e.expiry.Stop()
	}
}

// finish moves e's task to a terminal status with its outcome (size: its
// JSON size), unless it is terminal already, and ends its run. It returns
// the record when it did. An outcome the store cannot keep within
// MaxFinishedBytesTotal is replaced by the failure naming that limit
// (overTotalError).
func (st *taskHost) finish(e *taskEntry, status TaskStatus, message string, res *CallToolResult, rpcErr *Error, size int64) *TaskRecord {
	set := func(r *TaskRecord) (bool, error) {
		if r.Terminal() {
			return false, nil
		}
		r.State.Status, r.State.StatusMessage, r.State.LastUpdatedAt = status, message, formatTime(st.now())
		r.Result, r.Error, r.Size = res, rpcErr, size
		return true, nil
	}
	rec, ok, err := st.finalWrite(e, set)
	if errors.Is(err, ErrTaskLimit) && size > 0 {
		var msg string
		res, size = nil, 0
		rpcErr, msg = overTotalError(e.call, st.lim.MaxFinishedBytesTotal)
		status, message = e.rules.status(nil, rpcErr, e.rules.limitMessage(msg))
		e.call.Logger.Warn("mcp: the finished tasks hold MaxFinishedBytesTotal: the task fails", "tool", e.call.Name, "taskId", e.id)
		rec, ok, err = st.finalWrite(e, set)
	}
	if err != nil && !errors.Is(err, ErrTaskNotFound) {
		e.call.Logger.Error("mcp: the task store failed: the task's outcome is lost", "taskId", e.id, "error", err)
	}
	st.mu.Lock()
	st.endLocked(e)
	st.mu.Unlock()
	if !ok {
		return nil
	}
	return rec
}

// finalWriteAttempts bounds the writes of a task's outcome; the pause
// between two doubles from finalWritePause. A store that keeps failing
// leaves the record as it was (a shared store's lease sweeper fails it).
const (
	finalWriteAttempts = 4
	finalWritePause    = 50 * time.Millisecond
)

// finalWrite writes e's outcome with set, again after a store error other
// than a bound or the record's absence (a transient failure of a shared
// store), up to finalWriteAttempts times.
func (st *taskHost) finalWrite(e *taskEntry, set func(*TaskRecord) (bool, error)) (*TaskRecord, bool, error) {
	pause := finalWritePause
	for attempt := 1; ; attempt++ {
		rec, ok, err := updateTask(context.Background(), st.store, st.lim, e.owner, e.id, set)
		if err == nil || errors.Is(err, ErrTaskLimit) || errors.Is(err, ErrTaskNotFound) || attempt == finalWriteAttempts {
			return rec, ok, err
		}
		e.call.Logger.Warn("mcp: writing the task's outcome failed: trying again", "taskId", e.id, "attempt", attempt, "error", err)
		time.Sleep(pause)
		pause *= 2
	}
}

// cancel is the one cancel path of both revisions: it moves owner's task
// id to cancelled unless it is terminal, ends its run in this process and
// cancels its handler's context. It returns the record and whether it
// cancelled it. The result it keeps then is its revision's
// (taskRules.cancelled).
func (st *taskHost) cancel(ctx context.Context, owner, id string) (*TaskRecord, bool, error) {
	e := st.liveOf(id)
	rec, ok, err := updateTask(ctx, st.store, st.lim, owner, id, func(r *TaskRecord) (bool, error) {
		if r.Terminal() {
			return false, nil
		}
		r.State.Status, r.State.StatusMessage, r.State.LastUpdatedAt = TaskStatusCancelled, "The task was cancelled by request.", formatTime(st.now())
		var call *ToolCall
		if e != nil {
			call = e.call
		}
		r.Result, r.Error, r.Size = rulesFor(r.Revision).cancelled(id, call), nil, 0
		return true, nil
	})
	if err != nil || !ok {
		return rec, false, err
	}
	if e != nil {
		st.stopRun(e)
		e.call.Logger.Debug("mcp: task cancelled by the client", "tool", e.call.Name, "taskId", id)
	}
	return rec, true, nil
}

// stopRun ends e's run in this process once its record is terminal: a late
// result is dropped, and its handler's context is cancelled.
func (st *taskHost) stopRun(e *taskEntry) {
	e.call.progress.finish()
	st.mu.Lock()
	st.endLocked(e)
	st.mu.Unlock()
	e.cancel()
}

// remove deletes e's task and ends its run: a task still running is
// cancelled, and waiters of tasks/result get a result that says why.
func (st *taskHost) remove(e *taskEntry, why string) {
	if err := st.store.Delete(context.Background(), e.owner, e.id); err != nil && !errors.Is(err, ErrTaskNotFound) {
		e.call.Logger.Error("mcp: the task store failed", "taskId", e.id, "error", err)
	}
	st.mu.Lock()
	running := !e.ended
	if running {
		e.rules.deleted(e, why)
		st.endLocked(e)
	}
	st.mu.Unlock()
	if running {
		e.call.progress.finish()
	}
	e.cancel()
}

// stopAll cancels the context of every run of this process.
func (st *taskHost) stopAll() {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, e := range st.live {
		e.cancel()
	}
}

// toolIndex maps the names of one ListTools answer to their definitions.
type toolIndex struct {
	list []*Tool
	byID map[string]*Tool
}
