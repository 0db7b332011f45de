package aacp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Poll does one round of the node's background work: it renews the agent
// leases due for renewal and tries to acquire those it waits for (with a
// negative PollInterval; otherwise the lease heartbeat does, and Poll only
// acquires the leases of agents registered since), recovers the agents it
// just acquired, writes the acknowledgments gathered since the last round,
// starts the retries whose backoff elapsed, purges expired records (every
// PurgeInterval), and claims the due messages addressed to its agents and
// callers from the ledger and delivers them. It returns the number of
// messages claimed. The background loop calls it every PollInterval; with
// a negative PollInterval, call it yourself.
func (n *Node) Poll(ctx context.Context) (int, error) {
	if n.closed.Load() {
		return 0, ErrClosed
	}
	if n.opts.PollInterval < 0 || n.newAgents() {
		n.tendLeases(ctx)
	}
	n.startRecoveries()
	if err := n.flushAcks(ctx); err != nil {
		return 0, err
	}
	n.runDueRetries(ctx)
	now := n.clock.Now()
	if n.opts.PurgeInterval > 0 && now.UnixNano()-n.lastPurge.Load() >= int64(n.opts.PurgeInterval) {
		n.lastPurge.Store(now.UnixNano())
		if _, err := n.store.PurgeExpired(ctx, now); err != nil {
			n.log.Warn("aacp: purge failed", "err", err)
		}
	}
	n.drainQueue()
	// Claim no more than the node can take at once (free slots and room
	// in the queue), so that no claim waits for long; with no room, only
	// the RESPONSEs to waiting callers that are not agents.
	room := n.queueRoom()
	limit := min(n.opts.ClaimLimit, room)
	targets := n.claimTargets()
	if limit <= 0 {
		targets, limit = n.callerTargets(), n.opts.ClaimLimit
	}
	claimed, err := n.claim(ctx, targets, now, limit, false)
	if err != nil {
		return claimed, err
	}
	// Windows that refused messages and have room again: their messages
	// are claimed now, not at their retransmission time.
	n.remu.Lock()
	reopened := n.reopened
	n.reopened = nil
	n.remu.Unlock()
	for i, r := range reopened {
		left := min(n.opts.ClaimLimit, n.queueRoom())
		if left <= 0 || err != nil {
			// No room (the next slot freed polls again: starved below),
			// or the ledger failed (the next poll tries again).
			n.remu.Lock()
			n.reopened = append(n.reopened, reopened[i:]...)
			n.remu.Unlock()
			break
		}
		var c int
		c, err = n.claim(ctx, []string{r.w.target}, now, left, true)
		claimed += c
		r.w.mu.Lock()
		again := r.w.awaits()
		r.w.mu.Unlock()
		if c == left && again && r.rounds > 1 {
			n.reclaim(reopening{w: r.w, rounds: r.rounds - 1})
		}
	}
	if room <= n.opts.ClaimLimit && (claimed >= limit || len(reopened) > 0) {
		// Claims were bound by the room left: more may be due. The next
		// slot freed wakes the loop.
		n.starved.Store(true)
		if n.queueRoom() > 0 {
			n.wake()
		}
	}
	return claimed, err
}

// PurgeExpired deletes the ledger records whose ExpiresAt is at or before
// now and returns how many (Poll calls it every PurgeInterval).
func (n *Node) PurgeExpired(ctx context.Context, now time.Time) (int, error) {
	return n.store.PurgeExpired(ctx, now)
}

func (n *Node) claim(ctx context.Context, targets []string, now time.Time, limit int, ignoreSchedule bool) (int, error) {
	if len(targets) == 0 {
		return 0, nil
	}
	var fences []Fence
	for _, t := range targets {
		if f, ok := n.fenceFor(t); ok {
			fences = append(fences, f)
		}
	}
	msgs, err := n.store.ClaimDue(ctx, ClaimQuery{Owner: n.id, Targets: targets, Now: now, Limit: limit,
		Backoff: n.deliveryBackoff, IgnoreSchedule: ignoreSchedule, Fences: fences})
	if err != nil {
		return 0, err
	}
	n.deliverClaimed(ctx, msgs)
	return len(msgs), nil
}

