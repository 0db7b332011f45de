package aacp

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/mcp"
)

func (n *Node) markReceived(w *window, seq uint64) {
	if w == nil || seq == 0 {
		return
	}
	w.mu.Lock()
	w.mark(seq)
	refused := w.reopen()
	buffered := len(w.above)
	w.mu.Unlock()
	if refused > 0 {
		// Claims go through the pair's unacknowledged messages oldest
		// first: those buffered above a gap and those in process here
		// too. Enough rounds to reach them all, a bound if they are gone.
		unacked := refused + buffered + n.queueLimit() + cap(n.sem)
		n.reclaim(reopening{w: w, rounds: unacked/max(n.opts.ClaimLimit, 1) + 2})
	}
}

// reopening is a window that refused messages and has room again: the
// next polls claim its target's unacknowledged messages whatever their
// schedule, for at most rounds claims.
type reopening struct {
	w      *window
	rounds int
}

// reclaim makes the next poll claim the messages of a window that has room
// again, and wakes the loop.
func (n *Node) reclaim(r reopening) {
	n.remu.Lock()
	i := slices.IndexFunc(n.reopened, func(o reopening) bool { return o.w == r.w })
	if i < 0 {
		n.reopened = append(n.reopened, r)
	} else {
		n.reopened[i].rounds = max(n.reopened[i].rounds, r.rounds)
	}
	n.remu.Unlock()
	n.wake()
}

// runMode says how an execution is dispatched.
type runMode uint8

const (
	// runInline: on the calling goroutine.
	runInline runMode = iota
	// runQueued: on a background goroutine; without a free slot it waits
	// in the node's queue, unless that is full (then the message is left
	// to the ledger, which delivers it again; an execution another
	// delivery found in flight waits all the same).
	runQueued
	// runClaimed: like runQueued, but it always waits in the queue: the
	// claim that delivered it was sized on the room left.
	runClaimed
	// runBlocking: on a background goroutine, waiting for a free slot
	// (recovery).
	runBlocking
)

// receive handles one envelope addressed to a local agent or caller.
// inline runs the handler on this goroutine. fresh, if not nil, is the
// execution the sender began before it claimed the request id in the
// ledger (enqueueNew): it runs without reading the ledger again. Any other
// delivery reads the ledger before it runs.
func (n *Node) receive(ctx context.Context, env *Envelope, fresh *execution, inline bool) {
	mode := runQueued
	if inline {
		mode = runInline
	}
	n.receiveFresh(ctx, env, mode, fresh)
}

func (n *Node) receiveAs(ctx context.Context, env *Envelope, mode runMode) {
	n.receiveFresh(ctx, env, mode, nil)
}

// receiveFresh is receiveAs for a message whose sender began its
// execution fresh (nil: none): every path that does not run it ends it.
func (n *Node) receiveFresh(ctx context.Context, env *Envelope, mode runMode, fresh *execution) {
	if env.Ack > 0 {
		n.notePeerAck(env.TargetAgentID, env.SourceAgentID, env.Ack)
	}
	w := n.window(env.SourceAgentID, env.TargetAgentID)
	w.mu.Lock()
	if err := w.load(ctx, n.store); err != nil {
		w.mu.Unlock()
		n.endFresh(fresh)
		n.log.Warn("aacp: cannot read acknowledgment state; message left for redelivery", "err", err)
		return
	}
	switch {
	case w.seen(env.Seq) && fresh == nil:
		// A duplicate messageId, or a retransmission of a seq that
		// arrived: ignored, and acknowledged again. (A fresh message
		// checks fresh == nil: another path that delivers it meanwhile
		// finds it being processed, not dispatched, and leaves its seq
		// unmarked, or, for a quarantined delivery, marks it; either
		// way the fresh execution runs on, whatever the window.)
		w.dirty = true
		w.mu.Unlock()
		return
	case !w.fits(env.Seq):
		// Too far ahead of a gap: refused, left in the ledger, and claimed
		// again as soon as the gap closes (see window.reopen).
		w.refuse(env.Seq)
		w.mu.Unlock()
		n.endFresh(fresh)
		return
	case env.MessageType == MessageResponse:
		w.mark(env.Seq)
		w.mu.Unlock()
		n.endFresh(fresh)
		n.onResponse(env)
		return
	}
	w.mu.Unlock()
	n.onRequest(ctx, env, w, mode, fresh)
}

