package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"time"
)

// TaskStore holds the records of a server's tasks, of both revisions
// (2025-11-25 tasks and the 2026-07-28 tasks extension). A record is plain
// data: what a client can read of a task (its state, its outcome, the
// input it waits for) and the keys that scope and bound it. What runs the
// task (its handler's goroutine, context and channels) stays in the
// process that runs it, never in the store; a store shared by several
// processes (PostgreSQL) thus holds tasks any of them can read.
//
// The contract every implementation keeps (package mcp/taskstoretest
// checks it):
//
//   - Owner scoping: Get, List and Delete see only the records of the
//     owner they are given; another owner's task reads as not found
//     (ErrTaskNotFound), as an unknown one does.
//   - Versions: Create stores a record at Version 1; Update replaces a
//     record only when the stored Version equals rec.Version (compare and
//     swap), and then stores and sets rec.Version+1; otherwise it fails
//     with ErrTaskConflict and stores nothing.
//   - Expiry: a record whose ExpiresAt is not zero and not after the
//     store's clock reads as not found, is left out of List and counts
//     against no bound; the store may delete it at any time.
//   - Bounds, per Quota: Create fails with ErrTaskLimit when the quota has
//     TaskLimits.MaxTasks records that are not terminal. When Update makes
//     a record terminal, the quota's finished records are bounded by
//     MaxFinishedTasks and MaxFinishedBytes (each counts its Size plus
//     TaskRecordOverhead): beyond either, the quota's records that became
//     terminal first are deleted, the updated one included when its Size
//     alone is over.
//   - Bounds, in all: Create also fails with ErrTaskLimit when the store
//     holds TaskLimits.MaxTasksTotal records that are not terminal (of all
//     quotas), or when its terminal records count MaxFinishedBytesTotal
//     bytes so that a new one's TaskRecordOverhead would not fit. When
//     Update (or Create) makes a record terminal beyond
//     MaxFinishedBytesTotal, the records of its own quota that became
//     terminal first are deleted to make room, never another quota's;
//     when even those are not enough and the record's Size is over zero,
//     it fails with ErrTaskLimit and stores nothing (the caller may store
//     a smaller outcome instead), and a record of Size zero is stored and
//     deleted as the per-quota bounds delete one.
//   - A refusal for a bound is a *TaskLimitError naming it, which
//     matches ErrTaskLimit.
//   - Records given to a store are copied or owned by it from then on;
//     records it returns belong to the caller. A record's Result and Error
//     are never modified once set, and may be shared.
//
// All methods are safe for concurrent use: the bounds hold however many
// callers create at once. A method called with a context that is done
// (cancelled, or past its deadline) changes nothing and returns an error
// matching the context's (errors.Is(err, ctx.Err())). Errors other than
// those above (a database that is down) are returned as they are, and the
// request that met them fails.
type TaskStore interface {
	// Create stores a new record, at Version 1 and with the next Seq of
	// the store. It fails with ErrTaskExists when rec.ID is taken, and
	// with ErrTaskLimit when rec.Quota is at lim.MaxTasks, the store at
	// lim.MaxTasksTotal, or its finished records at
	// lim.MaxFinishedBytesTotal.
	Create(ctx context.Context, rec *TaskRecord, lim TaskLimits) error
	// Get returns owner's record id, or ErrTaskNotFound.
	Get(ctx context.Context, owner, id string) (*TaskRecord, error)
	// List returns owner's records in creation order (by Seq).
	List(ctx context.Context, owner string) ([]*TaskRecord, error)
	// Update replaces owner's record rec.ID (rec.Owner) when its stored
	// Version is rec.Version, applying the finished-task bounds of lim
	// when rec is terminal; ErrTaskConflict when the version differs,
	// ErrTaskNotFound when the record is gone, ErrTaskLimit when a
	// terminal rec does not fit within lim.MaxFinishedBytesTotal.
	Update(ctx context.Context, rec *TaskRecord, lim TaskLimits) error
	// Delete removes owner's record id, or returns ErrTaskNotFound.
	Delete(ctx context.Context, owner, id string) error
}

// Errors of a TaskStore, matchable with errors.Is (implementations may
// wrap them).
var (
	// ErrTaskNotFound: no record of that id for that owner (unknown,
	// expired, evicted, deleted, or another owner's).
	ErrTaskNotFound = errors.New("mcp: task not found")
	// ErrTaskConflict: the record changed since it was read (its Version
	// differs); read it again and retry.
	ErrTaskConflict = errors.New("mcp: task record changed concurrently")
	// ErrTaskExists: Create was given an id that is taken.
	ErrTaskExists = errors.New("mcp: task id already exists")
	// ErrTaskLimit: a bound of TaskLimits refuses the record (a
	// *TaskLimitError names which).
	ErrTaskLimit = errors.New("mcp: task limit reached")
)

