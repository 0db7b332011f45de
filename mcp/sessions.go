package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Sessions returns the connections the server is serving now: every
// stdio, in-memory or stateful HTTP connection (the per-request sessions
// a stateless HTTP handler makes for 2026-07-28 POSTs are not listed: they
// end with their request). Each one's ProtocolVersion tells its kind: the
// revision a 2025 session negotiated, Version20260728 for a connection
// serving 2026-07-28 requests without initialize, "" for one that has
// done neither yet. The order is unspecified. A Session does not answer
// for its client (the Request does): a program that shows each
// connection's client records what the session's initialize request
// names, keyed by the Session (see the example); the Session's requests
// to the client check what it declared themselves
// (ErrCapabilityNotDeclared).
func (s *Server) Sessions() []*Session {
	h := &s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*Session, 0, len(h.sessions))
	for ss := range h.sessions {
		if !ss.modernOnly {
			out = append(out, ss)
		}
	}
	return out
}

// ErrNoChannel is returned by Session.Notify on a session that has no
// channel for notifications outside a request: every connection but an
// initialized 2025 session (one serving 2026-07-28 requests without
// initialize, one a stateless HTTP handler made for a single 2026-07-28
// request, one not initialized yet), and so every session of a server
// built with the tag keel_omit2025 (there are no 2025 sessions).
var ErrNoChannel = errors.New("mcp: the session has no channel for notifications outside a request")

// Notify sends the notification method with params (encoded as JSON; nil
// for none) to the session's client. Only an initialized 2025 session has
// a channel for that: Notify fails with ErrClosed on a closed session and
// with ErrNoChannel on every other one (not initialized yet, serving
// 2026-07-28 requests without initialize, made for one stateless
// request, any session of a server built with the tag keel_omit2025).
// Clients of revision 2026-07-28 are reached through their
// subscriptions/listen streams, which carry only what they subscribed
// to: see Server.NotifyAll and ListenStream.Notify.
func (ss *Session) Notify(ctx context.Context, method string, params any) error {
	if method == "" {
		return errors.New("mcp: Notify: empty method")
	}
	if sessionState(ss.state.Load()) == stateClosed {
		return ErrClosed
	}
	if !sessionChannel(ss) {
		return ErrNoChannel
	}
	return ss.conn.notify(ctx, method, params)
}

// NotifyAll sends the notification method with params to every client:
// each initialized 2025 session (state RUNNING) Sessions lists, and each
// open subscriptions/listen stream of revision 2026-07-28 whose filter
// covers it (see ListenStream.Notify: a stream gets only what its client
// opted in to, so a method no filter names reaches no 2026-07-28 client;
// there the params' _meta names the subscription, so params must encode
// as a JSON object, or be nil). A stream holds at most 64 notifications
// its client has not read yet: a broadcast that finds one full is not
// queued for that stream (its client misses it; the others get it) and
// is logged as a warning. It returns
// the errors of the sessions it could not reach, joined (a closed session
// is skipped silently).
func (s *Server) NotifyAll(ctx context.Context, method string, params any) error {
	if method == "" {
		return errors.New("mcp: NotifyAll: empty method")
	}
	members, err := noteMembers("NotifyAll", method, params)
	if err != nil {
		return err
	}
	if s.opts.FanOut != nil { // the other processes' clients too (feature_fanout.go)
		c := Change{Kind: changeNotification, Method: method}
		if members != nil {
			if c.Params, err = jsonv2.Marshal(members, jsonv2.Deterministic(true)); err != nil {
				return fmt.Errorf("mcp: NotifyAll: encoding params: %w", err)
			}
		}
		s.publish(c)
	}
	return s.notifyAllLocal(ctx, method, params, members)
}

// notifyLocal is NotifyAll for this process's clients only.
func (s *Server) notifyLocal(ctx context.Context, method string, params any) error {
	members, err := noteMembers("NotifyAll", method, params)
	if err != nil {
		return err
	}
	return s.notifyAllLocal(ctx, method, params, members)
}

func (s *Server) notifyAllLocal(ctx context.Context, method string, params any, members map[string]jsontext.Value) error {
	s.hub.mu.Lock()
	for l := range s.hub.listeners {
		if l.allows(method, members) {
			l.queueNote(s.log, method, members)
		}
	}
	s.hub.mu.Unlock()
	return s.notifySessions(ctx, method, params)
}

// noteMembers returns the members of a notification's params (nil for
// none): they must encode as a JSON object.
func noteMembers(caller, method string, params any) (map[string]jsontext.Value, error) {
	if params == nil {
		return nil, nil
	}
	b, err := jsonv2.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("mcp: %s: encoding params: %w", caller, err)
	}
	var members map[string]jsontext.Value
	if err := jsonv2.Unmarshal(b, &members); err != nil || members == nil {
		return nil, fmt.Errorf("mcp: %s: params of %s must encode as a JSON object", caller, method)
	}
	return members, nil
}