// endFresh ends the execution a sender began, if any (see receive).
func (n *Node) endFresh(ex *execution) {
	if ex != nil {
		n.end(ex)
	}
}

// receiveResponseReceipt records the receipt of a RESPONSE whose
// resolution was handed to local waiters directly.
func (n *Node) receiveResponseReceipt(ctx context.Context, env *Envelope) {
	if env.Ack > 0 {
		n.notePeerAck(env.TargetAgentID, env.SourceAgentID, env.Ack)
	}
	w := n.window(env.SourceAgentID, env.TargetAgentID)
	w.mu.Lock()
	if w.load(ctx, n.store) == nil && w.fits(env.Seq) {
		w.mark(env.Seq)
	}
	w.mu.Unlock()
}

// onRequest runs the receiver's processing order for a REQUEST or EVENT:
// deduplication check (in this process, then the ledger's final state),
// cached result, execution (then the retry decision and backoff in
// finish). fresh (may be nil) is the execution the sender began before
// it claimed the request id: the claim was the ledger's check.
func (n *Node) onRequest(ctx context.Context, env *Envelope, w *window, mode runMode, fresh *execution) {
	if !n.owns(ctx, env.TargetAgentID) {
		n.endFresh(fresh)
		return // another Node owns the agent: left in the ledger for it
	}
	if fresh != nil {
		if f := n.opts.OnMessageReceived; f != nil {
			f(env)
		}
		n.run(ctx, fresh, w, mode)
		return
	}
	if env.RequestID == "" { // an EVENT from a sender that gave it no requestId
		n.run(ctx, &execution{env: env, attempts: 1}, w, mode)
		return
	}
	ex, running := n.begin(env, w)
	if ex == nil {
		// Being processed already. Its seq counts as received only when
		// that run is certain (dispatched): one not dispatched yet may
		// still be given up (a fresh send's delivery finds the agent's
		// lease lapsed or its window unreadable, a wait for a slot ends,
		// Close), and a seq marked now would make every later delivery a
		// duplicate, acked and never run. Until then it is owed: marked
		// by that run's dispatch, or, if the run is given up, delivered
		// again by the ledger.
		if running {
			n.markReceived(w, env.Seq)
		}
		return
	}
	// Read after begin: a run of this request that ended before begin
	// recorded its resolution first, and none can start until ex ends.
	rec, err := n.store.GetRequestRecord(ctx, env.RequestID)
	switch {
	case errors.Is(err, ErrNotFound):
		n.end(ex)
		n.markReceived(w, env.Seq)
		n.log.Warn("aacp: message without request record (expired?) dropped", "requestId", env.RequestID, "messageId", env.MessageID)
		return
	case err != nil:
		n.end(ex)
		n.log.Warn("aacp: cannot read request record; message left for redelivery", "requestId", env.RequestID, "err", err)
		return
	case rec.Status.Final():
		// Resolved already: never run again; callers here get the
		// recorded result (its RESPONSE is in the ledger already).
		n.end(ex)
		n.markReceived(w, env.Seq)
		n.notify(rec.Resolution())
		return
	}
	ex.deadline, ex.expiresAt = rec.Deadline, rec.ExpiresAt
	ex.attempts = rec.Attempts + 1
	if f := n.opts.OnMessageReceived; f != nil {
		f(env)
	}
	n.run(ctx, ex, w, mode)
}

// queued is an execution waiting for a background slot.
type queued struct {
	ex *execution
	w  *window
}

