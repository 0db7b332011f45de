//go:build !keel_omit2025

package mcp

import (
	"context"
	"slices"
	"strconv"
	"sync"
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

// notifyStatus sends notifications/tasks/status with the state of rec to
// every live session of e's owner, unless a later state was sent already.
// Each session gets at most logSendTimeout; they are sent to at once, so
// that a slow one delays no other.
func (st *taskHost) notifyStatus(e *taskEntry, rec *TaskRecord) {
	r := &e.r2025
	r.notifyMu.Lock()
	defer r.notifyMu.Unlock()
	if rec.Version <= r.notified {
		return
	}
	r.notified = rec.Version
	to := st.sessionsOf(e.owner)
	if len(to) == 0 {
		return
	}
	p := &TaskStatusNotificationParams{Task: rec.State}
	var wg sync.WaitGroup
	for _, ss := range to[1:] {
		wg.Go(func() { sendStatus(ss, e.id, p) })
	}
	sendStatus(to[0], e.id, p)
	wg.Wait()
}

// sendStatus sends one status notification to ss, within logSendTimeout.
func sendStatus(ss *Session, id string, p *TaskStatusNotificationParams) {
	ctx, cancel := context.WithTimeout(context.Background(), logSendTimeout)
	defer cancel()
	if err := ss.conn.notify(ctx, notificationTasksStatus, p); err != nil && !isClosed(err) {
		ss.log.Warn("mcp: sending notifications/tasks/status failed", "taskId", id, "error", err)
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
