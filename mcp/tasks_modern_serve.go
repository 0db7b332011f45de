package mcp

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// modernRun is one 2026-07-28 tools/call that may become a task (see
// tasks_modern.go). Each run of its handler (the first, then one per input
// round) is a taskRun on the task runner (task_runner.go), under ctx: a
// context with the request's values that outlives the request. Until the
// call becomes a task, the request waits for the handler, and its end
// (cancellation, disconnection) cancels ctx.
//
// Lock order: mu before the store's mu.
type modernRun struct {
	ss     *Session
	st     *taskStore
	call   *ToolCall
	owner  string
	quota  string             // what its tasks count against (taskStore.quotaOf)
	caps   ClientCapabilities // what the request declared: input requests must fit
	round0 int                // the input round the call started at
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	cur       *taskRun      // the handler's current run (the response deadline answers through its gate)
	entry     *taskEntry    // set once the call is a task
	settled   bool          // the request is answered directly (or went away)
	out       runOutcome    // the direct answer (settled)
	answered  chan struct{} // closed when out is set
	escalated chan struct{} // closed when entry is set
}

type runOutcome struct {
	res *CallToolResult
	err error
}

// modernTask is the part of a task entry only 2026-07-28 tasks have; its
// fields are guarded by the store's mu.
type modernTask struct {
	run     *modernRun
	pending map[string]pendingInput   // minted key → what the handler asked
	answers map[string]jsontext.Value // handler key → answer (this round)
	state   []byte                    // the handler's State of this round
	round   int
	seq     int // minted keys so far
}

type pendingInput struct {
	key string // the handler's key
	req InputRequest
}

// isTask reports whether the call was answered with a task (false for nil).
func (run *modernRun) isTask() bool {
	if run == nil {
		return false
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	return run.entry != nil
}

// modernOwner returns the owner key of a modern request's tasks: its
// authorization context (TaskOptions.Owner, or its bearer token's subject
// or client id), else its peer (PeerFromContext): an anonymous caller
// sees the tasks of its own peer only. Legacy owners never collide.
func (st *taskStore) modernOwner(ctx context.Context) string {
	return "modern:" + st.quotaOf(ctx)
}

// modernTaskCall applies the tasks extension to a 2026-07-28 tools/call.
// handled false means "serve it as a plain call"; otherwise the call was
// refused (-32021, a bad requestState) or it ran, and res, err is its
// outcome (a result, or the task it became).
func (st *taskStore) modernTaskCall(ss *Session, ctx context.Context, req *Request, call *ToolCall, p *CallToolParams) (res any, err error, handled bool) {
	r := &req.r
	def, ok := ss.server.tasks.findTool(ss, ctx, call.Name)
	if !ok {
		return nil, nil, false // the source answers for unknown tools
	}
	support := TaskForbidden
	if def.Execution != nil && def.Execution.TaskSupport != "" {
		support = def.Execution.TaskSupport
	}
	ext := declaresTasks(r.mod.meta.ClientCapabilities)
	switch {
	case support == TaskRequired && !ext:
		return nil, errTasksExtensionRequired("tool " + quote(call.Name) + " runs as a task only; it"), true
	case support == TaskForbidden || !ext:
		return nil, nil, false
	}
	in, e := r.inputFor(ctx, MethodToolsCall, p.Name, p.Arguments, p.InputResponses, p.RequestState) // input_serve.go
	if e != nil {
		return nil, e, true
	}
	call.Task = &TaskMetadata{} // it may become a task: no response deadline
	run := &modernRun{ss: ss, st: st, call: call, owner: st.modernOwner(ctx), quota: st.quotaOf(ctx), caps: r.mod.meta.ClientCapabilities,
		answered: make(chan struct{}), escalated: make(chan struct{})}
	if in != nil {
		run.round0 = in.Round
	}
	run.ctx, run.cancel = context.WithCancel(context.WithoutCancel(WithToolCall(ctx, call)))
	call.run = run
	// The response deadline settles the current run through its gate
	// (run.outcome), which serve then answers.
	call.respond = func(res *CallToolResult, err error) bool { // respondEarly (the response deadline)
		run.mu.Lock()
		cur := run.cur
		run.mu.Unlock()
		return cur != nil && cur.deliver(res, err)
	}
	res, err = run.serve(ctx, in)
	return res, err, true
}

// serve runs the call for its request (ctx): it answers with the
// handler's outcome when that comes first, else with the task.
func (run *modernRun) serve(ctx context.Context, in *Input) (any, error) {
	wait := run.st.opts.ImmediateWait
	if wait < 0 {
		run.escalate()
	}
	run.start(in)
	var expired <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		expired = t.C
	}
	for {
		select {
		case <-run.answered:
			if run.out.res == nil {
				return nil, run.out.err // not a typed nil in an interface
			}
			return run.out.res, run.out.err
		case <-run.escalated:
			return &TaskCreatedResult{ResultType: ResultTypeTask, TaskInfo: run.st.info(run.entry)}, nil
		case <-expired:
			expired = nil
			run.escalate() // if it cannot (MaxTasks), the request waits
		case <-ctx.Done():
			run.mu.Lock()
			if run.entry == nil && !run.settled {
				run.settled = true // the request went away: so does the call
				run.cancel()
			}
			run.mu.Unlock()
			return nil, ctx.Err()
		}
	}
}