// run dispatches ex as mode says. It reports false when ex was given up
// (the context ended while waiting for a slot, or the queue is full): its
// message stays in the ledger, which delivers it again.
func (n *Node) run(ctx context.Context, ex *execution, w *window, mode runMode) bool {
	switch mode {
	case runInline:
		n.dispatch(ctx, ex, w, true)
		return true
	case runBlocking:
		select {
		case n.sem <- struct{}{}:
		default:
			n.waited(ex)
			select {
			case n.sem <- struct{}{}:
			case <-ctx.Done():
				n.end(ex)
				return false
			case <-n.stop: // Close began: no new work
				n.end(ex)
				return false
			}
		}
	default:
		select {
		case n.sem <- struct{}{}:
		default:
			n.waited(ex)
			if !n.enqueueRun(ex, w, mode == runClaimed) {
				if n.abandon(ex) {
					return false
				}
				n.enqueueRun(ex, w, true)
			}
			n.drainQueue() // a slot may have freed meanwhile
			return true
		}
	}
	n.startWorker(ex, w)
	return true
}

// waited marks ex, which waits for a slot, as a conditional attempt: the
// ledger read before the wait may be stale when a worker takes it (the
// request recorded final meanwhile, or the agent's lease lost), so the
// ledger is read again, with the lease's fence, right before it runs.
func (n *Node) waited(ex *execution) {
	if ex.env.RequestID != "" {
		ex.conditional = true
	}
}

// queueLimit bounds the executions waiting for a background slot (claims
// may exceed it by one claim's worth: they are sized on the room left).
func (n *Node) queueLimit() int { return n.opts.MaxBackground + n.opts.ClaimLimit }

// enqueueRun adds ex to the queue of executions waiting for a slot; a full
// queue refuses it unless force.
func (n *Node) enqueueRun(ex *execution, w *window, force bool) bool {
	n.qmu.Lock()
	defer n.qmu.Unlock()
	if !force && len(n.queue) >= n.queueLimit() {
		return false
	}
	n.queue = append(n.queue, queued{ex, w})
	return true
}

// popQueued removes and returns the oldest queued execution, if any.
func (n *Node) popQueued() (queued, bool) {
	n.qmu.Lock()
	defer n.qmu.Unlock()
	if len(n.queue) == 0 {
		return queued{}, false
	}
	q := n.queue[0]
	n.queue[0] = queued{}
	n.queue = n.queue[1:]
	if len(n.queue) == 0 {
		n.queue = nil
	}
	return q, true
}

// queueRoom returns how many more executions the node can take now: its
// capacity (slots plus the queue's limit) less every execution it holds:
// running, queued, and waiting in the retries (a handler's retry, or one
// its Endpoint refused), so that failing requests cannot pile up while
// polls keep claiming.
func (n *Node) queueRoom() int {
	n.qmu.Lock()
	held := len(n.sem) + len(n.queue)
	n.qmu.Unlock()
	n.rmu.Lock()
	held += len(n.retries)
	n.rmu.Unlock()
	return max(cap(n.sem)+n.queueLimit()-held, 0)
}

// drainQueue starts queued executions while slots are free.
func (n *Node) drainQueue() {
	for {
		select {
		case n.sem <- struct{}{}:
		default:
			return
		}
		q, ok := n.popQueued()
		if !ok {
			<-n.sem
			return
		}
		n.startWorker(q.ex, q.w)
	}
}

// dropQueue ends the queued executions (Close): their requests stay
// pending in the ledger for recovery.
func (n *Node) dropQueue() {
	for {
		q, ok := n.popQueued()
		if !ok {
			return
		}
		n.end(q.ex)
	}
}

// startWorker runs ex on a background goroutine holding a slot taken by
// the caller, then the queued executions, and frees the slot when the
// queue is empty.
func (n *Node) startWorker(ex *execution, w *window) {
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		for {
			if n.closed.Load() {
				// Close began: no new work; the request stays pending
				// for recovery.
				n.end(ex)
			} else {
				n.dispatch(n.ctx, ex, w, false)
			}
			q, ok := n.popQueued()
			if !ok {
				break
			}
			ex, w = q.ex, q.w
		}
		<-n.sem
		if !n.closed.Load() {
			n.drainQueue() // queued after the check above
			if n.starved.CompareAndSwap(true, false) {
				n.wake() // a poll left due messages for lack of room
			}
		}
	}()
}

