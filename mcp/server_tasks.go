package mcp

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/ids"
)

// Tasks (2025-11-25, experimental): a client may ask for a tools/call to
// run as a task — it gets a CreateTaskResult at once, polls the task with
// tasks/get, collects the tool's result with tasks/result, and may cancel
// it with tasks/cancel or list its tasks with tasks/list. The server offers
// tasks when ServerOptions.Tasks is set, to sessions of 2025-11-25 only;
// other sessions see no tasks capability, their "task" params are ignored
// and the tasks/* methods get -32601. (Revision 2026-07-28 has tasks as an
// extension instead, with other rules: tasks_modern.go.)
//
// Which tools may run as tasks is each tool's execution.taskSupport
// (registry.ToolOptions.TaskSupport): "task" sent for a tool whose support
// is forbidden (or absent) gets -32601, and so does a call without "task" of
// a tool whose support is required.
//
// A task runs the call in the background, on a goroutine of its own, with
// the same context values as a plain call (ToolCallFromContext,
// SessionFromContext, ProgressFromContext, ClientLogger): it ends when the
// handler returns, and is cancelled by tasks/cancel, by the end of its
// session (for tasks bound to the session) and when its ttl runs out.
// While it waits for the client (sampling, elicitation, roots: see
// Session.CreateMessage and friends) the task is input_required, and those
// requests, like its progress notifications, carry the related-task _meta.
// Each change of status is announced with notifications/tasks/status.
//
// Security: tasks are bound to the authorization context of the request
// that created them (TaskOptions.Owner) or, without one, to the session, and
// are visible to it only: another owner's task id is answered like an
// unknown one. Task ids are random UUIDs (128 bits, 122 of them random).

// Defaults of TaskOptions.
const (
	// DefaultTaskTTL is how long a task is kept when its request names no
	// ttl: one hour from its creation.
	DefaultTaskTTL = time.Hour
	// DefaultMaxTaskTTL caps the ttl a request may ask for: one day.
	DefaultMaxTaskTTL = 24 * time.Hour
	// DefaultTaskPollInterval is the polling interval suggested to clients.
	DefaultTaskPollInterval = time.Second
	// DefaultMaxTasks bounds the tasks in progress per owner.
	DefaultMaxTasks = 100
	// DefaultTaskImmediateWait is how long a 2026-07-28 tools/call that
	// may become a task waits for its handler before answering with a task.
	DefaultTaskImmediateWait = 50 * time.Millisecond
)

// TaskOptions configure tasks (ServerOptions.Tasks). The zero value gives
// the defaults.
type TaskOptions struct {
	// TTL is the ttl of tasks whose request names none (0 =
	// DefaultTaskTTL; negative = unlimited, sent as null).
	TTL time.Duration
	// MaxTTL caps requested ttls (0 = DefaultMaxTaskTTL; negative = no
	// cap). A task's actual ttl is reported in every Task.
	MaxTTL time.Duration
	// PollInterval is the polling interval suggested to clients (0 =
	// DefaultTaskPollInterval; negative = none suggested).
	PollInterval time.Duration
	// MaxTasks bounds the tasks in progress (not yet terminal) per owner
	// (0 = DefaultMaxTasks; negative = no limit). A task-augmented call
	// beyond it gets a RESOURCE_EXHAUSTED isError result.
	MaxTasks int
	// NewID generates task ids (nil = random UUID v4 from crypto/rand).
	// Ids must be unique and, unless Owner binds tasks to an authorization
	// context, hard to guess.
	NewID func() string
	// Owner returns the authorization context (for example the
	// authenticated subject) of a request; ctx is the request's context
	// (SessionFromContext, TokenInfoFromContext). Tasks are bound to it:
	// any session of the same owner may get, collect, cancel and list them,
	// and they outlive the session that created them (until their ttl).
	// "" binds tasks to the session: they end with it. Nil means the
	// subject of the request's verified bearer token (HTTP with
	// streamhttp.RequireBearer), else the session.
	Owner func(ctx context.Context) string
	// ImmediateWait is how long a 2026-07-28 tools/call that may become a
	// task waits for its handler before it answers with a task (the
	// immediate-result shortcut: a handler that returns, or asks for
	// input, within it is answered directly). 0 = DefaultTaskImmediateWait;
	// negative = no wait: such calls become tasks before their handler
	// starts. A handler may also become a task at once with StartTask.
	ImmediateWait time.Duration
}

