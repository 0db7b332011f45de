//go:build !keel_omit2025

package mcp

import (
	"fmt"
	"strings"
	"sync"
)

// The change notifications of 2025 sessions: each session is notified of
// the list changes the server declares (notifications/*/list_changed), of
// the updates of the resources it subscribed to with resources/subscribe
// (notifications/resources/updated) and of the status changes of its
// owners' tasks (notifications/tasks/status, rev2025_task_owners.go), on a
// goroutine of its own that coalesces what arrives meanwhile. 2026-07-28
// clients are notified through their subscriptions/listen streams
// instead (rev2026_listen.go).

// hubSubscriptions is who subscribed to which resource (guarded by the
// hub's mu).
type hubSubscriptions struct {
	byURI map[string]map[*Session]struct{} // resource URI → subscribers (made on first use)
}

// markSessionsLocked marks the list k changed on every 2025 session.
func (h *changeHub) markSessionsLocked(k listKind) {
	for ss := range h.sessions {
		if !ss.modernOnly {
			ss.markNotes(k, "")
		}
	}
}

// updateSessionsLocked queues notifications/resources/updated for the
// sessions subscribed to uri, or to a resource it is below.
func (h *changeHub) updateSessionsLocked(uri string) {
	if len(h.subs.byURI) == 0 {
		return
	}
	seen := map[*Session]bool{}
	visit := func(key string) {
		for ss := range h.subs.byURI[key] {
			if !seen[ss] {
				seen[ss] = true
				ss.markNotes(0, uri)
			}
		}
	}
	visit(uri)
	for i := strings.IndexByte(uri, '/'); i >= 0 && i < len(uri)-1; {
		visit(uri[:i])
		visit(uri[:i+1])
		j := strings.IndexByte(uri[i+1:], '/')
		if j < 0 {
			break
		}
		i += 1 + j
	}
}

// dropSubscriptionsLocked drops the subscriptions of ss, which ended.
func (h *changeHub) dropSubscriptionsLocked(ss *Session) {
	p := ss.s25.Load()
	if p == nil {
		return // it never subscribed
	}
	n := &p.notes
	n.mu.Lock()
	for uri := range n.subs {
		h.unsubscribeLocked(ss, uri)
	}
	h.releaseLocked(peerKeyOf(ss), n.subBytes)
	n.subs, n.subBytes = nil, 0
	n.mu.Unlock()
}

// subscribe records that ss wants updates of uri. It refuses a session
// that holds maxSubscriptions subscriptions, or whose subscriptions would
// pass MaxSubscriptionBytes with uri.
func (h *changeHub) subscribe(ss *Session, uri string) *Error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, live := h.sessions[ss]; !live {
		return nil // the session is ending
	}
	n := &state2025(ss).notes
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.subs[uri]; ok {
		return nil
	}
	if len(n.subs) >= maxSubscriptions {
		return limitError(CodeServerBusy, ErrResourceExhausted, false, "too many subscriptions on this session", "maxSubscriptions", maxSubscriptions)
	}
	max := ss.server.opts.MaxSubscriptionBytes
	cost := subscriptionCost(uri)
	if n.subBytes+cost > max {
		return limitError(CodeServerBusy, ErrResourceExhausted, false,
			fmt.Sprintf("the subscriptions of this session would hold %d bytes", n.subBytes+cost), "MaxSubscriptionBytes", max)
	}
	if e := h.reserveLocked(&ss.server.opts, peerKeyOf(ss), cost); e != nil {
		return e
	}
	if n.subs == nil {
		n.subs = map[string]struct{}{}
	}
	n.subs[uri] = struct{}{}
	n.subBytes += cost
	if h.subs.byURI == nil {
		h.subs.byURI = map[string]map[*Session]struct{}{}
	}
	set := h.subs.byURI[uri]
	if set == nil {
		set = map[*Session]struct{}{}
		h.subs.byURI[uri] = set
	}
	set[ss] = struct{}{}
	return nil
}