func (n *Node) dispatch(ctx context.Context, ex *execution, w *window, inline bool) {
	if ex.conditional && !n.startAttempt(ctx, ex) {
		return
	}
	a := &attempt{ctx: ctx, inline: inline}
	if !inline {
		var cancel context.CancelFunc
		if !ex.deadline.IsZero() && ex.deadline.After(time.Now()) {
			a.ctx, cancel = context.WithDeadline(ctx, ex.deadline)
		} else {
			a.ctx, cancel = context.WithCancel(ctx)
		}
		n.imu.Lock()
		ex.cancel = cancel
		n.imu.Unlock()
		if ex.disconnected.Load() {
			cancel()
		}
	}
	err := n.ep.Dispatch(a.ctx, ex.env, func(result any, err error) { n.finish(ex, a, result, err) })
	if err != nil {
		if errors.Is(err, ErrUndeliverable) && ex.env.RequestID != "" {
			n.settle(ex, &Resolution{RequestID: ex.env.RequestID, Outcome: OutcomeFailed, Completion: CompletionProtocolError,
				Error: protocolError("message cannot be delivered", err), CompletedAt: n.clock.Now(), Attempts: ex.attempts})
			n.certain(ex, w)
			return
		}
		n.deferRefused(ex) // the handler never saw it: back-pressure
		return
	}
	n.certain(ex, w)
}

// settleBackoff spaces the retries of a resolution whose write failed: the
// request's seq is marked received once its handler has it, so the ledger
// will not deliver it again, and a resolution lost to a transient error of
// the store (a busy SQLite database, a dropped PostgreSQL connection)
// would leave the request pending until the next recovery (a restart or
// a takeover of the agent's lease).
var settleBackoff = [...]time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 250 * time.Millisecond, time.Second, 4 * time.Second}

// retryWrite runs write, and again after each settleBackoff step while it
// fails with an error other than ErrLeaseLost and the Node is open. A
// write that fails wrote nothing (the store's contract), so running it
// again is safe.
func (n *Node) retryWrite(write func() (bool, error)) (applied bool, err error) {
	for _, d := range settleBackoff {
		if applied, err = write(); err == nil || errors.Is(err, ErrLeaseLost) {
			return applied, err
		}
		n.log.Debug("aacp: recording a resolution failed; trying again", "in", d, "err", err)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-n.ctx.Done():
			t.Stop()
			return applied, err
		}
	}
	return write()
}

// deferRefused schedules again, soon, an execution its Endpoint refused
// (an agent's full queue: back-pressure). It stays in flight, and the
// refusal counts as no attempt. An EVENT without a requestId is left to
// the ledger instead, which delivers it again.
func (n *Node) deferRefused(ex *execution) {
	if ex.env.RequestID == "" || n.ctx.Err() != nil {
		n.end(ex)
		return
	}
	ex.refusals++
	ex.attempts-- // runRetry counts the next start again
	n.requeueAt(ex, n.clock.Now().Add(min(n.policy.Backoff(ex.refusals, n.rand()), n.opts.RetransmitTimeout)))
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// finish classifies the outcome of one attempt (a Completion), then either
// schedules a retry or records the resolution.
func (n *Node) finish(ex *execution, a *attempt, result any, err error) {
	if !a.finished.CompareAndSwap(false, true) {
		return // the Endpoint called done twice
	}
	if ex.env.RequestID == "" {
		n.end(ex)
		return
	}
	now := n.clock.Now()
	ctxErr := a.ctx.Err()
	// Deadlines come from contexts: they are compared with the wall clock.
	late := (!ex.deadline.IsZero() && time.Now().After(ex.deadline)) || errors.Is(ctxErr, context.DeadlineExceeded)
	disc := ex.disconnected.Load() || (a.inline && errors.Is(ctxErr, context.Canceled))
	var raw jsontext.Value
	if err == nil {
		if raw, err = encodeValue(result); err != nil {
			err = &mcp.StructuredError{Code: mcp.ErrInternal, Message: "result is not JSON: " + err.Error()}
		}
	}
	res := &Resolution{RequestID: ex.env.RequestID, CompletedAt: now, Attempts: ex.attempts}
	switch {
	case err == nil:
		res.Outcome, res.Result, res.Completion = OutcomeCompleted, json.RawMessage(raw), CompletionSuccess
		if late {
			res.Completion = CompletionLateCompleted
		} else if disc {
			res.Completion = CompletionDisconnectedCompleted
		}
	case n.ctx.Err() != nil && !a.inline:
		n.end(ex) // the node is closing: the request stays pending for recovery
		return
	case errors.Is(err, ErrUndeliverable):
		res.Outcome, res.Completion, res.Error = OutcomeFailed, CompletionProtocolError, protocolError("message cannot be processed", err)
	case disc && isContextErr(err):
		res.Outcome, res.Completion = OutcomeFailed, CompletionAborted
		res.Error = &mcp.StructuredError{Code: CodeAborted, Message: "the caller disconnected and the handler was aborted: " + err.Error()}
	default:
		se := toStructured(err)
		completion := CompletionToolError
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			completion = CompletionTimeout
			if se.Code == mcp.ErrInternal {
				se = &mcp.StructuredError{Code: mcp.ErrTimeout, Message: "the handler exceeded its deadline: " + err.Error()}
			}
		case late:
			completion = CompletionLateCompleted
		}
		if !disc && !isPermanent(err) && ex.attempts < n.policy.MaxAttempts && n.policy.ShouldRetry(se) {
			n.scheduleRetry(ex, se, now)
			return
		}
		res.Outcome, res.Completion, res.Error = OutcomeFailed, completion, se
	}
	n.settle(ex, res)
}