// escalate makes the call a task unless it was answered already; it
// reports whether the call is a task.
func (run *modernRun) escalate() bool {
	run.mu.Lock()
	defer run.mu.Unlock()
	switch {
	case run.entry != nil:
		return true
	case run.settled:
		return false
	}
	st := run.st
	ttl := st.opts.taskTTL(nil)
	stopTimer := func() bool { return false }
	if ttl != nil {
		stopTimer = time.AfterFunc(time.Duration(*ttl)*time.Millisecond, run.cancel).Stop
	}
	e, refused := st.create(nil, run.owner, run.quota, run.call, ttl, func() { stopTimer(); run.cancel() })
	if e == nil {
		stopTimer()
		run.call.Logger.Debug("mcp: no task: the call is answered directly", "tool", run.call.Name, "reason", refused.Message)
		return false
	}
	st.mu.Lock()
	e.mod = &modernTask{run: run, round: run.round0}
	st.mu.Unlock()
	run.entry = e
	run.call.progress.finish() // the request is answered: no progress follows
	close(run.escalated)
	run.call.Logger.Debug("mcp: task created", "tool", run.call.Name, "taskId", e.id)
	return true
}

// start runs the handler with in on the task runner; its outcome goes to
// run.outcome. When the runner cannot start it (the pool is full, the
// server stops its tasks), the call is answered with that (an isError
// result before it is a task), or the task fails with it.
func (run *modernRun) start(in *Input) {
	r := &taskRun{call: run.call, quota: run.quota, ctx: run.ctx, in: in, settle: run.outcome}
	run.mu.Lock()
	run.cur = r
	run.mu.Unlock()
	err := run.st.runner.start(r)
	var se *StructuredError
	switch {
	case err == nil:
	case errors.As(err, &se) && !run.isTask():
		run.outcome(ToolErrorResult(withIDs(se, run.call)), nil)
	case errors.As(err, &se):
		run.outcome(nil, &Error{Code: CodeInternalError, Message: "Internal error: " + se.Message, Data: withIDs(se, run.call)})
	default:
		run.outcome(nil, err)
	}
}

// outcome takes what the handler returned (or the response deadline sent): the
// request's answer while the call is not a task, else the task's.
func (run *modernRun) outcome(res *CallToolResult, err error) {
	run.mu.Lock()
	if run.entry == nil {
		if !run.settled {
			run.settled, run.out = true, runOutcome{res, err}
			close(run.answered)
		}
		run.mu.Unlock()
		return
	}
	e := run.entry
	run.mu.Unlock()
	run.settleTask(e, res, err)
}