func (h *changeHub) unsubscribe(ss *Session, uri string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := &state2025(ss).notes
	n.mu.Lock()
	if _, ok := n.subs[uri]; ok {
		delete(n.subs, uri)
		n.subBytes -= subscriptionCost(uri)
		h.releaseLocked(peerKeyOf(ss), subscriptionCost(uri))
	}
	n.mu.Unlock()
	h.unsubscribeLocked(ss, uri)
}

func (h *changeHub) unsubscribeLocked(ss *Session, uri string) {
	if set := h.subs.byURI[uri]; set != nil {
		delete(set, ss)
		if len(set) == 0 {
			delete(h.subs.byURI, uri)
		}
	}
}

// sessionNotes is a session's side of change notifications: what is to be
// sent, and whether a goroutine is sending. Changes that arrive while a
// send is under way are coalesced into the next one: each list gets one
// list_changed notification however often it changed, each resource one
// updated notification.
type sessionNotes struct {
	mu      sync.Mutex
	dirty   listKind
	updated []string
	queued  map[string]struct{}
	sending bool
	warned  bool
	subs    map[string]struct{} // this session's subscriptions (guarded by the hub's mu too)
	// subBytes is what subs count against MaxSubscriptionBytes.
	subBytes int
	// statuses are the task status notifications to send
	// (rev2025_task_owners.go).
	statuses pendingStatuses
}

// markNotes records a changed list (k != 0) or an updated resource (uri !=
// "") and starts the session's sender unless it is already running.
func (ss *Session) markNotes(k listKind, uri string) {
	n := &state2025(ss).notes
	n.mu.Lock()
	n.dirty |= k
	if uri != "" {
		if _, dup := n.queued[uri]; !dup {
			if len(n.updated) >= maxPendingUpdates {
				if !n.warned {
					n.warned = true
					ss.log.Warn("mcp: too many pending resource updates; dropping some", "limit", maxPendingUpdates)
				}
			} else {
				if n.queued == nil {
					n.queued = map[string]struct{}{}
				}
				n.queued[uri] = struct{}{}
				n.updated = append(n.updated, uri)
			}
		}
	}
	start := n.claimSenderLocked()
	n.mu.Unlock()
	if start {
		go ss.sendNotes()
	}
}

// claimSenderLocked reports whether the caller is to start the session's
// sender (sendNotes): something is pending and none is running.
func (n *sessionNotes) claimSenderLocked() bool {
	if n.sending || (n.dirty == 0 && len(n.updated) == 0 && len(n.statuses.queue) == 0) {
		return false
	}
	n.sending = true
	return true
}

// sendNotes writes the pending notifications until none are left. Only a
// RUNNING session is notified: before that the client lists afterwards
// anyway, and after CLOSED nothing is written (what is pending then is
// dropped). It is the session's goroutine: it runs while something is
// pending, and each of its writes ends when the session does.
func (ss *Session) sendNotes() {
	n := &state2025(ss).notes
	for {
		n.mu.Lock()
		dirty, uris := n.dirty, n.updated
		n.dirty, n.updated, n.queued, n.warned = 0, nil, nil, false
		statuses := n.statuses.take()
		if dirty == 0 && len(uris) == 0 && len(statuses) == 0 {
			n.sending = false
			n.mu.Unlock()
			return
		}
		n.mu.Unlock()
		if ss.currentState() != stateRunning {
			continue
		}
		for _, lk := range listKinds {
			if dirty&lk.kind != 0 && ss.server.hub.watch&lk.kind != 0 {
				ss.sendNote(lk.method, nil)
			}
		}
		for _, uri := range uris {
			ss.sendNote(notificationResourceUpdated, &resourceUpdatedNotificationParams{URI: uri})
		}
		for _, p := range statuses {
			ss.sendStatus(p)
		}
	}
}

func (ss *Session) sendNote(method string, params any) {
	var err error
	if params == nil {
		err = ss.conn.notify(ss.ctx, method, nil)
	} else {
		err = ss.conn.notify(ss.ctx, method, params)
	}
	if err != nil && !isClosed(err) {
		ss.log.Debug("mcp: notification not sent", "method", method, "error", err)
	}
}
