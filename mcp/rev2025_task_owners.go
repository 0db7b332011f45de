//go:build !keel_omit2025

package mcp

import (
	"context"
	"slices"
	"strconv"
)

// The owners of 2025-11-25 tasks and their sessions. A task belongs to an
// owner (taskHost.ownerOf): the authorization context of the request that
// created it (TaskOptions.Owner), else the session itself. Its status
// notifications go to that owner, not to a connection: to every live 2025
// session of the owner, so that a client that reconnects under the same
// authorization context gets the status of a task it created before, and
// no session of another owner ever does.
//
// A session joins an owner when one of its requests creates, reads,
// cancels or lists a task of that owner (the requests that ask for the
// owner's key), and leaves every owner when it ends. The sessions are
// bounded by what bounds connections (streamhttp's MaxSessions and
// MaxSessionsPerPeer over HTTP; one per Server.Run call on stdio and the
// in-memory transport), the owners of one session by
// maxOwnersPerSession; nothing is held for a session once it has ended.

// maxOwnersPerSession bounds the owners one session is registered under
// besides its own key (the owner of the tasks it creates without an
// authorization context). Over HTTP a session is bound to its bearer token's peer, so with the
// default Owner it has one; an Owner function that answers differently
// for the requests of one session is served for its first owners only:
// the session gets no status notifications of the others' tasks (logged).
const maxOwnersPerSession = 8

// taskSessions is the live 2025 sessions that use tasks, by owner. Its
// maps are made on first use and guarded by the taskHost's mu.
type taskSessions struct {
	of      map[*Session]*sessionTasks       // sessions whose end is watched
	byOwner map[string]map[*Session]struct{} // live sessions by owner key
	seq     uint64                           // numbers the owner keys of sessions
}

// sessionTasks is what the host holds for one live session.
type sessionTasks struct {
	key     string   // the owner key of its own tasks ("" until it has one)
	owners  []string // the other owners it joined, at most maxOwnersPerSession
	refused bool     // an owner beyond maxOwnersPerSession was logged
}

// watchLocked returns what the host holds for ss, registering it (and
// watching its end) on first use.
func (st *taskHost) watchLocked(ss *Session) *sessionTasks {
	ts := &st.sess
	if w := ts.of[ss]; w != nil {
		return w
	}
	if ts.of == nil {
		ts.of, ts.byOwner = map[*Session]*sessionTasks{}, map[string]map[*Session]struct{}{}
	}
	w := &sessionTasks{}
	ts.of[ss] = w
	context.AfterFunc(ss.ctx, func() { st.dropSession(ss) })
	return w
}

// joinLocked registers ss (held as w) under owner, one of the at most
// maxOwnersPerSession besides its own key: it reports true when owner is
// the first one refused.
func (st *taskHost) joinLocked(ss *Session, w *sessionTasks, owner string) (refused bool) {
	if slices.Contains(w.owners, owner) {
		return false
	}
	if len(w.owners) >= maxOwnersPerSession {
		refused = !w.refused
		w.refused = true
		return refused
	}
	w.owners = append(w.owners, owner)
	st.addLocked(ss, owner)
	return false
}

// addLocked adds ss to the sessions of owner.
func (st *taskHost) addLocked(ss *Session, owner string) {
	set := st.sess.byOwner[owner]
	if set == nil {
		set = map[*Session]struct{}{}
		st.sess.byOwner[owner] = set
	}
	set[ss] = struct{}{}
}

// leaveLocked removes ss from the sessions of owner.
func (st *taskHost) leaveLocked(ss *Session, owner string) {
	set := st.sess.byOwner[owner]
	delete(set, ss)
	if len(set) == 0 {
		delete(st.sess.byOwner, owner)
	}
}

// ownerOf returns the owner key for a request on ss whose authorization
// context is owner ("" = none: the session), and registers ss as a
// session of that owner.
func (st *taskHost) ownerOf(ss *Session, owner string) string {
	st.mu.Lock()
	w := st.watchLocked(ss)
	refused := false
	switch {
	case owner != "":
		refused = st.joinLocked(ss, w, owner)
	case w.key == "":
		st.sess.seq++
		w.key = "session:" + strconv.FormatUint(st.sess.seq, 10)
		st.addLocked(ss, w.key)
	}
	if owner == "" {
		owner = w.key
	}
	st.mu.Unlock()
	if refused {
		ss.log.Warn("mcp: the session's requests name more task owners than it is registered under: it gets no status notifications of the tasks of the others",
			"limit", maxOwnersPerSession)
	}
	return owner
}

// sessionsOf returns the live sessions of owner.
func (st *taskHost) sessionsOf(owner string) []*Session {
	st.mu.Lock()
	defer st.mu.Unlock()
	set := st.sess.byOwner[owner]
	out := make([]*Session, 0, len(set))
	for ss := range set {
		out = append(out, ss)
	}
	return out
}

// dropSession unregisters ss once it has ended, and deletes the tasks
// bound to it (not those of an authorization context).
func (st *taskHost) dropSession(ss *Session) {
	st.mu.Lock()
	w := st.sess.of[ss]
	delete(st.sess.of, ss)
	var own string
	var runs []*taskEntry
	if w != nil {
		for _, o := range w.owners {
			st.leaveLocked(ss, o)
		}
		own = w.key
		if own != "" {
			st.leaveLocked(ss, own)
		}
		for _, e := range st.live {
			if own != "" && e.owner == own {
				runs = append(runs, e)
			}
		}
	}
	st.mu.Unlock()
	if own == "" {
		return
	}
	for _, e := range runs {
		st.remove(e, "session closed")
	}
	ctx := context.Background()
	recs, err := st.store.List(ctx, own)
	if err != nil {
		ss.log.Error("mcp: the task store failed: the tasks of a closed session are left to expire", "error", err)
		return
	}
	for _, r := range recs {
		_ = st.store.Delete(ctx, own, r.ID) // gone meanwhile: as well
	}
}

