package mcp

import (
	"fmt"
	"strings"
	"sync"
)

// ChangeNotifier is implemented by tool sources that report changes to
// their set of tools (registry.Registry does). When ServerOptions.Tools
// implements it, the Server declares tools.listChanged and sends
// notifications/tools/list_changed to its sessions after each change.
type ChangeNotifier interface {
	// OnChange registers f to be called after every change to the set of
	// tools. f does not block.
	OnChange(f func())
}

// ResourceChangeNotifier is implemented by resource sources that report
// changes to their set of resources or templates. When
// ServerOptions.Resources implements it, the Server declares
// resources.listChanged and sends notifications/resources/list_changed.
type ResourceChangeNotifier interface {
	// OnResourcesChange registers f to be called after every change to the
	// set of resources or resource templates. f does not block.
	OnResourcesChange(f func())
}

// ResourceUpdateNotifier is implemented by resource sources that report
// updates of a resource's contents. When ServerOptions.Resources implements
// it, the Server declares resources.subscribe, serves resources/subscribe
// and resources/unsubscribe, and sends notifications/resources/updated to
// the sessions subscribed to the resource.
type ResourceUpdateNotifier interface {
	// OnResourceUpdated registers f to be called with the URI of every
	// resource whose contents changed. f does not block.
	OnResourceUpdated(f func(uri string))
}

// PromptChangeNotifier is implemented by prompt sources that report changes
// to their set of prompts. When ServerOptions.Prompts implements it, the
// Server declares prompts.listChanged and sends
// notifications/prompts/list_changed.
type PromptChangeNotifier interface {
	// OnPromptsChange registers f to be called after every change to the
	// set of prompts. f does not block.
	OnPromptsChange(f func())
}

// listKind is a bit set of the lists whose changes are notified.
type listKind uint8

const (
	listTools listKind = 1 << iota
	listResources
	listPrompts
)

var listKinds = [...]struct {
	kind   listKind
	method string
}{
	{listTools, notificationToolsListChanged},
	{listResources, notificationResourcesListChanged},
	{listPrompts, notificationPromptsListChanged},
}

// maxPendingUpdates bounds the distinct resource URIs a session holds for
// notifications/resources/updated while a send is under way; more are
// dropped (with a warning) until the backlog is written.
const maxPendingUpdates = 1024

// maxSubscriptions bounds the resources one session may subscribe to, and
// the entries of one listen's filter.
const maxSubscriptions = 4096

// changeHub is the server-wide side of change notifications: the sessions
// being served, and who subscribed to which resource. The sources call it
// from whatever goroutine changes them; it only marks sessions, which send
// on their own goroutine (see sessionNotes).
type changeHub struct {
	watch   listKind // lists whose source reports changes: listChanged declared
	updates bool     // the resource source reports updates: subscribe declared

	mu       sync.Mutex
	sessions map[*Session]struct{}
	subs     map[string]map[*Session]struct{} // resource URI → subscribers
	// listeners are the open subscriptions/listen requests (rev2026_listen.go).
	listeners   map[*listener]struct{}
	listenersOf map[string]int // open subscriptions by client key (rev2026_listen.go)
	// heldOf and heldTotal are the bytes that subscriptions and listen
	// filters hold, per peer and in all (limits.go).
	heldOf    map[string]int
	heldTotal int
}

// watchSources registers the server with the sources that report changes.
// It runs once, in NewServer: the listeners live as long as the sources.
func (s *Server) watchSources() {
	h := &s.hub
	h.sessions = map[*Session]struct{}{}
	h.subs = map[string]map[*Session]struct{}{}
	if n, ok := s.opts.Tools.(ChangeNotifier); ok {
		h.watch |= listTools
		n.OnChange(func() { s.listChanged(listTools) })
	}
	if n, ok := s.opts.Resources.(ResourceChangeNotifier); ok {
		h.watch |= listResources
		n.OnResourcesChange(func() { s.listChanged(listResources) })
	}
	if n, ok := s.opts.Resources.(ResourceUpdateNotifier); ok {
		h.updates = true
		n.OnResourceUpdated(s.resourceUpdated)
	}
	if n, ok := s.opts.Prompts.(PromptChangeNotifier); ok {
		h.watch |= listPrompts
		n.OnPromptsChange(func() { s.listChanged(listPrompts) })
	}
	s.subscribeFanOut() // feature_fanout.go
}