// deliverClaimed delivers claimed messages in seq order per pair. Each
// one is handed to its handler, or waits in the node's queue for a slot
// (back-pressure defers a message, it never fails it). Pairs whose ack is
// held back by a gap that the ledger can no longer fill (its messages
// expired or were quarantined) skip it. A REQUEST or EVENT to an agent
// this node does not own is left to its owner. A message the store
// quarantined (it could not be decoded) has its request run from the
// request record instead.
func (n *Node) deliverClaimed(ctx context.Context, msgs []*MessageRecord) {
	slices.SortFunc(msgs, func(a, b *MessageRecord) int {
		if c := strings.Compare(a.Envelope.SourceAgentID, b.Envelope.SourceAgentID); c != 0 {
			return c
		}
		if c := strings.Compare(a.Envelope.TargetAgentID, b.Envelope.TargetAgentID); c != 0 {
			return c
		}
		return cmpUint(a.Envelope.Seq, b.Envelope.Seq)
	})
	var stuck []*window
	for _, m := range msgs {
		env := &m.Envelope
		if env.MessageType != MessageResponse && !n.holds(env.TargetAgentID) {
			continue
		}
		w := n.window(env.SourceAgentID, env.TargetAgentID)
		if m.DeadReason != "" {
			n.onQuarantined(ctx, m, w)
			continue
		}
		w.mu.Lock()
		err := w.load(ctx, n.store)
		seen, buffered := w.seen(env.Seq), env.Seq > w.ack
		w.mu.Unlock()
		if err != nil {
			n.log.Warn("aacp: cannot read acknowledgment state", "err", err)
			continue
		}
		if seen && buffered && m.RetryCount > 1 && !slices.Contains(stuck, w) {
			stuck = append(stuck, w)
		}
		n.receiveAs(ctx, env, runClaimed)
	}
	for _, w := range stuck {
		n.resync(ctx, w)
	}
}

// onQuarantined handles a claimed message the store quarantined: its seq
// counts as received (no gap holds the pair back), the request of a
// REQUEST or EVENT runs from its ledger record, and the waiters of a
// RESPONSE get the recorded resolution.
func (n *Node) onQuarantined(ctx context.Context, m *MessageRecord, w *window) {
	env := &m.Envelope
	n.log.Warn("aacp: message quarantined as a dead letter", "messageId", m.MessageID, "requestId", m.RequestID,
		"reason", m.DeadReason)
	w.mu.Lock()
	if w.load(ctx, n.store) == nil && w.fits(env.Seq) {
		w.mark(env.Seq)
	}
	w.mu.Unlock()
	if m.RequestID == "" {
		return
	}
	if env.MessageType == MessageResponse {
		n.notifyRecorded(ctx, m.RequestID)
		return
	}
	rec, err := n.store.GetRequestRecord(ctx, m.RequestID)
	if err != nil || rec.Status.Final() {
		if err == nil {
			n.notify(rec.Resolution())
		}
		return
	}
	n.rerun(ctx, rec, runClaimed)
}

// rerun runs a pending request again from its ledger record (recovery, or
// a message that was quarantined), as a conditional attempt: it starts
// only if the request is still pending and the agent's lease current. It
// reports false when it gave the request up because ctx ended.
func (n *Node) rerun(ctx context.Context, rec *RequestRecord, mode runMode) bool {
	env := &Envelope{MessageID: newUUID(), RequestID: rec.RequestID, SourceAgentID: rec.SourceAgentID,
		TargetAgentID: rec.TargetAgentID, MessageType: rec.MessageType, Timestamp: rec.Timestamp, Payload: rec.Payload}
	ex, _ := n.begin(env, nil)
	if ex == nil {
		return true
	}
	ex.deadline, ex.expiresAt, ex.attempts = rec.Deadline, rec.ExpiresAt, rec.Attempts+1
	ex.conditional = true
	return n.run(ctx, ex, nil, mode)
}

// resync skips a gap of w that no message in the ledger can fill.
func (n *Node) resync(ctx context.Context, w *window) {
	envs, err := n.store.GetUnacknowledgedMessages(ctx, w.source, w.target)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	lowest := uint64(0)
	for _, e := range envs {
		if e.Seq > w.ack && (lowest == 0 || e.Seq < lowest) {
			lowest = e.Seq
		}
	}
	if lowest > w.ack+1 {
		n.log.Warn("aacp: skipping sequence gap whose messages are gone from the ledger",
			"source", w.source, "target", w.target, "from", w.ack+1, "to", lowest-1)
		w.skipTo(lowest - 1)
	}
}