// scheduleRetry records the failed attempt and schedules the next one
// after the policy's backoff. The execution stays in flight meanwhile. The
// record is a conditional update: a request that became final meanwhile
// (MarkFailed from outside, for one) keeps its state and is not retried,
// and neither is one whose agent's lease this node lost.
func (n *Node) scheduleRetry(ex *execution, se *mcp.StructuredError, now time.Time) {
	ctx := context.Background()
	fence, ok := n.fenceFor(ex.env.TargetAgentID)
	if !ok {
		n.end(ex) // the agent's new owner recovers the request
		return
	}
	applied, err := n.store.UpdateRetry(ctx, &RetryUpdate{RequestID: ex.env.RequestID, Attempts: ex.attempts, Error: se, Fence: fence})
	switch {
	case errors.Is(err, ErrLeaseLost):
		n.end(ex)
		n.leaseLost(fence)
		return
	case err != nil:
		// The retry stays scheduled: its start is conditional too.
		n.log.Warn("aacp: cannot record failed attempt", "requestId", ex.env.RequestID, "err", err)
	case !applied:
		n.end(ex)
		n.notifyRecorded(ctx, ex.env.RequestID)
		return
	}
	n.requeue(ex, now)
}

// requeue schedules ex's next attempt after the policy's backoff.
func (n *Node) requeue(ex *execution, now time.Time) {
	n.requeueAt(ex, now.Add(n.policy.Backoff(ex.attempts, n.rand())))
}

// requeueAt schedules ex's next attempt at due.
func (n *Node) requeueAt(ex *execution, due time.Time) {
	ex.due = due
	n.imu.Lock()
	c := ex.cancel
	ex.cancel = nil
	n.imu.Unlock()
	if c != nil {
		c()
	}
	n.rmu.Lock()
	n.retries = append(n.retries, ex)
	n.rmu.Unlock()
}

// runDueRetries starts the retries whose backoff elapsed.
func (n *Node) runDueRetries(ctx context.Context) {
	now := n.clock.Now()
	n.rmu.Lock()
	var due []*execution
	keep := n.retries[:0]
	for _, ex := range n.retries {
		if ex.due.After(now) {
			keep = append(keep, ex)
		} else {
			due = append(due, ex)
		}
	}
	clear(n.retries[len(keep):])
	n.retries = keep
	n.rmu.Unlock()
	for i, ex := range due {
		if !n.runRetry(ex) { // no slot: try again at the next poll
			n.rmu.Lock()
			n.retries = append(n.retries, due[i:]...)
			n.rmu.Unlock()
			return
		}
	}
}

