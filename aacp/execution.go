package aacp

import (
	"context"
	"slices"
	"sync/atomic"
	"time"
)

// execution is a REQUEST or EVENT being processed by a local agent: from
// the deduplication check until its resolution is recorded (retries
// included). While it exists, duplicates of its request are ignored.
type execution struct {
	env       *Envelope
	deadline  time.Time
	expiresAt time.Time // of the request record: its RESPONSE expires with it
	attempts  int       // attempts started, the current one included
	due       time.Time // when a scheduled retry is due
	// conditional: the attempt starts only if the request is still
	// pending and the agent's lease current (retries, recovery).
	conditional bool
	// refusals counts the dispatches the Endpoint refused.
	refusals int
	// dispatched: an Endpoint accepted an attempt (its handler has the
	// request), or the request was resolved undeliverable: its run is
	// certain. Guarded by Node.imu. Until then the execution may still
	// be given up (a lost lease, an ended wait for a slot, Close), so a
	// delivery that finds it in flight does not count its seq as
	// received yet: the execution owes it (see begin and certain).
	dispatched bool
	// owed are the seqs of deliveries that found the execution in flight
	// before it was dispatched (guarded by Node.imu): they count as
	// received when it is dispatched (see certain), and are forgotten
	// when it is given up (the ledger delivers them again).
	owed []owedMark
	// found: another delivery found the execution in flight and left its
	// run to it (guarded by Node.imu): then a full queue does not give it
	// up (see run); that delivery may have been the last (a quarantined
	// message).
	found        bool
	cancel       context.CancelFunc
	disconnected atomic.Bool
}

// attempt is one dispatch of an execution.
type attempt struct {
	ctx      context.Context
	inline   bool
	finished atomic.Bool
}

// owedMark is the seq of a delivery, to mark received in w.
type owedMark struct {
	w   *window
	seq uint64
}

// begin registers the execution of env's request and returns it, or nil
// when the request is being processed already. Then running reports
// whether that execution was dispatched (its run is certain: the caller
// marks env's seq received); if not, env's seq (delivered through w, when
// not nil) is owed by that execution, which marks it when dispatched.
func (n *Node) begin(env *Envelope, w *window) (ex *execution, running bool) {
	n.imu.Lock()
	defer n.imu.Unlock()
	if cur := n.inflight[env.RequestID]; cur != nil {
		cur.found = true
		if !cur.dispatched && w != nil && env.Seq != 0 {
			o := owedMark{w, env.Seq}
			if !slices.Contains(cur.owed, o) {
				cur.owed = append(cur.owed, o)
			}
		}
		return nil, cur.dispatched
	}
	ex = &execution{env: env}
	n.inflight[env.RequestID] = ex
	return ex, false
}

func (n *Node) end(ex *execution) {
	n.imu.Lock()
	if n.inflight[ex.env.RequestID] == ex {
		delete(n.inflight, ex.env.RequestID)
	}
	c := ex.cancel
	ex.cancel = nil
	n.imu.Unlock()
	if c != nil {
		c()
	}
}

// disconnect marks the running execution of a request as abandoned by its
// caller and cancels its background context.
func (n *Node) disconnect(requestID string) {
	n.imu.Lock()
	ex := n.inflight[requestID]
	var c context.CancelFunc
	if ex != nil {
		ex.disconnected.Store(true)
		c = ex.cancel
	}
	n.imu.Unlock()
	if c != nil {
		c()
	}
}

// abandon ends ex, which found no room in the queue, unless another
// delivery found it in flight and left its run to it: then it reports
// false and ex must run. The check and the end are one step under imu, so
// a delivery either finds ex (and ex runs) or begins its own execution.
func (n *Node) abandon(ex *execution) bool {
	n.imu.Lock()
	defer n.imu.Unlock()
	if ex.found {
		return false
	}
	if n.inflight[ex.env.RequestID] == ex {
		delete(n.inflight, ex.env.RequestID)
	}
	return true
}

// certain records that ex's run is certain (its handler has the request,
// or it is resolved) and marks received the seq of its delivery through w
// (nil: none) and those it owes.
func (n *Node) certain(ex *execution, w *window) {
	n.imu.Lock()
	ex.dispatched = true
	owed := ex.owed
	ex.owed = nil
	n.imu.Unlock()
	n.markReceived(w, ex.env.Seq)
	for _, o := range owed {
		n.markReceived(o.w, o.seq)
	}
}