// withDefaults returns o with its defaults filled in.
func (o TaskOptions) withDefaults() TaskOptions {
	if o.TTL == 0 {
		o.TTL = DefaultTaskTTL
	}
	if o.MaxTTL == 0 {
		o.MaxTTL = DefaultMaxTaskTTL
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultTaskPollInterval
	}
	if o.MaxTasks == 0 {
		o.MaxTasks = DefaultMaxTasks
	}
	if o.NewID == nil {
		o.NewID = ids.NewUUID
	}
	if o.ImmediateWait == 0 {
		o.ImmediateWait = DefaultTaskImmediateWait
	}
	return o
}

// ToolFinder is an optional interface of a ToolSource: FindTool returns the
// definition of the named tool as the session of ctx would see it in
// tools/list, without listing every tool. The Server uses it to read a
// tool's execution.taskSupport; without it, it looks the tool up in
// ListTools (remembering the answer while the source returns the same
// slice). middleware.Chain implements it.
type ToolFinder interface {
	FindTool(ctx context.Context, name string) (*Tool, bool)
}

// initTasks sets up the task table when o.Tasks is set (called by NewServer).
func (s *Server) initTasks() {
	if s.opts.Tasks == nil {
		return
	}
	o := s.opts.Tasks.withDefaults()
	s.opts.Tasks = &o
	s.tasks = newTaskStore(o, s.opts.Now)
	s.tasks.onChange = s.hub.taskChanged // notifications/tasks (listen.go)
}

// tasksOn reports whether the session is offered tasks.
func (ss *Session) tasksOn() bool {
	return ss.server.tasks != nil && ss.server.opts.Tools != nil && VersionAtLeast(ss.ProtocolVersion(), Version20251125)
}

// declareTasks declares the tasks capability for sessions of revision v.
func (s *Server) declareTasks(v string, caps *ServerCapabilities) {
	if s.tasks == nil || s.opts.Tools == nil || !VersionAtLeast(v, Version20251125) {
		return
	}
	caps.Tasks = &ServerTasksCapability{List: &struct{}{}, Cancel: &struct{}{},
		Requests: &TaskRequestsCapability{Tools: &ToolTaskRequests{Call: &struct{}{}}}}
}

// findTool returns the definition of the named tool (see ToolFinder).
func (ss *Session) findTool(ctx context.Context, name string) (*Tool, bool) {
	src := ss.server.opts.Tools
	if f, ok := src.(ToolFinder); ok {
		return f.FindTool(ctx, name)
	}
	list, err := src.ListTools(ctx)
	if err != nil || len(list) == 0 {
		return nil, false
	}
	st := ss.server.tasks
	idx := st.index.Load()
	if idx == nil || len(idx.list) != len(list) || &idx.list[0] != &list[0] {
		idx = &toolIndex{list: list, byID: make(map[string]*Tool, len(list))}
		for _, t := range list {
			idx.byID[t.Name] = t
		}
		st.index.Store(idx)
	}
	t, ok := idx.byID[name]
	return t, ok
}

// taskCall applies the task rules to a tools/call. It returns the answer
// and true when the call is task-augmented (it then runs in the background,
// once the request is answered) or refused; false means "serve it as a
// plain call".
func (ss *Session) taskCall(ctx context.Context, req *Request, call *ToolCall) (any, error, bool) {
	if !ss.tasksOn() {
		call.Task = nil // no tasks capability: process normally, ignore "task"
		return nil, nil, false
	}
	def, ok := ss.findTool(ctx, call.Name)
	if !ok {
		return nil, nil, false // the source answers for unknown tools
	}
	support := TaskForbidden
	if def.Execution != nil && def.Execution.TaskSupport != "" {
		support = def.Execution.TaskSupport
	}
	switch {
	case call.Task == nil && support == TaskRequired:
		return nil, &Error{Code: CodeMethodNotFound,
			Message: "Method not found: tool " + quote(call.Name) + " must be called as a task (execution.taskSupport is required)"}, true
	case call.Task == nil:
		return nil, nil, false
	case support == TaskForbidden:
		return nil, &Error{Code: CodeMethodNotFound,
			Message: "Method not found: tool " + quote(call.Name) + " cannot be called as a task (execution.taskSupport is forbidden)"}, true
	}
	res, err := ss.startTask(ctx, req, call)
	return res, err, true
}