// allows reports whether the subscription's filter covers the
// notification method with params members: the list changes it opted in
// to, the updates of the resources it subscribed to (params.uri), the
// status of the tasks it named (params.taskId). Nothing else.
func (l *listener) allows(method string, members map[string]jsontext.Value) bool {
	f := &l.filter
	str := func(name string) string {
		var v string
		_ = jsonv2.Unmarshal(members[name], &v)
		return v
	}
	switch method {
	case notificationToolsListChanged:
		return f.ToolsListChanged
	case notificationPromptsListChanged:
		return f.PromptsListChanged
	case notificationResourcesListChanged:
		return f.ResourcesListChanged
	case notificationResourceUpdated:
		uri := str("uri")
		return uri != "" && l.covers(uri)
	case notificationTasks:
		return l.tasks[str("taskId")]
	}
	return false
}

// ErrNotSubscribed is returned by ListenStream.Notify for a notification
// the listen stream's filter does not cover.
var ErrNotSubscribed = errors.New("mcp: the listen stream's filter does not cover this notification")

// ListenStream is one open subscriptions/listen stream of a 2026-07-28
// client, as the server sees it: the channel through which that client
// alone can be notified.
type ListenStream struct{ l *listener }

// ListenStreams returns the subscriptions/listen streams open now, on
// every transport. The order is unspecified.
func (s *Server) ListenStreams() []*ListenStream {
	h := &s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*ListenStream, 0, len(h.listeners))
	for l := range h.listeners {
		out = append(out, &ListenStream{l: l})
	}
	return out
}

// ID returns the id of the listen request, which tags every notification
// of the stream (_meta subscriptionId).
func (sub *ListenStream) ID() json.RawMessage { return json.RawMessage(sub.l.id) }

// Peer returns who opened the subscription (PeerFromContext of its
// request).
func (sub *ListenStream) Peer() Peer { return sub.l.peer }

// Filter returns what the server honours of the subscription's filter
// (what its acknowledgement said). It is a copy: changing its slices
// changes nothing of the subscription.
func (sub *ListenStream) Filter() SubscriptionFilter {
	f := sub.l.filter
	f.ResourceSubscriptions = slices.Clone(f.ResourceSubscriptions)
	f.TaskIDs = slices.Clone(f.TaskIDs)
	return f
}

// Notify queues the notification method with params for this
// subscription's client alone, tagged with the subscription (params must
// encode as a JSON object, or be nil). The revision lets a stream carry
// only what its client opted in to: a notification the filter does not
// cover fails with ErrNotSubscribed, one for a subscription that ended
// with ErrClosed. A stream holds at most 64 notifications its client has
// not read yet: past that, Notify queues nothing and fails with an error
// that names the bound.
func (sub *ListenStream) Notify(method string, params any) error {
	members, err := noteMembers("ListenStream.Notify", method, params)
	if err != nil {
		return err
	}
	l := sub.l
	if !l.allows(method, members) {
		return fmt.Errorf("%w: %s", ErrNotSubscribed, method)
	}
	l.mu.Lock()
	ended, full := l.ended, len(l.notes) >= maxPendingNotes
	if !ended && !full {
		l.notes = append(l.notes, pendingNote{method: method, members: members})
	}
	l.mu.Unlock()
	switch {
	case ended:
		return ErrClosed
	case full:
		return fmt.Errorf("mcp: ListenStream.Notify: the subscription holds %d notifications its client has not read (the bound of a listen stream)", maxPendingNotes)
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return nil
}

// maxPendingNotes bounds the notifications one listen stream holds while
// its client reads slowly (the docs of NotifyAll and ListenStream.Notify
// state its value).
const maxPendingNotes = 64

// pendingNote is a NotifyAll notification queued for a listen stream: the
// params' members, without the subscription's _meta yet.
type pendingNote struct {
	method  string
	members map[string]jsontext.Value
}

// queueNote queues a NotifyAll notification for the stream.
func (l *listener) queueNote(log interface{ Warn(string, ...any) }, method string, members map[string]jsontext.Value) {
	l.mu.Lock()
	full := len(l.notes) >= maxPendingNotes
	if !full {
		l.notes = append(l.notes, pendingNote{method: method, members: members})
	}
	l.mu.Unlock()
	if full {
		log.Warn("mcp: notification dropped: the subscription's queue is full", "method", method, "limit", maxPendingNotes)
		return
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// encode returns the note's params with _meta naming the subscription.
func (n *pendingNote) encode(meta Meta) (jsontext.Value, error) {
	out := make(map[string]any, len(n.members)+1)
	for k, v := range n.members {
		out[k] = v
	}
	m := Meta{}
	if raw, ok := n.members["_meta"]; ok {
		_ = jsonv2.Unmarshal(raw, &m)
	}
	for k, v := range meta {
		m[k] = v
	}
	out["_meta"] = m
	return jsonv2.Marshal(out, jsonv2.Deterministic(true))
}
