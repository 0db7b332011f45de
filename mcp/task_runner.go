package mcp

import (
	"context"
	"errors"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json"
)

// The task runner: the one place where the handlers of tasks run, for
// both revisions (2025-11-25 tasks, task_server.go; the 2026-07-28 tasks
// extension, rev2026_tasks_serve.go). Each run of a handler is a taskRun:
//
//   - it runs on one goroutine the runner owns and counts (StopTasks waits
//     for it), with one recover: a panic becomes an INTERNAL tool error;
//   - it holds a slot of the task pool from start to the handler's return:
//     at most MaxRunning handlers run at once, MaxRunningPerOwner per
//     quota key (the authorization context, else the peer)
//     (a handler that ignores its cancelled context still holds its slot);
//   - its context is cancelled after MaxRunTime, and the run then ends with
//     an error naming that limit, at once, even if the handler goes on;
//   - its outcome passes one answer-once gate (deliver): the first of the
//     handler's return (a response deadline inside returns at the
//     deadline: see ToolCall.Detach) and the max run time wins, whatever
//     comes later is logged and dropped;
//   - its slot is released once the handler has really returned
//     (ToolCall.AfterHandler): before its outcome is settled when the
//     handler returned with it, so that a client told of the outcome can
//     start its next task at once.
//
// What an outcome means is the revision's business, in its settle hook:
// a 2025-11-25 task is settled (taskHost.settle, under its revision's
// taskRules), a 2026-07-28 call answers its request or settles its task,
// and may park it in input_required (modernRun.outcome).

// taskRun is one run of a task's handler.
type taskRun struct {
	call  *ToolCall
	quota string          // the key the pool counts the run against (taskHost.quotaOf)
	ctx   context.Context // the task's context: it outlives the request
	in    *Input          // the answers of an input round (2026-07-28), or nil
	// settle receives the run's outcome, exactly once (the era hook).
	settle func(res *CallToolResult, err error)
	// exit, if set, runs once the handler has returned (after settle).
	exit func()

	reserved bool               // a pool slot was taken for it (reserve) before start
	cancel   context.CancelFunc // cancels the handler's context (set by start)
	answered answerGate         // the answer-once gate
}

// deliver passes res, err to the settle hook unless the run already has
// its outcome; it reports whether it did.
func (r *taskRun) deliver(res *CallToolResult, err error) bool {
	if !r.answered.close() {
		return false
	}
	r.settle(res, err)
	return true
}

// taskRunner runs task handlers within the task pool.
type taskRunner struct {
	opts  *TaskOptions
	tools ToolSource

	mu      sync.Mutex
	total   int            // runs holding a slot (reserved or running)
	byOwner map[string]int // the same per quota key (only keys holding one)
	live    map[*taskRun]struct{}
	stopped bool
	wg      sync.WaitGroup // one count per goroutine running a handler
}

func newTaskRunner(o *TaskOptions, tools ToolSource) *taskRunner {
	return &taskRunner{opts: o, tools: tools, byOwner: map[string]int{}, live: map[*taskRun]struct{}{}}
}

// errMaxRunTime is the cause of a run's context cancelled by MaxRunTime.
var errMaxRunTime = errors.New("mcp: the task ran longer than TaskOptions.MaxRunTime")

// errTasksStopping is what a run gets when the server stopped its tasks.
func errTasksStopping() *Error {
	return &Error{Code: CodeInternalError, Message: "Internal error: the server is stopping its tasks"}
}

// reserve takes a slot of the task pool for the quota key owner; the error names the
// limit that refused it.
func (tr *taskRunner) reserve(owner string) *StructuredError {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.reserveLocked(owner)
}

func (tr *taskRunner) reserveLocked(owner string) *StructuredError {
	o := tr.opts
	if n := o.MaxRunningPerOwner; n > 0 && tr.byOwner[owner] >= n {
		return errTaskPool("maxRunningPerOwner", n, "too many tasks running for this caller")
	}
	if n := o.MaxRunning; n > 0 && tr.total >= n {
		return errTaskPool("maxRunning", n, "too many tasks running on this server")
	}
	tr.total++
	tr.byOwner[owner]++
	return nil
}

// release gives back a slot taken by reserve.
func (tr *taskRunner) release(owner string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.releaseLocked(owner)
}

func (tr *taskRunner) releaseLocked(owner string) {
	tr.total--
	if n := tr.byOwner[owner] - 1; n > 0 {
		tr.byOwner[owner] = n
	} else {
		delete(tr.byOwner, owner)
	}
}

// errTaskPool is the RESOURCE_EXHAUSTED error of a full task pool.
func errTaskPool(limit string, n int, what string) *StructuredError {
	return &StructuredError{Code: ErrResourceExhausted, Retryable: true,
		Message: what + " (TaskOptions." + upperFirst(limit) + " is " + strconv.Itoa(n) + "); wait for some to finish or cancel them",
		Details: map[string]any{"limit": limit, limit: n}}
}

func upperFirst(s string) string { return string(s[0]-'a'+'A') + s[1:] }

