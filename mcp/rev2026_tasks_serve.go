package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// modernRun is one 2026-07-28 tools/call that may become a task (see
// rev2026_tasks.go). Each run of its handler (the first, then one per input
// round) is a taskRun on the task runner (task_runner.go), under ctx: a
// context with the request's values that outlives the request. Until the
// call becomes a task, the request waits for the handler, and its end
// (cancellation, disconnection) cancels ctx.
//
// Lock order: mu before the store's mu.
type modernRun struct {
	ss     *Session
	st     *taskHost
	call   *ToolCall
	owner  string
	quota  string             // what its tasks count against (taskHost.quotaOf)
	caps   ClientCapabilities // what the request declared: input requests must fit
	round0 int                // the input round the call started at
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	cur       *taskRun      // the handler's current run
	entry     *taskEntry    // set once the call is a task
	created   Task          // its state when it became one
	settled   answerGate    // closed when the request is answered directly (or went away)
	out       runOutcome    // the direct answer (set by whoever closed settled)
	answered  chan struct{} // closed when out is set
	escalated chan struct{} // closed when entry is set
}

type runOutcome struct {
	res *CallToolResult
	err error
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
func (st *taskHost) modernOwner(ctx context.Context) string {
	return "modern:" + st.quotaOf(ctx)
}

// modernTaskGate applies the tasks extension to a 2026-07-28 tools/call,
// before its input rounds (so before its requestState is checked): a tool
// that runs as a task only is refused (-32021) without the extension; a
// tool that may run as one, called with it, is put on the task path
// (call.Task set: modernTaskCall runs it); any other call is plain.
func (st *taskHost) modernTaskGate(ss *Session, ctx context.Context, req *Request, call *ToolCall) *Error {
	def, ok := st.findTool(ss, ctx, call.Name)
	if !ok {
		return nil // the source answers for unknown tools
	}
	support := TaskForbidden
	if def.Execution != nil && def.Execution.TaskSupport != "" {
		support = def.Execution.TaskSupport
	}
	ext := declaresTasks(req.r.modern().meta.ClientCapabilities)
	switch {
	case support == TaskRequired && !ext:
		return errTasksExtensionRequired("tool " + quote(call.Name) + " runs as a task only; it")
	case support == TaskForbidden || !ext:
		return nil
	}
	call.Task = &TaskMetadata{} // it may become a task: no response deadline
	return nil
}

// modernTaskCall runs a 2026-07-28 tools/call that modernTaskGate put on
// the task path, in its input round: its Input (InputFromContext) is the
// one its round checked. res, err is its outcome (a result, or the task
// it became).
func (st *taskHost) modernTaskCall(ss *Session, ctx context.Context, req *Request, call *ToolCall) (res any, err error) {
	in := InputFromContext(ctx)
	run := &modernRun{ss: ss, st: st, call: call, owner: st.modernOwner(ctx), quota: st.quotaOf(ctx), caps: req.r.modern().meta.ClientCapabilities,
		answered: make(chan struct{}), escalated: make(chan struct{})}
	if in != nil {
		run.round0 = in.Round
	}
	run.ctx, run.cancel = context.WithCancel(context.WithoutCancel(WithToolCall(ctx, call)))
	call.run = run
	return run.serve(ctx, in)
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
			return &TaskCreatedResult{ResultType: resultTypeTask, TaskInfo: taskInfo(&run.created)}, nil
		case <-expired:
			expired = nil
			run.escalate() // if it cannot (MaxTasks), the request waits
		case <-ctx.Done():
			run.mu.Lock()
			if run.entry == nil && run.settled.close() {
				run.cancel() // the request went away: so does the call
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
	case run.settled.closed.Load():
		return false
	}
	st := run.st
	e, rec, err := st.create(run.ctx, run.owner, run.quota, Version20260728, run.call, st.opts.taskTTL(nil),
		&TaskInput{Round: run.round0}, run, run.cancel)
	switch {
	case errors.Is(err, ErrTaskLimit):
		run.call.Logger.Debug("mcp: no task: the call is answered directly", "tool", run.call.Name, "reason", st.limitError(err).Message)
		return false
	case err != nil:
		run.call.Logger.Error("mcp: the task store failed: the call is answered directly", "tool", run.call.Name, "error", err)
		return false
	}
	run.created = rec.State
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

// outcome takes what the handler chain returned (TIMEOUT at a deadline): the
// request's answer while the call is not a task, else the task's.
func (run *modernRun) outcome(res *CallToolResult, err error) {
	run.mu.Lock()
	if run.entry == nil {
		if run.settled.close() {
			run.out = runOutcome{res, err}
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
// an *InputRequiredError, else as the outcome mapper (taskHost.settle)
// says.
func (run *modernRun) settleTask(e *taskEntry, res *CallToolResult, err error) {
	var ir *InputRequiredError
	if errors.As(err, &ir) {
		rec, perr := run.park(e, ir)
		if perr == nil {
			if rec != nil {
				run.st.changed(rec.State)
			}
			return
		}
		res, err = nil, perr
	}
	run.st.settle(e, res, err)
}

// park puts the task in input_required with the requests of ir under
// minted keys, and returns its record (nil when it was terminal
// meanwhile); an error is what the task fails with instead.
func (run *modernRun) park(e *taskEntry, ir *InputRequiredError) (*TaskRecord, *Error) {
	if len(ir.Requests) == 0 {
		return nil, &Error{Code: CodeInternalError, Message: "Internal error: the task asked for input without requests"}
	}
	var need ClientCapabilities
	for k, req := range ir.Requests {
		switch req.Method {
		case methodElicitationCreate, methodSamplingCreateMessage, methodRootsList:
		default:
			return nil, &Error{Code: CodeInternalError, Message: "Internal error: input request " + quote(k) + " has method " + quote(req.Method)}
		}
		mergeCaps(&need, requiredFor(req))
	}
	if miss, ok := missingFor(need, run.caps); ok {
		return nil, MissingCapabilityError(miss, "Missing required client capability: the task needs input the client did not declare it can give")
	}
	st := run.st
	max := run.ss.server.opts.MaxInputRounds
	rec, ok, err := updateTask(context.Background(), st.store, st.lim, e.owner, e.id, func(r *TaskRecord) (bool, error) {
		in := r.Input
		if in == nil {
			in = &TaskInput{}
			r.Input = in
		}
		if in.Round+1 >= max {
			return false, &Error{Code: CodeInternalError, Message: fmt.Sprintf("Internal error: the task asked for input more than MaxInputRounds (%d) times", max)}
		}
		if r.Terminal() {
			return false, nil // cancelled meanwhile: nothing to ask
		}
		in.Pending = make(map[string]TaskInputRequest, len(ir.Requests))
		for _, k := range sortedKeys(ir.Requests) {
			req := ir.Requests[k]
			if req.Params == nil {
				req.Params = struct{}{}
			}
			in.Minted++
			in.Pending["input-"+strconv.Itoa(in.Minted)] = TaskInputRequest{Key: k, Request: req}
		}
		in.Answers, in.State = map[string]json.RawMessage{}, ir.State
		r.State.Status, r.State.StatusMessage, r.State.LastUpdatedAt = TaskStatusInputRequired, "Waiting for input from the client", formatTime(st.now())
		return true, nil
	})
	var rpcErr *Error
	switch {
	case errors.As(err, &rpcErr):
		return nil, rpcErr
	case errors.Is(err, ErrTaskNotFound):
		return nil, nil // deleted meanwhile
	case err != nil:
		run.call.Logger.Error("mcp: the task store failed", "taskId", e.id, "error", err)
		return nil, errTaskStore()
	case !ok:
		return nil, nil
	}
	return rec, nil
}

func taskInfo(t *Task) TaskInfo {
	return TaskInfo{TaskID: t.TaskID, Status: t.Status, StatusMessage: t.StatusMessage, CreatedAt: t.CreatedAt,
		LastUpdatedAt: t.LastUpdatedAt, TTLMs: t.TTL, PollIntervalMs: t.PollInterval}
}

// detail returns the DetailedTask of rec.
func detail(rec *TaskRecord) *DetailedTask {
	d := &DetailedTask{ResultType: resultTypeComplete, TaskInfo: taskInfo(&rec.State)}
	switch rec.State.Status {
	case TaskStatusInputRequired:
		if rec.Input != nil {
			d.InputRequests = make(map[string]InputRequest, len(rec.Input.Pending))
			for k, p := range rec.Input.Pending {
				d.InputRequests[k] = p.Request
			}
		}
	case TaskStatusCompleted:
		d.Result = rec.Result
	case TaskStatusFailed:
		if rec.Error != nil {
			d.Error = &TaskError{Code: rec.Error.Code, Message: rec.Error.Message, Data: rec.Error.Data}
		}
	}
	return d
}

// findModernTask finds the record of the task a modern tasks/* request
// names: -32021 without the extension, -32602 for an unknown task (or
// another caller's).
func findModernTask(ctx context.Context, req *Request) (*TaskRecord, *Error) {
	id, perr := modernTaskID(req)
	if perr != nil {
		return nil, perr
	}
	st := req.Session.server.tasks
	rec, err := st.store.Get(ctx, st.modernOwner(ctx), id)
	if err != nil {
		return nil, st.storeError(req, id, err)
	}
	if rec.Revision != Version20260728 {
		return nil, taskNotFoundError(id)
	}
	return rec, nil
}

// modernTaskID returns the task id of a modern tasks/* request: -32021
// without the extension.
func modernTaskID(req *Request) (string, *Error) {
	if !declaresTasks(req.r.modern().meta.ClientCapabilities) {
		return "", errTasksExtensionRequired(req.Method)
	}
	return taskParams(req)
}

func handleModernTasksGet(ctx context.Context, req *Request) (any, error) {
	rec, perr := findModernTask(ctx, req)
	if perr != nil {
		return nil, perr
	}
	return detail(rec), nil
}

// handleModernTasksCancel settles the task as cancelled and cancels its
// handler's context; a terminal task stays as it is. Both get the empty ack.
func handleModernTasksCancel(ctx context.Context, req *Request) (any, error) {
	id, perr := modernTaskID(req)
	if perr != nil {
		return nil, perr
	}
	st := req.Session.server.tasks
	rec, ok, err := st.cancel(ctx, st.modernOwner(ctx), id)
	if err != nil {
		return nil, st.storeError(req, id, err)
	}
	if ok {
		st.changed(rec.State)
	}
	return emptyResult{}, nil
}

// handleModernTasksUpdate delivers answers to an input_required task.
// Each answer must have the shape of its request's result (-32602);
// unknown keys are ignored. Once every pending request is answered, the
// task is working again and its handler runs with the answers, in the
// process that runs the task.
func handleModernTasksUpdate(ctx context.Context, req *Request) (any, error) {
	rec, perr := findModernTask(ctx, req)
	if perr != nil {
		return nil, perr
	}
	var p updateTaskParams
	if err := jsonv2.Unmarshal(req.Params, &p); err != nil {
		return nil, invalidParams(err)
	}
	st := req.Session.server.tasks
	e := st.liveOf(rec.ID)
	var in *Input
	rec, ok, err := updateTask(ctx, st.store, st.lim, rec.Owner, rec.ID, func(r *TaskRecord) (bool, error) {
		in = nil
		mt := r.Input
		if r.State.Status != TaskStatusInputRequired || mt == nil || (e == nil && !st.sharedStore()) || (e != nil && e.run == nil) {
			return false, nil // nothing asked (any more): an update is moot
		}
		for k, raw := range p.InputResponses {
			if pi, ok := mt.Pending[k]; ok && (jsontext.Value(raw).Kind() != '{' || !inputResultValid(pi.Request.Method, jsontext.Value(raw))) {
				return false, &Error{Code: CodeInvalidParams, Message: "Invalid params: inputResponses[" + quote(k) + "] is not a result of " + pi.Request.Method}
			}
		}
		if mt.Answers == nil {
			mt.Answers = map[string]json.RawMessage{}
		}
		for k, raw := range p.InputResponses {
			if pi, ok := mt.Pending[k]; ok {
				mt.Answers[pi.Key] = raw
				delete(mt.Pending, k)
			}
		}
		if len(mt.Pending) == 0 {
			mt.Round++
			in = &Input{Responses: mt.Answers, State: mt.State, Round: mt.Round}
			mt.Answers, mt.State = nil, nil
			if e == nil { // another process runs it: the record hands the answers over (task_store_watch.go)
				handOver(mt, in.Responses, in.State)
			}
			r.State.Status, r.State.StatusMessage, r.State.LastUpdatedAt = TaskStatusWorking, "", formatTime(st.now())
		}
		return true, nil
	})
	var rpcErr *Error
	switch {
	case errors.As(err, &rpcErr):
		return nil, rpcErr
	case err != nil:
		return nil, st.storeError(req, p.TaskID, err)
	}
	if ok && in != nil {
		req.AfterAnswer(func() { // after the acknowledgement
			st.changed(rec.State)
			if e != nil {
				e.run.start(in)
			}
		})
	}
	return emptyResult{}, nil
}