// notifyStatus hands notifications/tasks/status with the state of rec to
// every live session of e's owner, unless a later state was handed on
// already. It never waits for a write: each session's own goroutine
// (Session.sendNotes) writes it, so that neither the task (its pool slot,
// its requests to the client) nor another session waits for a session
// that does not read.
func (st *taskHost) notifyStatus(e *taskEntry, rec *TaskRecord) {
	r := &e.r2025
	r.notifyMu.Lock()
	defer r.notifyMu.Unlock() // the versions of one task are queued in order
	if rec.Version <= r.notified {
		return
	}
	r.notified = rec.Version
	p := &TaskStatusNotificationParams{Task: rec.State}
	for _, ss := range st.sessionsOf(e.owner) {
		ss.queueStatus(p)
	}
}

// maxPendingStatusBytes bounds the task status notifications one session
// holds unwritten (each counted by statusCost): a status that does not
// fit is dropped, with a warning, until the backlog is written.
const maxPendingStatusBytes = 64 << 10

// statusCost is what a pending status counts against
// maxPendingStatusBytes: its strings of variable length and a fixed share
// for the rest.
func statusCost(p *TaskStatusNotificationParams) int {
	return 128 + len(p.Task.TaskID) + len(p.Task.StatusMessage)
}

// pendingStatuses is the task status notifications a session is yet to
// be written, in the order they changed. While the session's sender is
// writing (busy), a task's later status replaces the one of it still
// waiting, so that a session that does not keep up holds at most one per
// task, the latest; one that keeps up (its sender idle when a status
// comes) is written every status. It is guarded by the sessionNotes' mu.
type pendingStatuses struct {
	queue  []*TaskStatusNotificationParams // nil: replaced, then dropped
	last   map[string]int                  // task id → its last entry in queue (made on first use)
	bytes  int                             // the statusCost of queue, together
	busy   bool                            // the sender is writing what it took last
	warned bool                            // a status was dropped since the last take
}

// put queues p, in place of its task's waiting status while the sender
// is busy. It reports false when p does not fit in maxPendingStatusBytes:
// p is dropped then, and so is the stale status it was to replace.
func (q *pendingStatuses) put(p *TaskStatusNotificationParams) bool {
	id, cost := p.Task.TaskID, statusCost(p)
	if i, ok := q.last[id]; ok && q.busy {
		old := statusCost(q.queue[i])
		if q.bytes-old+cost > maxPendingStatusBytes {
			q.queue[i] = nil
			delete(q.last, id)
			q.bytes -= old
			return false
		}
		q.queue[i] = p
		q.bytes += cost - old
		return true
	}
	if q.bytes+cost > maxPendingStatusBytes {
		return false
	}
	if q.last == nil {
		q.last = map[string]int{}
	}
	q.last[id] = len(q.queue)
	q.queue = append(q.queue, p)
	q.bytes += cost
	return true
}

// take returns the queued statuses, in order, and empties q; q is busy
// until a take finds none.
func (q *pendingStatuses) take() []*TaskStatusNotificationParams {
	out := slices.DeleteFunc(q.queue, func(p *TaskStatusNotificationParams) bool { return p == nil })
	*q = pendingStatuses{busy: len(out) > 0}
	return out
}

// queueStatus makes p the status of its task to send to ss, and starts
// the session's sender unless it is running.
func (ss *Session) queueStatus(p *TaskStatusNotificationParams) {
	n := &state2025(ss).notes
	n.mu.Lock()
	ok := n.statuses.put(p)
	warn := !ok && !n.statuses.warned
	if !ok {
		n.statuses.warned = true
	}
	start := n.claimSenderLocked()
	n.mu.Unlock()
	if warn {
		ss.log.Warn("mcp: too many task status notifications pending for a session that does not read; dropping some",
			"limit", "maxPendingStatusBytes", "maxPendingStatusBytes", maxPendingStatusBytes, "taskId", p.Task.TaskID)
	}
	if start {
		go ss.sendNotes()
	}
}

// sendStatus writes one status notification to ss, within logSendTimeout
// and the session's life.
func (ss *Session) sendStatus(p *TaskStatusNotificationParams) {
	ctx, cancel := context.WithTimeout(ss.ctx, logSendTimeout)
	defer cancel()
	if err := ss.conn.notify(ctx, notificationTasksStatus, p); err != nil && !isClosed(err) && ss.ctx.Err() == nil {
		ss.log.Warn("mcp: sending notifications/tasks/status failed", "taskId", p.Task.TaskID, "error", err)
	}
}

// taskOwner returns the owner key of the request ctx belongs to.
func (st *taskHost) taskOwner(ss *Session, ctx context.Context) string {
	return st.ownerOf(ss, st.opts.owner(ctx))
}

// lookupTask finds the record of the task a tasks/* request names:
// -32602 when there is none for this requestor.
func lookupTask(ctx context.Context, req *Request) (*TaskRecord, *Error) {
	id, perr := taskParams(req)
	if perr != nil {
		return nil, perr
	}
	ss := req.Session
	st := ss.server.tasks
	rec, err := st.store.Get(ctx, st.taskOwner(ss, ctx), id)
	if err != nil {
		return nil, st.storeError(req, id, err)
	}
	return rec, nil
}
