package mcp

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/keelmcp/keel/internal/ids"
	"github.com/keelmcp/keel/transport"
)

// Tasks (2025-11-25, experimental): a client may ask for a tools/call to
// run as a task — it gets a CreateTaskResult at once, polls the task with
// tasks/get, collects the tool's result with tasks/result, and may cancel
// it with tasks/cancel or list its tasks with tasks/list. The server offers
// tasks when ServerOptions.Tasks is set, to sessions of 2025-11-25 only;
// other sessions see no tasks capability, their "task" params are ignored
// and the tasks/* methods get -32601. (Revision 2026-07-28 has tasks as an
// extension instead, with other rules: rev2026_tasks.go.)
//
// Which tools may run as tasks is each tool's execution.taskSupport
// (registry.ToolOptions.TaskSupport): "task" sent for a tool whose support
// is forbidden (or absent) gets -32601, and so does a call without "task" of
// a tool whose support is required.
//
// A task runs the call in the background, on the server's task runner
// (task_runner.go), with the same context values as a plain call
// (ToolCallFromContext, SessionFromContext, ProgressFromContext,
// ClientLogger): it ends when the handler returns, and is cancelled by
// tasks/cancel, by the end of its session (for tasks bound to the
// session), when its ttl runs out and after TaskOptions.MaxRunTime (the
// task then fails naming that limit).
//
// Bounds: a task's handler runs in the task pool (TaskOptions.MaxRunning
// in all, MaxRunningPerOwner per owner), not in the request slots of the
// tools/call chain; a task-augmented call that finds the pool full gets a
// RESOURCE_EXHAUSTED isError result naming the limit. Tasks in progress
// are bounded per owner (MaxTasks) and in all (MaxTasksTotal). Finished
// tasks are kept per owner within MaxFinishedTasks and MaxFinishedBytes
// (the oldest evicted first) and in all within MaxFinishedBytesTotal, and
// a result over MaxResultBytes fails its task. For
// these quotas the owner is the authorization context, else the peer
// (PeerFromContext): the sessions and self-reported names of one peer
// share one quota, and no other peer can use it up or evict its results.
// While it waits for the client (sampling, elicitation, roots: see
// Session.CreateMessage and friends) the task is input_required, and those
// requests, like its progress notifications, carry the related-task _meta.
// Each change of status is announced with notifications/tasks/status.
//
// Security: tasks are bound to the authorization context of the request
// that created them (TaskOptions.Owner) or, without one, to the session
// (2025 revisions) or the peer (2026-07-28, whose requests have no
// session), and are visible to it only: another owner's task id is
// answered like an unknown one. Task ids are random UUIDs (128 bits, 122 of them random).

// Defaults of TaskOptions. Together they bound what a remote client can
// make the server hold for tasks: running handlers (MaxRunning,
// MaxRunningPerOwner, MaxRunTime), tasks in progress (MaxTasks,
// MaxTasksTotal), finished tasks (MaxFinishedTasks, MaxFinishedBytes,
// MaxFinishedBytesTotal, MaxResultBytes) and how long any task is kept
// (TTL, MaxTTL).
const (
	// defaultTaskTTL is how long a task is kept when its request names no
	// ttl: one hour from its creation.
	defaultTaskTTL = time.Hour
	// defaultMaxTaskTTL caps the ttl a request may ask for: four hours.
	defaultMaxTaskTTL = 4 * time.Hour
	// defaultTaskPollInterval is the polling interval suggested to clients.
	defaultTaskPollInterval = time.Second
	// defaultMaxTasks bounds the tasks in progress per owner.
	defaultMaxTasks = 100
	// defaultMaxTasksTotal bounds the tasks in progress on a server, all
	// owners together (those input_required, which hold no handler slot,
	// included).
	defaultMaxTasksTotal = 10_000
	// defaultTaskImmediateWait is how long a 2026-07-28 tools/call that
	// may become a task waits for its handler before answering with a task.
	defaultTaskImmediateWait = 50 * time.Millisecond
	// defaultMaxRunningTasks bounds the task handlers running at once on
	// a server, all owners together.
	defaultMaxRunningTasks = 128
	// defaultMaxRunningTasksPerOwner bounds the task handlers running at
	// once for one owner.
	defaultMaxRunningTasksPerOwner = 32
	// defaultMaxTaskRunTime is how long a task's handler may run.
	defaultMaxTaskRunTime = time.Hour
	// defaultMaxFinishedTasks bounds the finished tasks kept per owner.
	defaultMaxFinishedTasks = 100
	// defaultMaxFinishedTaskBytes bounds the bytes of results (their JSON
	// size) the finished tasks of one owner hold: 16 MiB.
	defaultMaxFinishedTaskBytes = 16 << 20
	// defaultMaxFinishedTaskBytesTotal bounds the bytes the finished tasks
	// of all owners together hold: 256 MiB.
	defaultMaxFinishedTaskBytesTotal = 256 << 20
	// defaultMaxTaskResultBytes bounds the JSON size of one task's result:
	// DefaultMaxResultBytes, so that a stored result fits in a message.
	defaultMaxTaskResultBytes = DefaultMaxResultBytes
)

