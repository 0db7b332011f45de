//go:build !keel_omit2025

package mcp

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/revision"
)

// taskEntry2025 is what the run of a 2025-11-25 task holds besides the
// shared taskEntry.
type taskEntry2025 struct {
	waits int             // server-to-client requests waiting for an answer (guarded by the host's mu)
	gone  *CallToolResult // what tasks/result answers when the task was deleted before it ended (guarded by the host's mu)

	notifyMu sync.Mutex // serializes status notifications
	notified uint64     // the record version last notified (guarded by notifyMu)
}

// legacyTasks serves a tasks method to 2025 sessions whose revision has
// tasks (2025-11-25): -32601 for the others.
func legacyTasks(h MethodHandler) MethodHandler {
	return func(ctx context.Context, req *Request) (any, error) {
		if !req.Session.server.tasks.tasksOn(req.Session) {
			return nil, methodNotFound(req.Method)
		}
		return h(ctx, req)
	}
}

// tasksOn reports whether the session is offered tasks.
func (st *taskHost) tasksOn(ss *Session) bool {
	return ss.server.tasks != nil && ss.server.opts.Tools != nil && revision.AtLeast(ss.ProtocolVersion(), Version20251125)
}

// declareTasks declares the tasks capability for sessions of revision v.
func (s *Server) declareTasks(v string, caps *ServerCapabilities) {
	if s.tasks == nil || s.opts.Tools == nil || !revision.AtLeast(v, Version20251125) {
		return
	}
	caps.Tasks = &ServerTasksCapability{List: &struct{}{}, Cancel: &struct{}{},
		Requests: &TaskRequestsCapability{Tools: &ToolTaskRequests{Call: &struct{}{}}}}
}

// taskGate applies the task rules to a tools/call before it runs: it
// refuses a call that must be task-augmented and is not, or is and must
// not be (-32601), and otherwise leaves call.Task set exactly when the
// call runs as a task (startTask: in the background, once the request is
// answered), nil when it is served as a plain call.
func (st *taskHost) taskGate(ss *Session, ctx context.Context, call *ToolCall) *Error {
	if !ss.server.tasks.tasksOn(ss) {
		call.Task = nil // no tasks capability: process normally, ignore "task"
		return nil
	}
	def, ok := ss.server.tasks.findTool(ss, ctx, call.Name)
	if !ok {
		call.Task = nil // not run as a task: it holds a request slot
		return nil      // the source answers for unknown tools
	}
	support := TaskForbidden
	if def.Execution != nil && def.Execution.TaskSupport != "" {
		support = def.Execution.TaskSupport
	}
	switch {
	case call.Task == nil && support == TaskRequired:
		return &Error{Code: CodeMethodNotFound,
			Message: "Method not found: tool " + quote(call.Name) + " must be called as a task (execution.taskSupport is required)"}
	case call.Task != nil && support == TaskForbidden:
		return &Error{Code: CodeMethodNotFound,
			Message: "Method not found: tool " + quote(call.Name) + " cannot be called as a task (execution.taskSupport is forbidden)"}
	}
	return nil
}