// settleTask records a handler's outcome in its task: input_required for
// an *InputRequiredError, failed for a JSON-RPC error, else completed (an
// isError result included).
func (run *modernRun) settleTask(e *taskEntry, res *CallToolResult, err error) {
	call, st := run.call, run.st
	var ir *InputRequiredError
	if errors.As(err, &ir) {
		perr := run.park(e, ir)
		if perr == nil {
			st.changed(e)
			return
		}
		res, err = nil, perr
	}
	status, msg := TaskStatusCompleted, ""
	var rpcErr *Error
	if err != nil {
		res, rpcErr, msg = toolOutcome(run.ss.server, call, err)
	}
	if res == nil && rpcErr == nil {
		res = &CallToolResult{}
	}
	if res != nil {
		res = downgradeResult(res, Version20260728)
	}
	size, over, merr := st.opts.measureOutcome(call, res, rpcErr)
	switch {
	case merr != nil:
		call.Logger.Error("mcp: task result not serializable", "error", merr)
		res, rpcErr, msg = nil, &Error{Code: CodeInternalError, Message: "Internal error: result not serializable"}, "result not serializable"
	case over != nil:
		call.Logger.Warn("mcp: task result over the limit: the task fails", "tool", call.Name, "taskId", e.id, "error", over.Message)
		res, rpcErr, msg = nil, over, ""
	case res != nil && res.IsError:
		msg = resultErrorText(res)
	}
	if rpcErr != nil {
		status = TaskStatusFailed
	}
	if st.finish(e, status, msg, res, rpcErr, size) {
		call.Logger.Debug("mcp: task finished", "tool", call.Name, "taskId", e.id, "status", string(status))
		st.changed(e)
	}
	e.cancel() // the handler returned: release its context and ttl timer
}

// park puts the task in input_required with the requests of ir under
// minted keys; an error is what the task fails with instead.
func (run *modernRun) park(e *taskEntry, ir *InputRequiredError) *Error {
	if len(ir.Requests) == 0 {
		return &Error{Code: CodeInternalError, Message: "Internal error: the task asked for input without requests"}
	}
	var need ClientCapabilities
	for k, req := range ir.Requests {
		switch req.Method {
		case MethodElicitationCreate, MethodSamplingCreateMessage, MethodRootsList:
		default:
			return &Error{Code: CodeInternalError, Message: "Internal error: input request " + quote(k) + " has method " + quote(req.Method)}
		}
		mergeCaps(&need, requiredFor(req))
	}
	if miss, ok := missingFor(need, run.caps); ok {
		return MissingCapabilityError(miss, "Missing required client capability: the task needs input the client did not declare it can give")
	}
	st := run.st
	now := st.now()
	st.mu.Lock()
	defer st.mu.Unlock()
	mt := e.mod
	if max := run.ss.server.opts.MaxInputRounds; mt.round+1 >= max {
		return &Error{Code: CodeInternalError, Message: fmt.Sprintf("Internal error: the task asked for input more than MaxInputRounds (%d) times", max)}
	}
	if e.task.Status.Terminal() {
		return nil // cancelled meanwhile: nothing to ask
	}
	mt.pending = make(map[string]pendingInput, len(ir.Requests))
	for _, k := range sortedKeys(ir.Requests) {
		req := ir.Requests[k]
		if req.Params == nil {
			req.Params = struct{}{}
		}
		mt.seq++
		mt.pending["input-"+strconv.Itoa(mt.seq)] = pendingInput{key: k, req: req}
	}
	mt.answers, mt.state = map[string]jsontext.Value{}, ir.State
	e.task.Status, e.task.StatusMessage, e.task.LastUpdatedAt = TaskStatusInputRequired, "Waiting for input from the client", formatTime(now)
	return nil
}

// info returns e's state in the form of revision 2026-07-28.
func (st *taskStore) info(e *taskEntry) TaskInfo {
	st.mu.Lock()
	defer st.mu.Unlock()
	return taskInfo(&e.task)
}

func taskInfo(t *Task) TaskInfo {
	return TaskInfo{TaskID: t.TaskID, Status: t.Status, StatusMessage: t.StatusMessage, CreatedAt: t.CreatedAt,
		LastUpdatedAt: t.LastUpdatedAt, TTLMs: t.TTL, PollIntervalMs: t.PollInterval}
}