// taskTTL returns the ttl of a new task in milliseconds (nil = unlimited):
// the requested one capped at MaxTTL, or the default.
func (o *TaskOptions) taskTTL(requested *int64) *int64 {
	d := o.TTL
	if requested != nil && *requested > 0 {
		d = time.Duration(*requested) * time.Millisecond
		if o.MaxTTL > 0 && d > o.MaxTTL {
			d = o.MaxTTL
		}
	}
	if d < 0 {
		return nil
	}
	ms := max(d.Milliseconds(), 1)
	return &ms
}

// startTask creates the task of call and returns CreateTaskResult; the
// call starts in the background once the request is answered.
func (ss *Session) startTask(reqCtx context.Context, req *Request, call *ToolCall) (any, error) {
	st := ss.server.tasks
	owner := st.opts.owner(reqCtx)
	ttl := st.opts.taskTTL(call.Task.TTL)
	// The task outlives its request; without an owner it is bound to the
	// session and ends with it.
	ctx, cancel := context.WithCancel(WithToolCall(context.WithoutCancel(reqCtx), call))
	if owner == "" {
		stop := context.AfterFunc(ss.ctx, cancel)
		c := cancel
		cancel = func() { stop(); c() }
	}
	if ttl != nil {
		var cancelDeadline context.CancelFunc
		ctx, cancelDeadline = context.WithTimeout(ctx, time.Duration(*ttl)*time.Millisecond)
		c := cancel
		cancel = func() { cancelDeadline(); c() }
	}
	e := st.create(ss, owner, call, ttl, cancel)
	if e == nil {
		cancel()
		return ToolErrorResult(withIDs(errTooManyTasks(st.opts.MaxTasks), call)), nil
	}
	call.task = e
	call.respond = func(res *CallToolResult, err error) bool { // respondEarly (the response deadline)
		ss.finishTask(e, res, err)
		return true
	}
	call.Logger.Debug("mcp: task created", "tool", call.Name, "taskId", e.id)
	req.f.after = func() { // the task starts once its CreateTaskResult is sent
		if !st.track() { // the server stopped its tasks (Server.StopTasks)
			cancel()
			ss.finishTask(e, nil, &Error{Code: CodeInternalError, Message: "Internal error: the server is stopping its tasks"})
			return
		}
		go func() {
			defer st.running.Done()
			ss.runTask(ctx, cancel, e)
		}()
	}
	return &CreateTaskResult{Task: st.snapshot(e)}, nil
}

// runTask runs the task's call to completion.
func (ss *Session) runTask(ctx context.Context, cancel context.CancelFunc, e *taskEntry) {
	defer cancel()
	call := e.call
	var res *CallToolResult
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				call.Logger.Error("mcp: task panicked", "tool", call.Name, "taskId", e.id, "panic", p)
				res, err = nil, &StructuredError{Code: ErrInternal, Message: "internal error", Details: map[string]any{"reason": "panic"}}
			}
		}()
		res, err = ss.server.opts.Tools.CallTool(ctx, call)
	}()
	if call.responded.CompareAndSwap(false, true) {
		ss.finishTask(e, res, err)
		return
	}
	call.Logger.Debug("mcp: late task result dropped (the task was already over)", "tool", call.Name, "taskId", e.id)
}

// toolOutcome maps the error a task's call returned to what tools/call
// would have answered: a JSON-RPC error (the task fails), or an isError
// result (it completes); msg is the task's status message.
func toolOutcome(call *ToolCall, err error) (res *CallToolResult, rpcErr *Error, msg string) {
	var re *Error
	var se *StructuredError
	switch {
	case errors.As(err, &re):
		c := *re
		if s, ok := re.Data.(*StructuredError); ok {
			c.Data = withIDs(s, call)
		}
		return nil, &c, re.Message
	case errors.As(err, &se):
		return ToolErrorResult(withIDs(se, call)), nil, string(se.Code) + ": " + se.Message
	}
	return ToolErrorResult(withIDs(&StructuredError{Code: ErrInternal, Message: err.Error()}, call)), nil, err.Error()
}