// startTask creates the task of call and returns CreateTaskResult; the
// call starts in the background, on the task runner, once the request is
// answered.
func (st *taskHost) startTask(ss *Session, reqCtx context.Context, req *Request, call *ToolCall) (any, error) {
	owner, quota := st.ownerOf(ss, st.opts.owner(reqCtx)), st.quotaOf(reqCtx)
	ttl := st.opts.taskTTL(call.Task.TTL)
	if se := st.runner.reserve(quota); se != nil { // a slot of the task pool, from now on
		return ToolErrorResult(withIDs(se, call)), nil
	}
	// The task outlives its request; bound to the session (no
	// authorization context), it ends with it. Its ttl deletes it.
	ctx, cancel := context.WithCancel(WithToolCall(context.WithoutCancel(reqCtx), call))
	if strings.HasPrefix(owner, "session:") {
		stop := context.AfterFunc(ss.ctx, cancel)
		c := cancel
		cancel = func() { stop(); c() }
	}
	e, rec, err := st.create(reqCtx, owner, quota, Version20251125, call, ttl, nil, nil, cancel)
	if err != nil {
		cancel()
		st.runner.release(quota)
		if errors.Is(err, ErrTaskLimit) {
			return ToolErrorResult(withIDs(st.limitError(err), call)), nil
		}
		call.Logger.Error("mcp: the task store failed: the task was not created", "tool", call.Name, "error", err)
		return nil, errTaskStore()
	}
	e.r2025.notifyMu.Lock()
	e.r2025.notified = rec.Version // the creation is answered, not notified
	e.r2025.notifyMu.Unlock()
	call.task = e
	run := &taskRun{call: call, quota: quota, ctx: ctx, reserved: true, exit: cancel,
		settle: func(res *CallToolResult, err error) { st.settle(e, res, err) }}
	call.Logger.Debug("mcp: task created", "tool", call.Name, "taskId", e.id)
	created := &CreateTaskResult{Task: rec.State}
	req.AfterAnswer(func() { // the task starts once its CreateTaskResult is sent
		if ct, ok := req.sentResult().(*CreateTaskResult); !ok || ct.Task.TaskID != e.id {
			// Middleware refused it, or the request was cancelled: the
			// client never learnt of the task, which must not run.
			cancel()
			st.runner.release(quota)
			st.settle(e, nil, &Error{Code: CodeInternalError, Message: "Internal error: the task was created but its creation was not answered"})
			return
		}
		if err := st.runner.start(run); err != nil { // the server stopped its tasks (Server.StopTasks)
			cancel()
			st.settle(e, nil, err)
		}
	})
	return created, nil
}

// taskRequest prepares a request to the client sent from inside a task
// (its ctx carries the task's ToolCall): the params get the related-task
// _meta, and the task is input_required until done is called. Outside a
// task it returns params unchanged and a no-op done.
func (st *taskHost) taskRequest(ss *Session, ctx context.Context, method string, params any) (any, func(), error) {
	call := ToolCallFromContext(ctx)
	if call == nil || call.task == nil {
		return params, func() {}, nil
	}
	e := call.task
	p, err := withRelatedTask(params, e.id)
	if err != nil {
		return nil, nil, err
	}
	if method == methodPing {
		return p, func() {}, nil
	}
	if rec := st.setWaiting(e, 1); rec != nil {
		st.notifyStatus(e, rec)
	}
	return p, func() {
		if rec := st.setWaiting(e, -1); rec != nil {
			st.notifyStatus(e, rec)
		}
	}, nil
}

// withRelatedTask returns params (a JSON object, or nil) encoded with
// _meta[metaRelatedTask] set to {taskId: id}; other members are kept.
func withRelatedTask(params any, id string) (jsontext.Value, error) {
	obj := map[string]jsontext.Value{}
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, err
		}
		if string(b) != "null" {
			if err := json.Unmarshal(b, &obj); err != nil {
				return nil, errors.New("mcp: request params are not a JSON object")
			}
		}
	}
	meta := map[string]jsontext.Value{}
	if m, ok := obj["_meta"]; ok {
		if err := json.Unmarshal(m, &meta); err != nil {
			return nil, errors.New("mcp: request _meta is not a JSON object")
		}
	}
	rel, err := json.Marshal(relatedTaskMetadata{TaskID: id})
	if err != nil {
		return nil, err
	}
	meta[metaRelatedTask] = rel
	mb, err := json.Marshal(meta, json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	obj["_meta"] = mb
	return json.Marshal(obj, json.Deterministic(true))
}

func handleTasksGet(ctx context.Context, req *Request) (any, error) {
	rec, perr := lookupTask(ctx, req)
	if perr != nil {
		return nil, perr
	}
	return &GetTaskResult{Task: rec.State}, nil
}