// detail returns the DetailedTask of e.
func (st *taskStore) detail(e *taskEntry) *DetailedTask {
	st.mu.Lock()
	defer st.mu.Unlock()
	d := &DetailedTask{ResultType: ResultTypeComplete, TaskInfo: taskInfo(&e.task)}
	switch e.task.Status {
	case TaskStatusInputRequired:
		d.InputRequests = make(map[string]InputRequest, len(e.mod.pending))
		for k, p := range e.mod.pending {
			d.InputRequests[k] = p.req
		}
	case TaskStatusCompleted:
		d.Result = e.result
	case TaskStatusFailed:
		if e.rpcErr != nil {
			d.Error = &TaskError{Code: e.rpcErr.Code, Message: e.rpcErr.Message, Data: e.rpcErr.Data}
		}
	}
	return d
}

// findModernTask finds the task a modern tasks/* request names: -32021
// without the extension, -32602 for an unknown task (or another caller's).
func findModernTask(ctx context.Context, req *Request) (*taskEntry, *Error) {
	if !declaresTasks(req.r.mod.meta.ClientCapabilities) {
		return nil, errTasksExtensionRequired(req.Method)
	}
	id, perr := taskParams(req)
	if perr != nil {
		return nil, perr
	}
	st := req.Session.server.tasks
	e := st.get(st.modernOwner(ctx), id)
	if e == nil || e.mod == nil {
		return nil, errTaskNotFound(id)
	}
	return e, nil
}

func handleModernTasksGet(ctx context.Context, req *Request) (any, error) {
	e, perr := findModernTask(ctx, req)
	if perr != nil {
		return nil, perr
	}
	return req.Session.server.tasks.detail(e), nil
}

// handleModernTasksCancel settles the task as cancelled and cancels its
// handler's context; a terminal task stays as it is. Both get the empty ack.
func handleModernTasksCancel(ctx context.Context, req *Request) (any, error) {
	e, perr := findModernTask(ctx, req)
	if perr != nil {
		return nil, perr
	}
	st := req.Session.server.tasks
	if st.finish(e, TaskStatusCancelled, "The task was cancelled by request.", nil, nil, 0) {
		st.changed(e)
		e.call.progress.finish()
		e.cancel()
		e.call.Logger.Debug("mcp: task cancelled by the client", "tool", e.call.Name, "taskId", e.id)
	}
	return EmptyResult{}, nil
}

// handleModernTasksUpdate delivers answers to an input_required task.
// Each answer must have the shape of its request's result (-32602);
// unknown keys are ignored. Once every pending request is answered, the
// task is working again and its handler runs with the answers.
func handleModernTasksUpdate(ctx context.Context, req *Request) (any, error) {
	e, perr := findModernTask(ctx, req)
	if perr != nil {
		return nil, perr
	}
	var p UpdateTaskParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, invalidParams(err)
	}
	st := req.Session.server.tasks
	now := st.now()
	st.mu.Lock()
	mt := e.mod
	if e.task.Status != TaskStatusInputRequired {
		st.mu.Unlock()
		return EmptyResult{}, nil // nothing asked (any more): an update is moot
	}
	for k, raw := range p.InputResponses {
		if pi, ok := mt.pending[k]; ok && (raw.Kind() != '{' || !inputResultValid(pi.req.Method, raw)) {
			st.mu.Unlock()
			return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: inputResponses[" + quote(k) + "] is not a result of " + pi.req.Method}
		}
	}
	for k, raw := range p.InputResponses {
		if pi, ok := mt.pending[k]; ok {
			mt.answers[pi.key] = raw
			delete(mt.pending, k)
		}
	}
	var in *Input
	if len(mt.pending) == 0 {
		mt.round++
		in = &Input{Responses: mt.answers, State: mt.state, Round: mt.round}
		mt.answers, mt.state = nil, nil
		e.task.Status, e.task.StatusMessage, e.task.LastUpdatedAt = TaskStatusWorking, "", formatTime(now)
	}
	st.mu.Unlock()
	if in != nil {
		req.f.after = func(any) { // after the acknowledgement
			st.changed(e)
			mt.run.start(in)
		}
	}
	return EmptyResult{}, nil
}
