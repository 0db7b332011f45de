package aacp

import (
	"context"
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
	return n.claim(ctx, n.claimTargets(), now, n.opts.ClaimLimit, false)
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
	msgs, err := n.store.ClaimDue(ctx, ClaimQuery{Owner: n.id, Targets: targets, Now: now, Limit: limit,
		Backoff: n.deliveryBackoff, IgnoreSchedule: ignoreSchedule})
	if err != nil {
		return 0, err
	}
	n.deliverClaimed(ctx, msgs)
	return len(msgs), nil
}

// deliverClaimed delivers claimed messages in seq order per pair. A REQUEST
// or EVENT claimed more often than the retry policy allows, and still not
// received, fails with protocol_error. Pairs whose ack is held back by a
// gap that the ledger can no longer fill (its messages expired) skip it.
// A REQUEST or EVENT to an agent this node does not own is left to its
// owner.
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
		if !seen && env.MessageType != MessageResponse && env.RequestID != "" && m.RetryCount > n.policy.MaxAttempts {
			n.giveUp(env, w, m.RetryCount)
			continue
		}
		n.receive(ctx, env, nil, false)
	}
	for _, w := range stuck {
		n.resync(ctx, w)
	}
}

// giveUp fails a request whose message this node could not hand to its
// agent in the allowed number of attempts.
func (n *Node) giveUp(env *Envelope, w *window, claims int) {
	ex, ok := n.begin(env)
	if !ok {
		return
	}
	n.settle(ex, &Resolution{RequestID: env.RequestID, Outcome: OutcomeFailed, Completion: CompletionProtocolError,
		Error:       protocolError(fmt.Sprintf("message not delivered to agent %q after %d attempts", env.TargetAgentID, claims), nil),
		CompletedAt: n.clock.Now()})
	n.markReceived(w, env.Seq)
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
		w.mu.Lock()
		if w.dirty && w.loaded {
			w.dirty = false
			if w.ack > 0 {
				acks = append(acks, Ack{Source: w.source, Target: w.target, Seq: w.ack})
				dirty = append(dirty, w)
			}
		}
		w.mu.Unlock()
	}
	if len(acks) == 0 {
		return nil
	}
	if err := n.store.Acknowledge(ctx, acks); err != nil {
		for _, w := range dirty {
			w.mu.Lock()
			w.dirty = true
			w.mu.Unlock()
		}
		return err
	}
	return nil
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
		if !slices.Contains(agents, rec.TargetAgentID) || !n.holds(rec.TargetAgentID) {
			continue
		}
		env := &Envelope{MessageID: newUUID(), RequestID: rec.RequestID, SourceAgentID: rec.SourceAgentID,
			TargetAgentID: rec.TargetAgentID, MessageType: rec.MessageType, Timestamp: rec.Timestamp, Payload: rec.Payload}
		ex, ok := n.begin(env)
		if !ok {
			continue
		}
		ex.deadline, ex.expiresAt, ex.attempts = rec.Deadline, rec.ExpiresAt, rec.Attempts+1
		ex.conditional = true
		if !n.run(ctx, ex, nil, false, true) {
			return ctx.Err()
		}
	}
	// One pass ignoring the schedule (messages stored just before a crash
	// are not due yet, those claimed by a previous owner neither); Poll
	// delivers the rest when due.
	if _, err := n.claim(ctx, targets, n.clock.Now(), 10*n.opts.ClaimLimit, true); err != nil {
		return fmt.Errorf("aacp: recover: %w", err)
	}
	return nil
}