// finishTask records the outcome of the task's call, as tools/call would
// have answered it: completed for a successful result, failed for an
// isError result or a JSON-RPC error.
func (ss *Session) finishTask(e *taskEntry, res *CallToolResult, err error) {
	call := e.call
	call.progress.finish() // no progress after the task is over
	status, msg := TaskStatusCompleted, ""
	var rpcErr *Error
	if err != nil {
		res, rpcErr, msg = toolOutcome(call, err)
	}
	if res == nil && rpcErr == nil {
		res = &CallToolResult{}
	}
	if res != nil {
		if _, merr := json.Marshal(res); merr != nil {
			call.Logger.Error("mcp: task result not serializable", "error", merr)
			res, rpcErr, msg = nil, &Error{Code: CodeInternalError, Message: "Internal error: result not serializable",
				Data: &StructuredError{Code: ErrInternal, Message: "the result could not be encoded as JSON",
					CorrelationID: call.CorrelationID, RunID: call.RunID}}, "result not serializable"
		} else if res.IsError && msg == "" {
			msg = resultErrorText(res)
		}
	}
	if rpcErr != nil || res.IsError {
		status, msg = TaskStatusFailed, "Tool execution failed: "+msg
	}
	if ss.server.tasks.finish(e, status, msg, res, rpcErr) {
		call.Logger.Debug("mcp: task finished", "tool", call.Name, "taskId", e.id, "status", string(status))
		ss.server.tasks.notifyStatus(e)
	}
}