// awaitTask waits until the task of rec is terminal and returns its
// record then; a task deleted before it ended answers the result that
// says why (gone). A task whose run is in another process is read again
// every poll interval.
func (st *taskHost) awaitTask(ctx context.Context, req *Request, rec *TaskRecord) (_ *TaskRecord, gone *CallToolResult, _ error) {
	for !rec.Terminal() {
		if e := st.liveOf(rec.ID); e != nil {
			select {
			case <-e.done:
			case <-ctx.Done():
				return nil, nil, ctx.Err() // not answered: the request was cancelled
			}
			st.mu.Lock()
			gone = e.r2025.gone
			st.mu.Unlock()
			if gone != nil {
				return nil, gone, nil
			}
		} else {
			t := time.NewTimer(max(st.opts.PollInterval, 10*time.Millisecond))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, nil, ctx.Err()
			}
		}
		next, err := st.store.Get(ctx, rec.Owner, rec.ID)
		if err != nil {
			return nil, nil, st.storeError(req, rec.ID, err)
		}
		rec = next
	}
	return rec, nil, nil
}

func handleTasksResult(ctx context.Context, req *Request) (any, error) {
	rec, perr := lookupTask(ctx, req)
	if perr != nil {
		return nil, perr
	}
	id := rec.ID
	rec, res, err := req.Session.server.tasks.awaitTask(ctx, req, rec)
	switch {
	case err != nil:
		return nil, err
	case res == nil && rec.Error != nil:
		return nil, rec.Error
	case res == nil:
		res = rec.Result
	}
	c := *res
	c.Meta = make(Meta, len(res.Meta)+1)
	for k, v := range res.Meta {
		c.Meta[k] = v
	}
	c.Meta[metaRelatedTask] = relatedTaskMetadata{TaskID: id}
	return &c, nil
}

func handleTasksCancel(ctx context.Context, req *Request) (any, error) {
	id, perr := taskParams(req)
	if perr != nil {
		return nil, perr
	}
	ss := req.Session
	st := ss.server.tasks
	e := st.liveOf(id)
	rec, ok, err := st.cancel(ctx, st.taskOwner(ss, ctx), id)
	switch {
	case err != nil:
		return nil, st.storeError(req, id, err)
	case !ok:
		return nil, &Error{Code: CodeInvalidParams,
			Message: "Cannot cancel task: already in terminal status '" + string(rec.State.Status) + "'",
			Data:    taskErrData{TaskID: id}}
	}
	if e != nil {
		req.AfterAnswer(func() { st.notifyStatus(e, rec) })
	}
	return &CancelTaskResult{Task: rec.State}, nil
}

func handleTasksList(ctx context.Context, req *Request) (any, error) {
	p, perr := decodePaginated(req)
	if perr != nil {
		return nil, perr
	}
	ss := req.Session
	st := ss.server.tasks
	recs, err := st.store.List(ctx, st.taskOwner(ss, ctx))
	if err != nil {
		return nil, st.storeError(req, "", err)
	}
	page, next, perr := paginate(recs, func(r *TaskRecord) string { return seqKey(r.Seq) }, p.Cursor, ss.server.opts.PageSize)
	if perr != nil {
		return nil, perr
	}
	tasks := make([]*Task, len(page))
	for i, r := range page {
		tasks[i] = &r.State
	}
	return &ListTasksResult{Tasks: tasks, NextCursor: next}, nil
}

// seqKey is a pagination key that sorts in creation order.
func seqKey(seq uint64) string {
	s := strconv.FormatUint(seq, 10)
	return string(rune('a'+len(s))) + s // the length prefix makes string order numeric order
}

// setWaiting records that a request to the client started (delta 1) or
// ended (-1) for e: the task is input_required while any is waiting. It
// returns the record when its status changed.
func (st *taskHost) setWaiting(e *taskEntry, delta int) *TaskRecord {
	st.mu.Lock()
	e.r2025.waits += delta
	st.mu.Unlock()
	rec, ok, err := updateTask(context.Background(), st.store, st.lim, e.owner, e.id, func(r *TaskRecord) (bool, error) {
		if r.Terminal() {
			return false, nil
		}
		st.mu.Lock()
		waiting := e.r2025.waits > 0
		st.mu.Unlock()
		want := TaskStatusWorking
		if waiting {
			want = TaskStatusInputRequired
		}
		if r.State.Status == want {
			return false, nil
		}
		r.State.Status, r.State.LastUpdatedAt = want, formatTime(st.now())
		return true, nil
	})
	if err != nil || !ok {
		return nil
	}
	return rec
}
