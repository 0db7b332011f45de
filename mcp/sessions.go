package mcp

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Sessions returns the connections the server is serving now: every
// stdio, in-memory or stateful HTTP connection (the per-request sessions
// a stateless HTTP handler makes for 2026-07-28 POSTs are not listed: they
// end with their request). The order is unspecified.
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
// channel for notifications outside a request: one a stateless HTTP
// handler made for a single 2026-07-28 request.
var ErrNoChannel = errors.New("mcp: the session has no channel for notifications outside a request")

// Notify sends the notification method with params (encoded as JSON; nil
// for none) to the session's client. It fails on a closed session and
// with ErrNoChannel on a stateless per-request session. Clients of
// revision 2026-07-28 are reached through their subscriptions/listen
// streams: see Server.NotifyAll.
func (ss *Session) Notify(ctx context.Context, method string, params any) error {
	if method == "" {
		return errors.New("mcp: Notify: empty method")
	}
	ss = ss.real()
	if ss.modernOnly {
		return ErrNoChannel
	}
	if ss.State() == StateClosed {
		return ErrClosed
	}
	return ss.conn.notify(ctx, method, params)
}

// NotifyAll sends the notification method with params to every client:
// each initialized 2025 session (state RUNNING) Sessions lists, and each
// open subscriptions/listen stream
// of revision 2026-07-28 (there the params' _meta names the subscription,
// so params must encode as a JSON object, or be nil). A stream queues at
// most maxPendingNotes such notifications; beyond that they are dropped
// and logged. It returns the errors of the sessions it could not reach,
// joined (a closed session is skipped silently).
func (s *Server) NotifyAll(ctx context.Context, method string, params any) error {
	if method == "" {
		return errors.New("mcp: NotifyAll: empty method")
	}
	var members map[string]jsontext.Value
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return fmt.Errorf("mcp: NotifyAll: encoding params: %w", err)
		}
		if err := json.Unmarshal(b, &members); err != nil || members == nil {
			return fmt.Errorf("mcp: NotifyAll: params of %s must encode as a JSON object", method)
		}
	}
	s.hub.mu.Lock()
	for l := range s.hub.listeners {
		l.queueNote(s.log, method, members)
	}
	s.hub.mu.Unlock()
	var errs []error
	for _, ss := range s.Sessions() {
		if ss.State() != StateRunning {
			continue
		}
		if err := ss.Notify(ctx, method, params); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, fmt.Errorf("session %s: %w", ss.ConnectionCorrelationID(), err))
		}
	}
	return errors.Join(errs...)
}

// maxPendingNotes bounds the NotifyAll notifications one listen stream
// holds while its client reads slowly.
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
		_ = json.Unmarshal(raw, &m)
	}
	for k, v := range meta {
		m[k] = v
	}
	out["_meta"] = m
	return json.Marshal(out, json.Deterministic(true))
}
