package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// TaskChangeSource is implemented by a TaskStore that several processes
// share. A Server whose TaskOptions.Store implements it watches the
// changes the other processes make and applies them to the runs of its
// own process: a task cancelled (or failed, or deleted) through another
// process has its handler's context cancelled here, and a 2026-07-28 task
// whose input was answered through another process runs its handler
// again here, with the answers the record hands over.
type TaskChangeSource interface {
	// WatchTaskChanges calls changed with the id of each record another
	// process updated or deleted, one call at a time, until stop is
	// called. The Server stops it in StopTasks.
	WatchTaskChanges(changed func(id string)) (stop func())
}

// remoteChangeTimeout bounds the store calls made for one change another
// process reported.
const remoteChangeTimeout = 10 * time.Second

// watchStore starts watching the store's changes when it is shared.
func (st *taskHost) watchStore() {
	if src, ok := st.store.(TaskChangeSource); ok {
		st.unwatch = src.WatchTaskChanges(st.remoteChange)
	}
}

// sharedStore reports whether another process may run the store's tasks.
func (st *taskHost) sharedStore() bool {
	_, ok := st.store.(TaskChangeSource)
	return ok
}

// remoteChange applies a change another process made to task id to its
// run in this process, if it has one.
func (st *taskHost) remoteChange(id string) {
	e := st.liveOf(id)
	if e == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), remoteChangeTimeout)
	defer cancel()
	rec, err := st.store.Get(ctx, e.owner, id)
	switch {
	case errors.Is(err, ErrTaskNotFound):
		st.remove(e, "deleted")
	case err != nil:
		e.call.Logger.Error("mcp: the task store failed: a change made by another process is not applied", "taskId", id, "error", err)
	case rec.Terminal():
		st.stopRun(e)
		e.call.Logger.Debug("mcp: task ended by another process", "tool", e.call.Name, "taskId", id, "status", string(rec.State.Status))
	case e.run != nil && handedOver(rec):
		st.resume(ctx, e)
	}
}

// handedOver reports whether rec's answers were delivered by a process
// that does not run it: working again, nothing pending, the answers kept
// in the record for the process that does.
func handedOver(rec *TaskRecord) bool {
	in := rec.Input
	return rec.State.Status == TaskStatusWorking && in != nil && len(in.Pending) == 0 && in.Answers != nil
}

// resume takes the answers another process delivered to e's task out of
// its record and runs its handler with them.
func (st *taskHost) resume(ctx context.Context, e *taskEntry) {
	var in *Input
	_, ok, err := updateTask(ctx, st.store, st.lim, e.owner, e.id, func(r *TaskRecord) (bool, error) {
		if !handedOver(r) {
			return false, nil // taken already
		}
		mt := r.Input
		in = &Input{Responses: mt.Answers, State: mt.State, Round: mt.Round}
		mt.Answers, mt.State = nil, nil
		return true, nil
	})
	switch {
	case err != nil:
		e.call.Logger.Error("mcp: the task store failed: answers delivered through another process are not taken", "taskId", e.id, "error", err)
	case ok:
		e.run.start(in)
	}
}

// handOver keeps the answers of a round completed in a process that does
// not run the task in its record (see handedOver).
func handOver(mt *TaskInput, answers map[string]json.RawMessage, state []byte) {
	mt.Answers, mt.State = answers, state
	if mt.Answers == nil {
		mt.Answers = map[string]json.RawMessage{}
	}
}
