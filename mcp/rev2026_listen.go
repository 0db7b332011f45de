package mcp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/revision"
)

// subscriptions/listen (2026-07-28) replaces the GET stream and
// resources/subscribe: the request stays open, and the server sends on it
// the change notifications the client opted in to, each tagged with the
// request's id as _meta.subscriptionId. The first message is
// notifications/subscriptions/acknowledged with the subset of the filter
// the server honours. The subscription ends when the client cancels it
// (notifications/cancelled on stdio, closing the stream over HTTP) or the
// connection ends; the server then answers the request with an empty
// complete result naming the subscription, and on stdio also sends
// notifications/cancelled for it.

// listener is one open subscription. The hub marks it from whatever
// goroutine a change happens on; its request's goroutine sends.
type listener struct {
	filter SubscriptionFilter
	tasks  map[string]bool // filter.TaskIDs
	mu     sync.Mutex
	dirty  listKind
	uris   []string
	states []Task         // tasks whose status changed (the latest state of each)
	notes  []pendingNote  // Server.NotifyAll notifications (sessions.go)
	wake   chan struct{}  // capacity 1: a send is pending
	client string         // the key its per-client limit counts under ("": none)
	held   int            // the bytes its filter counts (subscriptionCost), reserved in the hub
	id     jsontext.Value // the listen request's id (the subscriptionId)
	peer   Peer           // who opened it
	ended  bool           // the subscription ended (guarded by mu)
}

