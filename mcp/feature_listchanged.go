package mcp

import "sync"

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
// being served, who subscribed to which resource, and the open listen
// streams. The sources call it from whatever goroutine changes them; it
// only marks sessions and streams, which send on their own goroutines
// (2025 sessions: rev2025_session_notes.go; listen streams:
// rev2026_listen.go).
type changeHub struct {
	watch   listKind // lists whose source reports changes: listChanged declared
	updates bool     // the resource source reports updates: subscribe declared

	mu       sync.Mutex
	sessions map[*Session]struct{}
	subs     hubSubscriptions // the 2025 sessions' resource subscriptions (rev2025_session_notes.go)
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
	h.dropSubscriptionsLocked(ss)
	h.mu.Unlock()
}

// changed marks the list on every session and listen stream that wants
// it; each sends one notification for any number of changes that arrive
// before its send.
func (h *changeHub) changed(k listKind) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.markSessionsLocked(k)
	for l := range h.listeners {
		if l.wants(k) {
			l.mark(k, "")
		}
	}
}

// updated queues notifications/resources/updated for the sessions and
// streams subscribed to uri, or to a resource it is below: a subscription
// to "file:///dir" or "file:///dir/" also covers "file:///dir/a.txt".
func (h *changeHub) updated(uri string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for l := range h.listeners {
		if l.covers(uri) {
			l.mark(0, uri)
		}
	}
	h.updateSessionsLocked(uri)
}