// runRetry starts a retry on a background goroutine if a slot is free; the
// execution stays in flight either way.
func (n *Node) runRetry(ex *execution) bool {
	select {
	case n.sem <- struct{}{}:
	default:
		return false
	}
	ex.attempts++
	ex.conditional = true
	n.startWorker(ex, nil)
	return true
}

// settle records res durably (with the RESPONSE of a REQUEST, in the same
// transaction), then tells local waiters and hooks, then hands the RESPONSE
// to a local caller.
func (n *Node) settle(ex *execution, res *Resolution) {
	ctx := context.Background()
	env := ex.env
	var (
		applied bool
		err     error
		resp    *MessageRecord
		local   bool
	)
	fence, fenced := n.fenceFor(env.TargetAgentID)
	if env.MessageType == MessageRequest {
		local = n.hostsLocally(env.SourceAgentID)
		now := res.CompletedAt
		expires := ex.expiresAt
		if expires.IsZero() {
			expires = now.Add(n.opts.DefaultTTL)
		}
		id := newUUID()
		payload := encodeResponse(res)
		if err := checkSize("response payload", len(payload), MaxPayloadBytes); err != nil {
			// A result (or error) too large to deliver: the request
			// fails with a reason its sender can act on.
			*res = Resolution{RequestID: res.RequestID, Outcome: OutcomeFailed, Completion: CompletionToolError,
				CompletedAt: res.CompletedAt, Attempts: res.Attempts,
				Error: &mcp.StructuredError{Code: mcp.ErrResourceExhausted, Message: "the handler's " + err.Error()}}
			payload = encodeResponse(res)
		}
		resp = &MessageRecord{
			MessageID: id, RequestID: env.RequestID, Status: OutcomeUnknown, Timestamp: now,
			ExpiresAt: expires, NextRetryAt: now,
			Envelope: Envelope{MessageID: id, RequestID: env.RequestID, SourceAgentID: env.TargetAgentID,
				TargetAgentID: env.SourceAgentID, MessageType: MessageResponse, Timestamp: now, Payload: json.RawMessage(payload)},
		}
		if local {
			resp.NextRetryAt = now.Add(n.opts.RetransmitTimeout)
		}
		if fenced {
			applied, err = n.retryWrite(func() (bool, error) {
				return n.withSeq(ctx, env.TargetAgentID, env.SourceAgentID, &resp.Envelope, seqOp{res: res, msg: resp, fence: fence})
			})
		}
	} else if fenced {
		applied, err = n.retryWrite(func() (bool, error) { return n.store.Resolve(ctx, res, nil, fence) })
	}
	n.end(ex)
	if !fenced || errors.Is(err, ErrLeaseLost) {
		// Another Node owns the agent now: it runs the request again and
		// resolves it; local waiters learn that through the ledger.
		n.log.Warn("aacp: agent lease lost; the resolution is left to the agent's new owner", "requestId", env.RequestID,
			"agent", env.TargetAgentID)
		if fenced {
			n.leaseLost(fence)
		}
		return
	}
	if err != nil {
		// Not durable, so not reported: local callers learn UNKNOWN.
		n.log.Warn("aacp: cannot record resolution; the request stays pending", "requestId", env.RequestID, "err", err)
		n.notify(&Resolution{RequestID: env.RequestID, Outcome: OutcomeUnknown})
		return
	}
	if !applied { // resolved by someone else first: that resolution stands
		rec, err := n.store.GetRequestRecord(ctx, env.RequestID)
		if err == nil && rec.Status.Final() {
			n.notify(rec.Resolution())
		}
		return
	}
	n.notify(res)
	n.hookCompleted(env, res)
	if resp != nil && local {
		// The local waiters have the resolution: only the RESPONSE's
		// receipt remains to be acknowledged.
		n.receiveResponseReceipt(ctx, &resp.Envelope)
	}
}