// markTask queues notifications/tasks for the state t.
func (l *listener) markTask(t Task) {
	l.mu.Lock()
	if i := slices.IndexFunc(l.states, func(s Task) bool { return s.TaskID == t.TaskID }); i >= 0 {
		l.states[i] = t
	} else {
		l.states = append(l.states, t)
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// taskChanged marks the subscriptions that listen to the task whose
// state is now t.
func (h *changeHub) taskChanged(t Task) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for l := range h.listeners {
		if l.tasks[t.TaskID] {
			l.markTask(t)
		}
	}
}

// taskNotificationParams are the params of notifications/tasks (the tasks
// extension): the task's state, tagged with the subscription.
type taskNotificationParams struct {
	TaskInfo `json:",inline"`
	Meta     Meta `json:"_meta,omitempty"`
}

func (l *listener) mark(k listKind, uri string) {
	l.mu.Lock()
	l.dirty |= k
	if uri != "" && len(l.uris) < maxPendingUpdates {
		l.uris = append(l.uris, uri)
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// wants reports whether the subscription covers list k.
func (l *listener) wants(k listKind) bool {
	f := &l.filter
	return (k == listTools && f.ToolsListChanged) || (k == listPrompts && f.PromptsListChanged) ||
		(k == listResources && f.ResourcesListChanged)
}

// covers reports whether one of the subscription's resources is uri or a
// resource it is below (as resources/subscribe: "file:///dir" covers
// "file:///dir/a.txt").
func (l *listener) covers(uri string) bool {
	for _, s := range l.filter.ResourceSubscriptions {
		if s == uri || (strings.HasPrefix(uri, s) && (strings.HasSuffix(s, "/") || uri[len(s)] == '/')) {
			return true
		}
	}
	return false
}

// checkFilter refuses a listen's filter past its bounds, before anything
// of it is kept or echoed: at most maxSubscriptions entries (resource
// URIs and task ids together), each within MaxURIBytes, all within
// MaxSubscriptionBytes.
func checkFilter(o *ServerOptions, f *SubscriptionFilter) *Error {
	if n := len(f.ResourceSubscriptions) + len(f.TaskIDs); n > maxSubscriptions {
		return limitError(CodeInvalidParams, ErrInvalidArgument, false,
			fmt.Sprintf("a filter of %d resourceSubscriptions and taskIds is too large", n), "maxSubscriptions", maxSubscriptions)
	}
	for _, list := range [...][]string{f.ResourceSubscriptions, f.TaskIDs} {
		for _, s := range list {
			if e := o.checkURI("a resourceSubscriptions entry or task id", s); e != nil {
				return e
			}
		}
	}
	if total := filterCost(f); total > o.MaxSubscriptionBytes {
		return limitError(CodeInvalidParams, ErrInvalidArgument, false,
			fmt.Sprintf("a filter of %d bytes is too large", total), "MaxSubscriptionBytes", o.MaxSubscriptionBytes)
	}
	return nil
}

// filterCost is what a listen's filter counts against
// MaxSubscriptionBytes and the peer's and server's budgets.
func filterCost(f *SubscriptionFilter) int {
	total := 0
	for _, list := range [...][]string{f.ResourceSubscriptions, f.TaskIDs} {
		for _, s := range list {
			total += subscriptionCost(s)
		}
	}
	return total
}

func handleListen(ctx context.Context, req *Request) (any, error) {
	var p struct {
		Notifications *SubscriptionFilter `json:"notifications"` // required: a pointer tells absent from {}
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, invalidParams(err)
	}
	if p.Notifications == nil {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: subscriptions/listen requires params.notifications"}
	}
	ss, r := req.Session, &req.r
	want := *p.Notifications
	if e := checkFilter(&ss.server.opts, &want); e != nil {
		return nil, e
	}
	h := &ss.server.hub
	var ok SubscriptionFilter // what this server honours
	ok.ToolsListChanged = want.ToolsListChanged && h.watch&listTools != 0
	ok.PromptsListChanged = want.PromptsListChanged && h.watch&listPrompts != 0
	ok.ResourcesListChanged = want.ResourcesListChanged && h.watch&listResources != 0
	if h.updates {
		ok.ResourceSubscriptions = want.ResourceSubscriptions
	}
	for _, uri := range ok.ResourceSubscriptions {
		if err := CheckResourceURI(uri); err != nil {
			return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: resourceSubscriptions: " + err.Error()}
		}
	}
	if st := ss.server.tasks; st != nil && declaresTasks(r.modern().meta.ClientCapabilities) {
		owner := st.modernOwner(ctx)
		for _, id := range want.TaskIDs {
			if _, err := st.store.Get(ctx, owner, id); err == nil { // only the caller's own tasks
				ok.TaskIDs = append(ok.TaskIDs, id)
			}
		}
	}
	r.modern().subscriptionID = jsontext.Value(req.ID)
	l := &listener{filter: ok, wake: make(chan struct{}, 1)}
	if len(ok.TaskIDs) > 0 {
		l.tasks = make(map[string]bool, len(ok.TaskIDs))
		for _, id := range ok.TaskIDs {
			l.tasks[id] = true
		}
	}
	id := req.ID
	l.client, l.id, l.peer = listenClient(ctx), jsontext.Value(id), PeerFromContext(ctx)
	l.held = filterCost(&l.filter)
	if e := ss.server.hub.addListener(l, &ss.server.opts); e != nil {
		return nil, e
	}
	defer ss.server.hub.removeListener(l)
	if ss.conn.t.Kind() != "http" { // stdio and memory: the channel is shared
		fctx := ctx
		req.AfterAnswer(func() {
			nctx, cancel := context.WithTimeout(context.WithoutCancel(fctx), logSendTimeout)
			defer cancel()
			_ = ss.conn.notify(nctx, notificationCancelled, &cancelledParams{RequestID: jsontext.Value(id), Reason: "subscription ended"})
		})
	}
	ss.listen(ctx, jsontext.Value(id), l)
	return emptyResult{}, nil
}

// listen acknowledges the subscription and sends its notifications until
// ctx ends.
func (ss *Session) listen(ctx context.Context, id jsontext.Value, l *listener) {
	// Registered (addListener) before the acknowledgement, so that no
	// change after it is missed; what is marked meanwhile is sent after it.
	meta := Meta{revision.MetaSubscriptionID: id}
	if err := ss.conn.notify(ctx, notificationSubscriptionsAcknowledged,
		&subscriptionAcknowledgedParams{Notifications: l.filter, Meta: meta}); err != nil {
		return
	}
	type tagged struct {
		URI  string `json:"uri,omitempty"`
		Meta Meta   `json:"_meta"`
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.wake:
		}
		l.mu.Lock()
		dirty, uris, states, notes := l.dirty, l.uris, l.states, l.notes
		l.dirty, l.uris, l.states, l.notes = 0, nil, nil, nil
		l.mu.Unlock()
		for _, lk := range listKinds {
			if dirty&lk.kind != 0 {
				if ss.conn.notify(ctx, lk.method, &tagged{Meta: meta}) != nil {
					return
				}
			}
		}
		for _, uri := range uris {
			if ss.conn.notify(ctx, notificationResourceUpdated, &tagged{URI: uri, Meta: meta}) != nil {
				return
			}
		}
		for i := range states {
			p := &taskNotificationParams{TaskInfo: taskInfo(&states[i]), Meta: meta}
			if ss.conn.notify(ctx, notificationTasks, p) != nil {
				return
			}
		}
		for i := range notes {
			p, err := notes[i].encode(meta)
			if err != nil {
				ss.log.Warn("mcp: notification not sent", "method", notes[i].method, "error", err)
				continue
			}
			if ss.conn.notify(ctx, notes[i].method, p) != nil {
				return
			}
		}
	}
}

// listenClient is the key a subscription counts under for
// MaxListensPerClient: its peer (PeerFromContext), so that one peer cannot
// hold more listen streams by giving itself other names.
func listenClient(ctx context.Context) string { return PeerFromContext(ctx).Key }

// addListener registers l, or returns the error that refuses it when
// MaxListens subscriptions are open, or MaxListensPerClient of its client.
func (h *changeHub) addListener(l *listener, o *ServerOptions) *Error {
	h.mu.Lock()
	defer h.mu.Unlock()
	limit, max := "", 0
	switch {
	case len(h.listeners) >= o.MaxListens:
		limit, max = "MaxListens", o.MaxListens
	case l.client != "" && h.listenersOf[l.client] >= o.MaxListensPerClient:
		limit, max = "MaxListensPerClient", o.MaxListensPerClient
	}
	if limit != "" {
		return limitError(CodeServerBusy, ErrResourceExhausted, true, "too many open subscriptions", limit, max)
	}
	if e := h.reserveLocked(o, l.client, l.held); e != nil {
		return e
	}
	if h.listeners == nil {
		h.listeners = map[*listener]struct{}{}
		h.listenersOf = map[string]int{}
	}
	h.listeners[l] = struct{}{}
	if l.client != "" {
		h.listenersOf[l.client]++
	}
	return nil
}

func (h *changeHub) removeListener(l *listener) {
	l.mu.Lock()
	l.ended = true
	l.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.listeners[l]; !ok {
		return
	}
	delete(h.listeners, l)
	h.releaseLocked(l.client, l.held)
	if l.client != "" {
		if h.listenersOf[l.client]--; h.listenersOf[l.client] <= 0 {
			delete(h.listenersOf, l.client)
		}
	}
}