// resultErrorText describes an isError result: its StructuredError's code
// and message, or its first text.
func resultErrorText(res *CallToolResult) string {
	se := resultError(res)
	if se.Code == ErrToolFailed {
		return truncate(se.Message, 200)
	}
	return string(se.Code) + ": " + truncate(se.Message, 200)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// notifyStatus sends notifications/tasks/status with e's current state to
// the session that created it, unless that state was already sent.
func (st *taskStore) notifyStatus(e *taskEntry) {
	e.notifyMu.Lock()
	defer e.notifyMu.Unlock()
	t := st.snapshot(e)
	if t.Status == e.notified.Status && t.StatusMessage == e.notified.StatusMessage && t.LastUpdatedAt == e.notified.LastUpdatedAt {
		return
	}
	e.notified = t
	ctx, cancel := context.WithTimeout(context.Background(), logSendTimeout)
	defer cancel()
	if err := e.ss.conn.notify(ctx, NotificationTasksStatus, &TaskStatusNotificationParams{Task: t}); err != nil && err != ErrClosed {
		e.ss.log.Warn("mcp: sending notifications/tasks/status failed", "taskId", e.id, "error", err)
	}
}

// relatedTaskMeta is the _meta of a message tied to task id.
func relatedTaskMeta(id string) Meta {
	return Meta{MetaRelatedTask: RelatedTaskMetadata{TaskID: id}}
}

// taskRequest prepares a request to the client sent from inside a task
// (its ctx carries the task's ToolCall): the params get the related-task
// _meta, and the task is input_required until done is called. Outside a
// task it returns params unchanged and a no-op done.
func (ss *Session) taskRequest(ctx context.Context, method string, params any) (any, func(), error) {
	call := ToolCallFromContext(ctx)
	if call == nil || call.task == nil {
		return params, func() {}, nil
	}
	e := call.task
	p, err := withRelatedTask(params, e.id)
	if err != nil {
		return nil, nil, err
	}
	if method == MethodPing {
		return p, func() {}, nil
	}
	st := ss.server.tasks
	if st.setWaiting(e, 1) {
		st.notifyStatus(e)
	}
	return p, func() {
		if st.setWaiting(e, -1) {
			st.notifyStatus(e)
		}
	}, nil
}

// withRelatedTask returns params (a JSON object, or nil) encoded with
// _meta[MetaRelatedTask] set to {taskId: id}; other members are kept.
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
	rel, err := json.Marshal(RelatedTaskMetadata{TaskID: id})
	if err != nil {
		return nil, err
	}
	meta[MetaRelatedTask] = rel
	mb, err := json.Marshal(meta, json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	obj["_meta"] = mb
	return json.Marshal(obj, json.Deterministic(true))
}

// taskParams decodes the params of tasks/get, tasks/result and
// tasks/cancel (which share their shape).
func taskParams(req *Request) (string, *Error) {
	var p GetTaskParams
	if req.Params == nil {
		return "", &Error{Code: CodeInvalidParams, Message: "Invalid params: taskId is required"}
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return "", invalidParams(err)
	}
	if p.TaskID == "" {
		return "", &Error{Code: CodeInvalidParams, Message: "Invalid params: taskId is required"}
	}
	return p.TaskID, nil
}

// owner returns the owner key of the authorization context of a request
// ("" = none: the session): Owner's answer, or the subject of the
// request's verified bearer token (TokenInfoFromContext).
func (o *TaskOptions) owner(ctx context.Context) string {
	sub := ""
	if o.Owner != nil {
		sub = o.Owner(ctx)
	} else if ti := TokenInfoFromContext(ctx); ti != nil {
		sub = ti.Subject
	}
	if sub == "" {
		return ""
	}
	return "auth:" + sub
}

// taskOwner returns the owner key of the request ctx belongs to.
func (ss *Session) taskOwner(ctx context.Context) string {
	st := ss.server.tasks
	return st.ownerOf(ss, st.opts.owner(ctx))
}

// lookupTask finds the task a tasks/* request names: -32602 when there is
// none for this requestor.
func lookupTask(ctx context.Context, req *Request) (*taskEntry, *Error) {
	id, perr := taskParams(req)
	if perr != nil {
		return nil, perr
	}
	ss := req.Session
	e := ss.server.tasks.get(ss.taskOwner(ctx), id)
	if e == nil {
		return nil, errTaskNotFound(id)
	}
	return e, nil
}

func handleTasksGet(ctx context.Context, req *Request) (any, error) {
	e, perr := lookupTask(ctx, req)
	if perr != nil {
		return nil, perr
	}
	return &GetTaskResult{Task: req.Session.server.tasks.snapshot(e)}, nil
}

func handleTasksResult(ctx context.Context, req *Request) (any, error) {
	e, perr := lookupTask(ctx, req)
	if perr != nil {
		return nil, perr
	}
	select {
	case <-e.done:
	case <-ctx.Done():
		return nil, ctx.Err() // not answered: the request was cancelled
	}
	res, rpcErr := req.Session.server.tasks.outcome(e)
	if rpcErr != nil {
		return nil, rpcErr
	}
	c := *res
	c.Meta = make(Meta, len(res.Meta)+1)
	for k, v := range res.Meta {
		c.Meta[k] = v
	}
	c.Meta[MetaRelatedTask] = RelatedTaskMetadata{TaskID: e.id}
	return &c, nil
}

func handleTasksCancel(ctx context.Context, req *Request) (any, error) {
	e, perr := lookupTask(ctx, req)
	if perr != nil {
		return nil, perr
	}
	st := req.Session.server.tasks
	call := e.call
	res := ToolErrorResult(&StructuredError{Code: ErrInternal, Message: "the task was cancelled",
		Details: map[string]any{"reason": "cancelled", "taskId": e.id}, CorrelationID: call.CorrelationID, RunID: call.RunID})
	if !st.finish(e, TaskStatusCancelled, "The task was cancelled by request.", res, nil) {
		return nil, &Error{Code: CodeInvalidParams,
			Message: "Cannot cancel task: already in terminal status '" + string(st.snapshot(e).Status) + "'",
			Data:    map[string]any{"taskId": e.id}}
	}
	call.responded.Store(true) // a late result is dropped
	call.progress.finish()
	st.cancelRun(e)
	call.Logger.Debug("mcp: task cancelled by the client", "tool", call.Name, "taskId", e.id)
	req.f.after = func() { st.notifyStatus(e) } // after the answer
	return &CancelTaskResult{Task: st.snapshot(e)}, nil
}

func handleTasksList(ctx context.Context, req *Request) (any, error) {
	p, perr := decodePaginated(req)
	if perr != nil {
		return nil, perr
	}
	ss := req.Session
	st := ss.server.tasks
	page, next, perr := paginate(st.list(ss.taskOwner(ctx)), func(e *taskEntry) string { return e.key }, p.Cursor, ss.server.opts.PageSize)
	if perr != nil {
		return nil, perr
	}
	return &ListTasksResult{Tasks: st.states(page), NextCursor: next}, nil
}