// Result size bounds that agree with the transports' message limit.
const (
	// resultEnvelopeBytes is the room DefaultMaxResultBytes leaves within
	// transport.DefaultMaxMessageBytes for what wraps a result on the
	// wire: the JSON-RPC envelope and id, _meta, an SSE event's framing.
	resultEnvelopeBytes = 64 << 10
	// DefaultMaxResultBytes is the default bound on the JSON of one
	// result (a tool's: middleware.DefaultMaxResponseBytes; a task's):
	// transport.DefaultMaxMessageBytes less 64 KiB left for what wraps a
	// result on the wire (the JSON-RPC envelope and id, _meta, an SSE
	// event's framing): 4 MiB - 64 KiB. A result within it fits in a message the peer accepts at
	// its defaults. A larger bound configured on its own is clamped at
	// the transport: a response larger than the transport's
	// MaxMessageBytes is never sent; the request is answered with -32603
	// naming MaxMessageBytes instead (transport.MessageLimiter).
	DefaultMaxResultBytes = transport.DefaultMaxMessageBytes - resultEnvelopeBytes
)

// TaskOptions configure tasks (ServerOptions.Tasks). The zero value gives
// the defaults.
//
// Tasks run outside the request slots: their handlers run in the task
// pool (MaxRunning, MaxRunningPerOwner), not in the concurrency slots of
// the tools/call chain (middleware.Limiter leaves calls with ToolCall.Task
// set alone), so a client that starts long tasks and goes away holds task
// slots only, never the slots other clients' plain calls need.
type TaskOptions struct {
	// TTL is the ttl of tasks whose request names none (0 =
	// one hour; negative = unlimited, sent as null).
	TTL time.Duration
	// MaxTTL caps requested ttls (0 = four hours; negative = no
	// cap). A task's actual ttl is reported in every Task.
	MaxTTL time.Duration
	// PollInterval is the polling interval suggested to clients (0 =
	// one second; negative = none suggested).
	PollInterval time.Duration
	// MaxTasks bounds the tasks in progress (not yet terminal) per owner
	// (0 = 100; negative = no limit). Here and in the bounds
	// below, "per owner" means per authorization context (Owner), else
	// per peer (PeerFromContext), whatever sessions or names it uses. A task-augmented call
	// beyond it gets a RESOURCE_EXHAUSTED isError result.
	MaxTasks int
	// MaxTasksTotal bounds the tasks in progress (working or
	// input_required) on the server, all owners together (0 =
	// 10 000; negative = no limit): the per-owner bounds
	// alone would let many owners add up without bound. A task-augmented
	// call beyond it gets a retryable RESOURCE_EXHAUSTED isError result
	// naming "maxTasksTotal" (a 2026-07-28 call is answered when its
	// handler returns, not as a task).
	MaxTasksTotal int
	// MaxRunning bounds the task handlers running at once, all owners
	// together (0 = 128; negative = no limit), and
	// MaxRunningPerOwner those of one owner (0 =
	// 32; negative = no limit). A handler holds
	// its slot until it returns, also after its task was cancelled or
	// removed. A call that finds no slot gets a retryable
	// RESOURCE_EXHAUSTED isError result naming the limit ("maxRunning" or
	// "maxRunningPerOwner"); a 2026-07-28 task resumed by tasks/update
	// that finds none fails with it.
	MaxRunning         int
	MaxRunningPerOwner int
	// MaxRunTime bounds how long a task's handler runs (0 =
	// one hour; negative = no limit; for a 2026-07-28 task,
	// each run of it, between input rounds). When it passes, the handler's
	// context is cancelled and the task fails at once with an -32603 error
	// whose data is a TIMEOUT StructuredError with details {"limit":
	// "maxRunTime"}; whatever the handler returns later is dropped. The
	// task's ttl also ends it (cancelled, then removed).
	MaxRunTime time.Duration
	// MaxFinishedTasks bounds the finished tasks kept per owner (0 =
	// 100; negative = no limit), and
	// MaxFinishedBytes the bytes they hold: the JSON size of each one's
	// result or error, plus 512 bytes for the task itself (0 =
	// 16 MiB; negative = no limit). Beyond either,
	// the owner's oldest finished task is evicted: it then reads as not
	// found (-32602), as an expired one does.
	MaxFinishedTasks int
	MaxFinishedBytes int64
	// MaxFinishedBytesTotal bounds the bytes (counted as MaxFinishedBytes
	// counts them) the finished tasks of all owners together hold (0 =
	// 256 MiB; negative = no limit). While they
	// hold it, a task-augmented call gets a retryable RESOURCE_EXHAUSTED
	// isError result naming "maxFinishedBytesTotal"; a task that finishes
	// beyond it evicts its own owner's oldest finished tasks, itself last,
	// never another owner's.
	MaxFinishedBytesTotal int64
	// MaxResultBytes bounds the JSON size of one task's result (or
	// error), measured once when the task finishes (0 =
	// DefaultMaxResultBytes; negative = no limit). A larger one is not
	// stored: the task fails with an -32603 error whose data is a
	// RESOURCE_EXHAUSTED StructuredError with details {"limit":
	// "maxResultBytes"}.
	MaxResultBytes int64
	// NewID generates task ids (nil = random UUID v4 from crypto/rand).
	// Ids must be unique and, unless Owner binds tasks to an authorization
	// context, hard to guess.
	NewID func() string
	// Owner returns the authorization context (for example the
	// authenticated subject) of a request; ctx is the request's context
	// (RequestFromContext, TokenInfoFromContext). Tasks are bound to it:
	// any session of the same owner may get, collect, cancel and list them,
	// and they outlive the session that created them (until their ttl).
	// Its answer is also the key of the task quotas (MaxTasks,
	// MaxRunningPerOwner, MaxFinishedTasks), in place of the peer: return
	// a verified identity, never a value the client chooses, which would
	// let it enlarge its share.
	// "" binds tasks to the session: they end with it (a 2026-07-28
	// request, which has no session, binds them to its peer). Nil means
	// the subject, else the client id, of the request's verified bearer
	// token (HTTP with streamhttp.RequireBearer), else the session.
	Owner func(ctx context.Context) string
	// ImmediateWait is how long a 2026-07-28 tools/call that may become a
	// task waits for its handler before it answers with a task (the
	// immediate-result shortcut: a handler that returns, or asks for
	// input, within it is answered directly). 0 = 50 ms;
	// negative = no wait: such calls become tasks before their handler
	// starts. A handler may also become a task at once with StartTask.
	// Such a call runs in the task pool from its start.
	ImmediateWait time.Duration
	// Store holds the task records (nil = a MemoryTaskStore of this
	// Server, with the Server's clock). A store's clock decides when a
	// record expires (TaskRecord.ExpiresAt, from ServerOptions.Now):
	// it should be the Server's. The runs of tasks stay in the
	// process that started them; the bounds above reach the store as
	// TaskLimits.
	Store TaskStore
}