// add starts notifying ss; remove stops it and drops its subscriptions.
func (h *changeHub) add(ss *Session) {
	h.mu.Lock()
	h.sessions[ss] = struct{}{}
	h.mu.Unlock()
}

func (h *changeHub) remove(ss *Session) {
	h.mu.Lock()
	delete(h.sessions, ss)
	ss.notes.mu.Lock()
	for uri := range ss.notes.subs {
		h.unsubscribeLocked(ss, uri)
	}
	h.releaseLocked(peerKeyOf(ss), ss.notes.subBytes)
	ss.notes.subs, ss.notes.subBytes = nil, 0
	ss.notes.mu.Unlock()
	h.mu.Unlock()
}

// changed marks the list on every session; each sends one notification
// for any number of changes that arrive before its send.
func (h *changeHub) changed(k listKind) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ss := range h.sessions {
		if !ss.modernOnly {
			ss.markNotes(k, "")
		}
	}
	for l := range h.listeners {
		if l.wants(k) {
			l.mark(k, "")
		}
	}
}

// updated queues notifications/resources/updated for the sessions
// subscribed to uri, or to a resource it is below: a subscription to
// "file:///dir" or "file:///dir/" also covers "file:///dir/a.txt".
func (h *changeHub) updated(uri string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for l := range h.listeners {
		if l.covers(uri) {
			l.mark(0, uri)
		}
	}
	if len(h.subs) == 0 {
		return
	}
	seen := map[*Session]bool{}
	visit := func(key string) {
		for ss := range h.subs[key] {
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

// subscribe records that ss wants updates of uri. It refuses a session
// that holds maxSubscriptions subscriptions, or whose subscriptions would
// pass MaxSubscriptionBytes with uri.
func (h *changeHub) subscribe(ss *Session, uri string) *Error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, live := h.sessions[ss]; !live {
		return nil // the session is ending
	}
	n := &ss.notes
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
	set := h.subs[uri]
	if set == nil {
		set = map[*Session]struct{}{}
		h.subs[uri] = set
	}
	set[ss] = struct{}{}
	return nil
}

func (h *changeHub) unsubscribe(ss *Session, uri string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ss.notes.mu.Lock()
	if _, ok := ss.notes.subs[uri]; ok {
		delete(ss.notes.subs, uri)
		ss.notes.subBytes -= subscriptionCost(uri)
		h.releaseLocked(peerKeyOf(ss), subscriptionCost(uri))
	}
	ss.notes.mu.Unlock()
	h.unsubscribeLocked(ss, uri)
}

func (h *changeHub) unsubscribeLocked(ss *Session, uri string) {
	if set := h.subs[uri]; set != nil {
		delete(set, ss)
		if len(set) == 0 {
			delete(h.subs, uri)
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
}

// markNotes records a changed list (k != 0) or an updated resource (uri !=
// "") and starts the session's sender unless it is already running.
func (ss *Session) markNotes(k listKind, uri string) {
	n := &ss.notes
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
	start := !n.sending && (n.dirty != 0 || len(n.updated) > 0)
	if start {
		n.sending = true
	}
	n.mu.Unlock()
	if start {
		go ss.sendNotes()
	}
}

// sendNotes writes the pending notifications until none are left. Only a
// RUNNING session is notified: before that the client lists afterwards
// anyway, and after CLOSED nothing is written.
func (ss *Session) sendNotes() {
	n := &ss.notes
	for {
		n.mu.Lock()
		dirty, uris := n.dirty, n.updated
		n.dirty, n.updated, n.queued, n.warned = 0, nil, nil, false
		if dirty == 0 && len(uris) == 0 {
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