// responsePayload is the payload of a RESPONSE: the resolution of its
// request.
type responsePayload struct {
	Outcome       Outcome              `json:"outcome"`
	Completion    Completion           `json:"completion,omitempty"`
	Result        jsontext.Value       `json:"result,omitzero"`
	Error         *mcp.StructuredError `json:"error,omitempty"`
	CompletionRef string               `json:"completionRef,omitempty"`
	Attempts      int                  `json:"attempts,omitzero"`
}

// encodeResponse returns the RESPONSE payload of res; the common case (a
// success with an inline result) is assembled without reflection.
func encodeResponse(res *Resolution) jsontext.Value {
	if res.Outcome == OutcomeCompleted && res.Error == nil && res.CompletionRef == "" && len(res.Result) > 0 {
		b := make([]byte, 0, len(res.Result)+96)
		b = append(b, `{"outcome":"COMPLETED","completion":"`...)
		b = append(b, res.Completion...)
		b = append(b, `","result":`...)
		b = append(b, res.Result...)
		b = append(b, `,"attempts":`...)
		b = strconv.AppendInt(b, int64(res.Attempts), 10)
		return append(b, '}')
	}
	b, err := jsonv2.Marshal(&responsePayload{Outcome: res.Outcome, Completion: res.Completion, Result: jsontext.Value(res.Result),
		Error: res.Error, CompletionRef: res.CompletionRef, Attempts: res.Attempts}, jsonv2.Deterministic(true))
	if err != nil { // details that cannot be encoded
		b, _ = jsonv2.Marshal(&responsePayload{Outcome: res.Outcome, Completion: res.Completion,
			Error: &mcp.StructuredError{Code: res.Error.Code, Message: res.Error.Message}, Attempts: res.Attempts})
	}
	return b
}

// onResponse hands the resolution a RESPONSE carries to local waiters. It
// is durable: the RESPONSE was stored with the resolution.
func (n *Node) onResponse(env *Envelope) {
	var p responsePayload
	if err := jsonv2.Unmarshal(env.Payload, &p, strictOptions); err != nil || !p.Outcome.Final() {
		n.log.Warn("aacp: malformed RESPONSE payload ignored", "messageId", env.MessageID, "requestId", env.RequestID)
		return
	}
	n.notify(&Resolution{RequestID: env.RequestID, Outcome: p.Outcome, Completion: p.Completion, Result: json.RawMessage(p.Result),
		Error: p.Error, CompletionRef: p.CompletionRef, CompletedAt: env.Timestamp, Attempts: p.Attempts})
}

// startAttempt records that attempt ex.attempts of a pending request
// starts, as a conditional update, and reports whether it may run. It may
// not when the request is final by now (its waiters get the recorded
// resolution) or when this node lost the agent's lease; both end ex. When
// the ledger cannot tell, the attempt is scheduled again later.
func (n *Node) startAttempt(ctx context.Context, ex *execution) bool {
	fence, ok := n.fenceFor(ex.env.TargetAgentID)
	if !ok {
		n.end(ex)
		return false
	}
	applied, err := n.store.UpdateRetry(ctx, &RetryUpdate{RequestID: ex.env.RequestID, Attempts: ex.attempts, Fence: fence})
	switch {
	case errors.Is(err, ErrLeaseLost):
		n.end(ex)
		n.leaseLost(fence)
		return false
	case errors.Is(err, ErrNotFound):
		n.end(ex)
		return false
	case err != nil:
		if n.ctx.Err() != nil {
			n.end(ex) // closing: the request stays pending for recovery
			return false
		}
		n.log.Warn("aacp: cannot record the start of an attempt; trying later", "requestId", ex.env.RequestID, "err", err)
		ex.attempts--
		n.requeue(ex, n.clock.Now())
		return false
	case !applied:
		n.end(ex)
		n.notifyRecorded(ctx, ex.env.RequestID)
		return false
	}
	return true
}

// notifyRecorded hands the recorded resolution of a request that is final
// to its local waiters.
func (n *Node) notifyRecorded(ctx context.Context, requestID string) {
	if rec, err := n.store.GetRequestRecord(ctx, requestID); err == nil && rec.Status.Final() {
		n.notify(rec.Resolution())
	}
}