// start runs r's handler on a goroutine of the runner, within a slot of
// the pool (r's reserved one, or a new one). It returns without starting
// it when the server stops its tasks (*Error) or the pool is full
// (*StructuredError); r's settle hook is not called then.
func (tr *taskRunner) start(r *taskRun) error {
	tr.mu.Lock()
	if tr.stopped {
		if r.reserved {
			tr.releaseLocked(r.quota)
		}
		tr.mu.Unlock()
		return errTasksStopping()
	}
	if !r.reserved {
		if se := tr.reserveLocked(r.quota); se != nil {
			tr.mu.Unlock()
			return se
		}
		r.reserved = true
	}
	ctx, cancel := r.ctx, context.CancelFunc(func() {})
	if d := tr.opts.MaxRunTime; d > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, d, errMaxRunTime)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	r.cancel = cancel
	tr.live[r] = struct{}{}
	tr.wg.Add(1)
	tr.mu.Unlock()
	go tr.exec(r, ctx)
	return nil
}

// exec is the goroutine of a run: the handler, then the release of its
// slot and its outcome through the gate, or, when a deadline inside
// returned first (ToolCall.AfterHandler), its outcome and then the
// release once the handler has really returned.
func (tr *taskRunner) exec(r *taskRun, ctx context.Context) {
	stop := context.AfterFunc(ctx, func() { // the max run time answers at once
		if context.Cause(ctx) == errMaxRunTime {
			r.deliver(nil, tr.runTimeError(r.call))
		}
	})
	res, err := tr.invoke(ctx, r)
	stop()
	if context.Cause(ctx) == errMaxRunTime { // the limit, not the handler's reaction to it
		res, err = nil, tr.runTimeError(r.call)
	}
	detached := r.call.Detached()
	if !detached {
		tr.free(r) // before the outcome is announced: a client told of it may start the next at once
	}
	if !r.deliver(res, err) {
		r.call.Logger.Debug("mcp: late task result dropped (the run already had its outcome)", "tool", r.call.Name)
	}
	if detached {
		r.call.AfterHandler(func() { tr.free(r); tr.finish(r) })
	} else {
		tr.finish(r)
	}
}

// free gives back the pool slot of a run whose handler has returned.
func (tr *taskRunner) free(r *taskRun) {
	tr.mu.Lock()
	delete(tr.live, r)
	tr.releaseLocked(r.quota)
	tr.mu.Unlock()
}

// finish ends a run whose slot is free: its context, its exit hook, its
// count.
func (tr *taskRunner) finish(r *taskRun) {
	r.cancel()
	if r.exit != nil {
		r.exit()
	}
	tr.wg.Done()
}

// invoke calls the tool once, recovering a panic: the one recover of the
// task handlers of both revisions.
func (tr *taskRunner) invoke(ctx context.Context, r *taskRun) (*CallToolResult, error) {
	call := r.call
	out, err := guard(call.Logger, "task handler", call.Name, func() (any, error) {
		res, err := tr.tools.CallTool(withInput(ctx, r.in), call)
		if res == nil {
			return nil, err // not a typed nil in an interface
		}
		return res, err
	})
	var p *errPanic
	if errors.As(err, &p) {
		return nil, &StructuredError{Code: ErrInternal, Message: "internal error", Details: map[string]any{"reason": "panic"}}
	}
	res, _ := out.(*CallToolResult)
	return res, err
}

// runTimeError is the error a run ends with after MaxRunTime: the task
// fails with it.
func (tr *taskRunner) runTimeError(call *ToolCall) *Error {
	d := tr.opts.MaxRunTime
	msg := "the task ran longer than its maximum run time (TaskOptions.MaxRunTime is " + d.String() + ")"
	return &Error{Code: CodeInternalError, Message: "Internal error: " + msg,
		Data: &StructuredError{Code: ErrTimeout, Message: msg,
			Details:       map[string]any{"limit": "maxRunTime", "maxRunTimeMs": d.Milliseconds()},
			CorrelationID: call.CorrelationID, RunID: call.RunID}}
}

// stop refuses new runs and cancels the handlers' contexts.
func (tr *taskRunner) stop() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.stopped = true
	for r := range tr.live {
		r.cancel()
	}
}

// wait waits until every handler has returned, or ctx ends.
func (tr *taskRunner) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { // ends when the last handler returns
		tr.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// measureOutcome checks the outcome a task stores against the response
// cap (MaxResultBytes), by its JSON size, encoded once. It returns the
// size, or the error the task fails with instead: over is the limit's
// error, encErr an encoding failure (the revision words its own error).
func (o *TaskOptions) measureOutcome(call *ToolCall, res *CallToolResult, rpcErr *Error) (size int64, over *Error, encErr error) {
	var v any = res
	if res == nil {
		v = rpcErr
	}
	b, err := json.Marshal(v)
	if err != nil {
		return 0, nil, err
	}
	n := int64(len(b))
	if max := o.MaxResultBytes; max > 0 && n > max {
		msg := "the task's result is " + strconv.FormatInt(n, 10) + " bytes of JSON, over the limit of " +
			strconv.FormatInt(max, 10) + " bytes (TaskOptions.MaxResultBytes)"
		return 0, &Error{Code: CodeInternalError, Message: "Internal error: " + msg,
			Data: &StructuredError{Code: ErrResourceExhausted, Message: msg,
				Details:       map[string]any{"limit": "maxResultBytes", "maxResultBytes": max, "resultBytes": n},
				CorrelationID: call.CorrelationID, RunID: call.RunID}}, nil
	}
	return n, nil, nil
}
