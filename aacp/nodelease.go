package aacp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// agentLease is what a Node knows of the lease of one agent it hosts.
type agentLease struct {
	lease Lease // the lease held (when held)
	held  bool
	// validUntil is when the node stops counting on the lease unless it
	// renewed it (by the node's clock, measured from before the store call
	// that set the lease's expiry: the system clock's monotonic reading in
	// production).
	validUntil time.Time
	// next is when the node renews the lease (held) or tries to acquire
	// it (not held).
	next time.Time
}

// checkLeaseOptions validates the lease options (zero ones have their
// defaults already).
func (o *Options) checkLeaseOptions() error {
	if o.LeaseTTL < MinLeaseTTL || o.LeaseTTL > MaxLeaseTTL {
		return fmt.Errorf("aacp: Options.LeaseTTL %v is outside its bounds [%v, %v]", o.LeaseTTL, MinLeaseTTL, MaxLeaseTTL)
	}
	if o.LeaseRenewInterval < MinLeaseRenewInterval || o.LeaseRenewInterval > o.LeaseTTL/2 {
		return fmt.Errorf("aacp: Options.LeaseRenewInterval %v is outside its bounds [%v, LeaseTTL/2 = %v]",
			o.LeaseRenewInterval, MinLeaseRenewInterval, o.LeaseTTL/2)
	}
	return nil
}

// Owns reports whether this node holds the lease of agentID now: whether it
// runs the agent's requests. A hosted agent whose lease another Node holds
// is not owned; this node tries to acquire it every LeaseRenewInterval and
// takes it over once it expires.
func (n *Node) Owns(agentID string) bool { return n.holds(agentID) }

// holds reports whether this node holds a lease on agentID that it has
// not seen expire.
func (n *Node) holds(agentID string) bool {
	n.lmu.RLock()
	al := n.leases[agentID]
	ok := al != nil && al.held && n.clock.Now().Before(al.validUntil)
	n.lmu.RUnlock()
	return ok
}

// owns is holds, after a first attempt to acquire the lease of an agent
// the Endpoint hosts but the node did not know yet (registered after
// Start).
func (n *Node) owns(ctx context.Context, agentID string) bool {
	n.lmu.RLock()
	al := n.leases[agentID]
	n.lmu.RUnlock()
	if al == nil && !n.closed.Load() && n.ep.Hosts(agentID) {
		n.tendLeases(ctx)
	}
	return n.holds(agentID)
}

// fenceFor returns the fence of this node's lease on agentID, if it holds
// one (expired or not: the store decides whether it is current).
func (n *Node) fenceFor(agentID string) (Fence, bool) {
	n.lmu.RLock()
	defer n.lmu.RUnlock()
	if al := n.leases[agentID]; al != nil && al.held {
		return al.lease.Fence(), true
	}
	return Fence{}, false
}