// flushAcks writes the acknowledgments of every window that changed.
func (n *Node) flushAcks(ctx context.Context) error {
	var ws []*window
	n.windows.Range(func(_, v any) bool {
		ws = append(ws, v.(*window))
		return true
	})
	var acks []Ack
	var dirty []*window
	for _, w := range ws {
		// Acknowledgments for a hosted agent are fenced by its lease; a
		// node that lost the lease acknowledges nothing for it (the new
		// owner delivers the messages again).
		fence, held := n.fenceFor(w.target)
		if !held && n.ep.Hosts(w.target) {
			w.mu.Lock()
			w.dirty = false
			w.mu.Unlock()
			continue
		}
		w.mu.Lock()
		if w.dirty && w.loaded {
			w.dirty = false
			if w.ack > 0 {
				acks = append(acks, Ack{Source: w.source, Target: w.target, Seq: w.ack, Fence: fence})
				dirty = append(dirty, w)
			}
		}
		w.mu.Unlock()
	}
	if len(acks) == 0 {
		return nil
	}
	if err := n.store.Acknowledge(ctx, acks); err != nil {
		if errors.Is(err, ErrLeaseLost) { // the others were recorded
			n.log.Warn("aacp: acknowledgments refused: agent lease lost", "err", err)
			n.checkFences(ctx, acks)
			return nil
		}
		for _, w := range dirty {
			w.mu.Lock()
			w.dirty = true
			w.mu.Unlock()
		}
		return err
	}
	return nil
}

// checkFences reads the lease of each agent acks were fenced for, after
// the store refused some of them, and gives up (leaseLost) those whose
// token is no longer current: the node stops claiming for those agents.
func (n *Node) checkFences(ctx context.Context, acks []Ack) {
	var seen []Fence
	for _, a := range acks {
		f := a.Fence
		if f.IsZero() || slices.Contains(seen, f) {
			continue
		}
		seen = append(seen, f)
		l, err := n.store.GetLease(ctx, f.AgentID)
		switch {
		case errors.Is(err, ErrNotFound):
			n.leaseLost(f)
		case err == nil && (l.Owner == "" || l.Token != f.Token):
			n.leaseLost(f)
		}
	}
}

// Recover resumes after a restart: it
// queries the ledger for the requests still pending for the agents this
// node owns and runs them again (handlers are idempotent; requests
// recorded COMPLETED or FAILED never run again: each run starts with a
// conditional update that fails on a final request), then redelivers every
// unacknowledged message addressed to this node's agents at once, whatever
// its schedule. Start calls it; so does Poll for the agents whose lease
// the node takes over.
func (n *Node) Recover(ctx context.Context) error {
	return n.recoverAgents(ctx, n.heldAgents(), n.claimTargets())
}

// recoverAgents runs the pending requests of agents again, then claims the
// unacknowledged messages of targets.
func (n *Node) recoverAgents(ctx context.Context, agents, targets []string) error {
	pending, err := n.store.ListPendingRequests(ctx, time.Time{})
	if err != nil {
		return fmt.Errorf("aacp: recover: %w", err)
	}
	for _, rec := range pending {
		if n.closed.Load() { // Close began: no new work
			return ErrClosed
		}
		if !slices.Contains(agents, rec.TargetAgentID) || !n.holds(rec.TargetAgentID) {
			continue
		}
		if !n.rerun(ctx, rec, runBlocking) {
			if err := ctx.Err(); err != nil {
				return err
			}
			return ErrClosed
		}
	}
	if n.closed.Load() {
		return ErrClosed
	}
	// One pass ignoring the schedule (messages stored just before a crash
	// are not due yet, those claimed by a previous owner neither); Poll
	// delivers the rest when due.
	if _, err := n.claim(ctx, targets, n.clock.Now(), 10*n.opts.ClaimLimit, true); err != nil {
		return fmt.Errorf("aacp: recover: %w", err)
	}
	return nil
}