// Names of the bounds a TaskLimitError reports: those of TaskOptions and
// TaskLimits, as the RESOURCE_EXHAUSTED errors name them.
const (
	TaskLimitMaxTasks              = "maxTasks"
	TaskLimitMaxTasksTotal         = "maxTasksTotal"
	TaskLimitMaxFinishedBytesTotal = "maxFinishedBytesTotal"
)

// TaskLimitError is a TaskStore's refusal for one of the bounds of
// TaskLimits. It matches ErrTaskLimit (errors.Is).
type TaskLimitError struct {
	// Limit names the bound (TaskLimitMaxTasks, TaskLimitMaxTasksTotal,
	// TaskLimitMaxFinishedBytesTotal) and Max is its value.
	Limit string
	Max   int64
}

// Error implements error.
func (e *TaskLimitError) Error() string {
	return "mcp: task limit " + e.Limit + " (" + strconv.FormatInt(e.Max, 10) + ") reached"
}

// Is reports whether target is ErrTaskLimit.
func (e *TaskLimitError) Is(target error) bool { return target == ErrTaskLimit }

// TaskRecordOverhead is what every finished record counts against
// TaskLimits.MaxFinishedBytes besides its Size.
const TaskRecordOverhead = 512

// TaskLimits are the bounds a TaskStore applies per quota key and in all.
// Zero or negative means no limit. The Server passes those of its
// TaskOptions.
type TaskLimits struct {
	// MaxTasks bounds the records of a quota that are not terminal, and
	// MaxTasksTotal those of all quotas together.
	MaxTasks      int
	MaxTasksTotal int
	// MaxFinishedTasks bounds the terminal records of a quota, and
	// MaxFinishedBytes their Size (each plus TaskRecordOverhead).
	MaxFinishedTasks int
	MaxFinishedBytes int64
	// MaxFinishedBytesTotal bounds the Size (each plus
	// TaskRecordOverhead) of the terminal records of all quotas together.
	MaxFinishedBytesTotal int64
}

// TaskRecord is the stored state of one task: plain data, without any
// handle of the process that runs it.
type TaskRecord struct {
	// ID is the task id; Owner is who may see the task (the authorization
	// context of the request that created it, its session, or its peer),
	// and Quota the key its bounds count against.
	ID    string
	Owner string
	Quota string
	// Revision is the protocol revision whose rules the task follows
	// (Version20251125, or Version20260728 for the tasks extension).
	Revision string
	// Seq is the creation order, set by Create.
	Seq uint64
	// Version is the compare-and-swap version, set by Create and Update.
	Version uint64
	// State is what tasks/get answers: status, message, timestamps, ttl
	// and polling interval (State.TaskID is ID).
	State Task
	// ExpiresAt is when the record expires (zero: never).
	ExpiresAt time.Time
	// Result is a terminal task's result (an isError result for tool
	// errors), Error the JSON-RPC error it failed with instead, and Size
	// the JSON size of whichever is set.
	Result *CallToolResult
	Error  *Error
	Size   int64
	// Input is the input a 2026-07-28 task waits for (input_required) and
	// the answers delivered so far; nil for other tasks.
	Input *TaskInput
}

// TaskInput is the input round of a 2026-07-28 task.
type TaskInput struct {
	// Pending are the requests not answered yet, by the key the server
	// minted for them (what tasks/get shows and tasks/update answers).
	Pending map[string]TaskInputRequest
	// Answers are this round's answers, by the handler's own keys.
	Answers map[string]json.RawMessage
	// State is the handler's state of this round (InputRequiredError.State).
	State []byte
	// Round counts the input rounds so far, Minted the keys minted.
	Round  int
	Minted int
}

// TaskInputRequest is one request a task waits for: the handler's key
// and the request.
type TaskInputRequest struct {
	Key     string
	Request InputRequest
}

// Terminal reports whether the record's status is terminal.
func (r *TaskRecord) Terminal() bool { return r.State.Status.Terminal() }

// Clone returns a copy of r that shares nothing mutable with it (Result
// and Error, never modified, are shared).
func (r *TaskRecord) Clone() *TaskRecord {
	c := *r
	if in := r.Input; in != nil {
		ci := *in
		ci.Pending = maps.Clone(in.Pending)
		ci.Answers = maps.Clone(in.Answers)
		ci.State = slices.Clone(in.State)
		c.Input = &ci
	}
	return &c
}

// updateTask applies change to owner's record id and stores it, rereading
// and retrying when another writer changed it first (ErrTaskConflict).
// change returns false to leave the record as it is (updateTask then
// returns it unchanged and false), or an error to stop.
func updateTask(ctx context.Context, s TaskStore, lim TaskLimits, owner, id string, change func(*TaskRecord) (bool, error)) (*TaskRecord, bool, error) {
	for {
		rec, err := s.Get(ctx, owner, id)
		if err != nil {
			return nil, false, err
		}
		ok, err := change(rec)
		if err != nil || !ok {
			return rec, false, err
		}
		switch err := s.Update(ctx, rec, lim); {
		case err == nil:
			return rec, true, nil
		case !errors.Is(err, ErrTaskConflict):
			return nil, false, err
		}
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
	}
}