// withDefaults returns o with its defaults filled in.
func (o TaskOptions) withDefaults() TaskOptions {
	if o.TTL == 0 {
		o.TTL = defaultTaskTTL
	}
	if o.MaxTTL == 0 {
		o.MaxTTL = defaultMaxTaskTTL
	}
	if o.PollInterval == 0 {
		o.PollInterval = defaultTaskPollInterval
	}
	if o.MaxTasks == 0 {
		o.MaxTasks = defaultMaxTasks
	}
	if o.MaxTasksTotal == 0 {
		o.MaxTasksTotal = defaultMaxTasksTotal
	}
	if o.MaxFinishedBytesTotal == 0 {
		o.MaxFinishedBytesTotal = defaultMaxFinishedTaskBytesTotal
	}
	if o.MaxRunning == 0 {
		o.MaxRunning = defaultMaxRunningTasks
	}
	if o.MaxRunningPerOwner == 0 {
		o.MaxRunningPerOwner = defaultMaxRunningTasksPerOwner
	}
	if o.MaxRunTime == 0 {
		o.MaxRunTime = defaultMaxTaskRunTime
	}
	if o.MaxFinishedTasks == 0 {
		o.MaxFinishedTasks = defaultMaxFinishedTasks
	}
	if o.MaxFinishedBytes == 0 {
		o.MaxFinishedBytes = defaultMaxFinishedTaskBytes
	}
	if o.MaxResultBytes == 0 {
		o.MaxResultBytes = defaultMaxTaskResultBytes
	}
	if o.NewID == nil {
		o.NewID = ids.NewUUID
	}
	if o.ImmediateWait == 0 {
		o.ImmediateWait = defaultTaskImmediateWait
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

// initTasks sets up the tasks when o.Tasks is set (called by NewServer).
func (s *Server) initTasks() {
	if s.opts.Tasks == nil {
		return
	}
	o := s.opts.Tasks.withDefaults()
	s.opts.Tasks = &o
	s.tasks = newTaskHost(o, s.opts.Now, s.opts.Tools)
	s.tasks.onChange = s.taskChanged // notifications/tasks (rev2026_listen.go), to every process (feature_fanout.go)
	s.tasks.srv = s
	s.tasks.watchStore() // a store shared with other processes (task_store_watch.go)
}

// findTool returns the definition of the named tool (see ToolFinder).
func (st *taskHost) findTool(ss *Session, ctx context.Context, name string) (*Tool, bool) {
	src := ss.server.opts.Tools
	if f, ok := src.(ToolFinder); ok {
		return f.FindTool(ctx, name)
	}
	list, err := src.ListTools(ctx)
	if err != nil || len(list) == 0 {
		return nil, false
	}
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

// toolOutcome maps the error a task's call returned to what tools/call
// would have answered: a JSON-RPC error (the task fails), or an isError
// result (it completes); msg is the task's status message.
func toolOutcome(s *Server, call *ToolCall, err error) (res *CallToolResult, rpcErr *Error, msg string) {
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
	se = plainError(s, call.Logger, "task of tool "+quote(call.Name), err)
	return ToolErrorResult(withIDs(se, call)), nil, string(se.Code) + ": " + se.Message
}

// settle is the one outcome mapper of the tasks of both revisions: it
// records what a task's handler returned as tools/call would have
// answered it, and announces the new status. What the outcome means is
// the revision's policy (taskRules): which outcomes fail the task, with
// which message, and what the failure's error carries. A result over
// MaxResultBytes, or one that cannot be encoded, fails the task. It
// returns the record when the task was settled.
func (st *taskHost) settle(e *taskEntry, res *CallToolResult, err error) *TaskRecord {
	call, rules := e.call, e.rules
	call.progress.finish() // no progress after the task is over
	msg := ""
	var rpcErr *Error
	if err != nil {
		res, rpcErr, msg = toolOutcome(st.srv, call, err)
	}
	if res == nil && rpcErr == nil {
		res = &CallToolResult{}
	}
	size, over, merr := st.opts.measureOutcome(call, res, rpcErr)
	switch {
	case merr != nil:
		call.Logger.Error("mcp: task result not serializable", "error", merr)
		res, rpcErr, msg = nil, &Error{Code: CodeInternalError, Message: "Internal error: result not serializable",
			Data: rules.unencodable(call)}, "result not serializable"
	case over != nil:
		call.Logger.Warn("mcp: task result over the limit: the task fails", "tool", call.Name, "taskId", e.id, "error", over.Message)
		res, rpcErr, msg = nil, over, rules.limitMessage(over.Message)
	}
	status, msg := rules.status(res, rpcErr, msg)
	rec := st.finish(e, status, msg, res, rpcErr, size)
	if rec != nil {
		call.Logger.Debug("mcp: task finished", "tool", call.Name, "taskId", e.id, "status", string(status))
		rules.announce(st, e, rec)
	}
	rules.settled(e)
	return rec
}

// taskRules is what one revision decides about its tasks: the outcome
// mapper (settle), the final write (taskHost.finish) and the cancel path
// (taskHost.cancel) are shared, and ask it. rulesFor returns a
// revision's.
type taskRules interface {
	// status returns the status and message of a task whose handler's
	// outcome is res or rpcErr; msg describes the outcome so far.
	status(res *CallToolResult, rpcErr *Error, msg string) (TaskStatus, string)
	// limitMessage returns what describes the outcome of a task failed
	// by a limit whose error says msg.
	limitMessage(msg string) string
	// unencodable returns error.data of the failure of a task whose
	// result cannot be encoded (nil: none).
	unencodable(call *ToolCall) any
	// cancelled returns the result a task cancelled by request keeps
	// (nil: none); call is its run's, nil when no run is in this process.
	cancelled(id string, call *ToolCall) *CallToolResult
	// announce tells the task's client of its new state rec.
	announce(st *taskHost, e *taskEntry, rec *TaskRecord)
	// settled runs once the handler's outcome is recorded.
	settled(e *taskEntry)
	// deleted records, under the host's mu, why a task still running was
	// deleted (its ttl passed, its session ended), for its waiters.
	deleted(e *taskEntry, why string)
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

// relatedTaskMeta is the _meta of a message tied to task id.
func relatedTaskMeta(id string) Meta {
	return Meta{metaRelatedTask: relatedTaskMetadata{TaskID: id}}
}

// taskParams decodes the params of tasks/get, tasks/result and
// tasks/cancel (which share their shape).
func taskParams(req *Request) (string, *Error) {
	var p getTaskParams
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
// ("" = none: the session): Owner's answer, or the subject (else the
// client id) of the request's verified bearer token
// (TokenInfoFromContext).
func (o *TaskOptions) owner(ctx context.Context) string {
	sub := ""
	if o.Owner != nil {
		sub = o.Owner(ctx)
	} else if p, ok := transport.PeerOfToken(TokenInfoFromContext(ctx)); ok {
		sub = p.Key
	}
	if sub == "" {
		return ""
	}
	return "auth:" + sub
}

// quotaOf returns the key the task quotas of a request count against:
// its authorization context (owner), else its peer (PeerFromContext).
// Sessions and self-reported names of one peer thus share its quotas.
func (st *taskHost) quotaOf(ctx context.Context) string {
	if k := st.opts.owner(ctx); k != "" {
		return k
	}
	return "peer:" + PeerFromContext(ctx).Key
}