// heldAgents returns the agents whose lease this node holds.
func (n *Node) heldAgents() []string {
	now := n.clock.Now()
	n.lmu.RLock()
	defer n.lmu.RUnlock()
	var out []string
	for id, al := range n.leases {
		if al.held && now.Before(al.validUntil) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// leaseLost records that the store refused f: another Node owns the agent.
func (n *Node) leaseLost(f Fence) {
	n.lmu.Lock()
	defer n.lmu.Unlock()
	if al := n.leases[f.AgentID]; al != nil && al.held && al.lease.Token == f.Token {
		al.held = false
		al.next = n.clock.Now().Add(n.opts.LeaseRenewInterval)
		n.log.Warn("aacp: agent lease lost to another node", "agent", f.AgentID, "token", f.Token)
	}
}

// newAgents reports whether the Endpoint hosts agents the node has no
// lease state for.
func (n *Node) newAgents() bool {
	agents := n.ep.Agents()
	n.lmu.RLock()
	defer n.lmu.RUnlock()
	for _, id := range agents {
		if n.leases[id] == nil {
			return true
		}
	}
	return false
}

// tendLeases renews the leases due for renewal, tries to acquire those of
// hosted agents it does not hold (when due), and releases those of agents
// no longer hosted. Agents acquired are queued for recovery (Poll runs
// it). It returns how long until the next renewal or attempt is due.
func (n *Node) tendLeases(ctx context.Context) time.Duration {
	n.tendMu.Lock()
	defer n.tendMu.Unlock()
	agents := n.ep.Agents()
	interval := n.opts.LeaseRenewInterval
	n.lmu.RLock()
	var gone []string
	for id := range n.leases {
		if !slices.Contains(agents, id) {
			gone = append(gone, id)
		}
	}
	n.lmu.RUnlock()
	for _, id := range gone {
		n.lmu.Lock()
		al := n.leases[id]
		delete(n.leases, id)
		n.lmu.Unlock()
		if al.held {
			n.release(ctx, &al.lease)
		}
	}

	wake := interval
	var acquired []string
	for _, id := range agents {
		n.lmu.RLock()
		al := n.leases[id]
		var cur agentLease
		if al != nil {
			cur = *al
		}
		n.lmu.RUnlock()
		start := n.clock.Now()
		if al != nil && start.Before(cur.next) {
			wake = min(wake, cur.next.Sub(start))
			continue
		}
		next := cur
		switch {
		case cur.held:
			l, err := n.store.RenewLease(ctx, &cur.lease, start, n.opts.LeaseTTL)
			switch {
			case err == nil:
				next.lease, next.validUntil, next.next = *l, start.Add(n.opts.LeaseTTL), start.Add(interval)
			case errors.Is(err, ErrLeaseLost):
				n.log.Warn("aacp: agent lease lost to another node", "agent", id, "token", cur.lease.Token)
				next.held, next.next = false, start.Add(interval)
			default:
				// Try again soon; the lease stays valid until validUntil.
				n.log.Warn("aacp: cannot renew agent lease", "agent", id, "err", err)
				next.next = start.Add(max(interval/4, MinLeaseRenewInterval))
			}
		default:
			l, err := n.store.AcquireLease(ctx, id, n.id, start, n.opts.LeaseTTL)
			switch {
			case err == nil:
				next = agentLease{lease: *l, held: true, validUntil: start.Add(n.opts.LeaseTTL), next: start.Add(interval)}
				acquired = append(acquired, id)
				if cur.lease.Token != 0 || l.Token > 1 {
					n.log.Info("aacp: agent lease acquired", "agent", id, "token", l.Token)
				}
			case errors.Is(err, ErrLeaseHeld):
				next.next = start.Add(interval)
			default:
				n.log.Warn("aacp: cannot acquire agent lease", "agent", id, "err", err)
				next.next = start.Add(interval)
			}
		}
		n.lmu.Lock()
		if n.leases[id] == al { // unchanged meanwhile (tendMu is held)
			n.leases[id] = &next
		}
		n.lmu.Unlock()
		wake = min(wake, max(next.next.Sub(n.clock.Now()), 0))
	}
	if len(acquired) > 0 {
		n.resetWindows(acquired)
		n.recMu.Lock()
		n.toRecover = append(n.toRecover, acquired...)
		n.recMu.Unlock()
	}
	return wake
}

// resetWindows makes the receiver windows of the agents' pairs read the
// ledger's acknowledgments again (another Node may have advanced them
// while it owned the agents).
func (n *Node) resetWindows(agents []string) {
	n.windows.Range(func(_, v any) bool {
		w := v.(*window)
		if slices.Contains(agents, w.target) {
			w.mu.Lock()
			w.loaded = false
			w.mu.Unlock()
		}
		return true
	})
}

// release gives a lease back (best effort: if it fails, the lease expires).
func (n *Node) release(ctx context.Context, l *Lease) {
	if err := n.store.ReleaseLease(ctx, l); err != nil && !errors.Is(err, ErrLeaseLost) {
		n.log.Warn("aacp: cannot release agent lease", "agent", l.AgentID, "err", err)
	}
}

// releaseLeases releases every lease the node holds (Close).
func (n *Node) releaseLeases(ctx context.Context) {
	n.tendMu.Lock()
	defer n.tendMu.Unlock()
	n.lmu.Lock()
	var held []Lease
	for _, al := range n.leases {
		if al.held {
			held = append(held, al.lease)
			al.held = false
		}
	}
	n.lmu.Unlock()
	for i := range held {
		n.release(ctx, &held[i])
	}
}

// heartbeat renews the node's leases and tries to acquire those it waits
// for, each when due, until Close. It wakes the poll loop when it acquired
// a lease, so that the agent's pending work is recovered at once.
func (n *Node) heartbeat() {
	defer close(n.hbDone)
	for {
		wake := n.tendLeases(n.ctx)
		n.recMu.Lock()
		pending := len(n.toRecover) > 0
		n.recMu.Unlock()
		if pending {
			n.wake()
		}
		t := time.NewTimer(max(wake, MinLeaseRenewInterval/2))
		select {
		case <-n.stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// startRecoveries recovers, on a background goroutine, the agents whose
// lease was acquired since the last call.
func (n *Node) startRecoveries() {
	n.recMu.Lock()
	agents := n.toRecover
	n.toRecover = nil
	n.recMu.Unlock()
	if len(agents) == 0 {
		return
	}
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		if err := n.recoverAgents(n.ctx, agents, agents); err != nil && !n.closed.Load() {
			n.log.Warn("aacp: recovery after acquiring agent leases failed", "agents", agents, "err", err)
		}
	}()
}
