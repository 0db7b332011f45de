package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/revision"
)

// subscriptions/listen (revision 2026-07-28): one long-lived request per
// subscription, which the server acknowledges with
// notifications/subscriptions/acknowledged and then answers only when it
// ends the subscription. The notifications it carries are tagged with the
// listen request's id (_meta revision.MetaSubscriptionID) and reach the client's
// usual callbacks.

// listenAcknowledge is a decoded notifications/subscriptions/acknowledged.
type listenAcknowledge struct {
	Notifications SubscriptionFilter `json:"notifications"`
}

// Subscription is a running subscriptions/listen request (see Client.Listen).
type Subscription struct {
	cn       *conn
	cancel   func(id int64, reason string) // notifications/cancelled
	id       int64
	honoured SubscriptionFilter
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	err      error // set before done is closed
}

// Listen opens a subscription (subscriptions/listen, revision 2026-07-28)
// to the notifications filter opts in to, and returns once the server has
// acknowledged it. The notifications then reach the client's callbacks as
// they arrive (OnListChanged, OnResourceUpdated, OnNotification), each
// tagged with the subscription's id in _meta[revision.MetaSubscriptionID].
//
// The subscription lasts until ctx ends or Close is called (the client
// then sends notifications/cancelled for the listen request), or until
// the server ends it (Done is closed; Err tells why). An error answer
// before the acknowledgement is returned as *Error. On a connection of a
// 2025 revision the error wraps ErrNeedsVersion20260728 and nothing is
// sent.
func (c *Client) Listen(ctx context.Context, filter SubscriptionFilter) (*Subscription, error) {
	if c.conn == nil {
		return nil, errors.New("mcp: client not connected")
	}
	if err := c.mod.need(methodSubscriptionsListen, c.ProtocolVersion()); err != nil {
		return nil, err
	}
	return c.mod.listen(ctx, filter)
}

// listen sends subscriptions/listen and waits for its acknowledgement (see
// Client.Listen).
func (m *modernState) listen(ctx context.Context, filter SubscriptionFilter) (*Subscription, error) {
	obj, err := m.withRequestMeta(methodSubscriptionsListen, &listenParams{Notifications: filter})
	if err != nil {
		return nil, err
	}
	wire, err := jsonv2.Marshal(obj, jsonv2.Deterministic(true))
	if err != nil {
		return nil, err
	}
	cn := m.cn
	id := cn.nextID.Add(1)
	resp := make(chan *jsonrpc.Message, 1)
	ack := make(chan *listenAcknowledge, 1)
	cn.mu.Lock()
	if cn.closed.Load() {
		cn.mu.Unlock()
		return nil, ErrClosed
	}
	cn.addPendingLocked(id, resp)
	cnDone := cn.doneLocked()
	cn.mu.Unlock()
	m.mu.Lock()
	if m.acks == nil {
		m.acks = map[int64]chan *listenAcknowledge{}
	}
	m.acks[id] = ack
	m.mu.Unlock()
	s := &Subscription{cn: cn, cancel: m.cancel, id: id, stop: make(chan struct{}), done: make(chan struct{})}
	rawID := jsontext.Value(strconv.AppendInt(nil, id, 10))
	err = cn.send(ctx, func(b []byte) ([]byte, error) {
		return jsonrpc.AppendRequest(b, rawID, methodSubscriptionsListen, jsontext.Value(wire))
	})
	if err == nil {
		select {
		case a := <-ack:
			s.honoured = a.Notifications
		case r := <-resp:
			err = responseError(r)
			if err == nil {
				err = errors.New("mcp: subscriptions/listen: the server ended the subscription before acknowledging it")
			}
		case <-ctx.Done():
			m.cancel(id, context.Cause(ctx).Error())
			err = ctx.Err()
		case <-cnDone:
			err = ErrClosed
		}
	}
	m.mu.Lock()
	delete(m.acks, id)
	m.mu.Unlock()
	if err != nil {
		s.forget()
		return nil, err
	}
	go s.run(ctx, resp)
	return s, nil
}

// responseError returns the *Error of an error response, nil for a result.
func responseError(m *jsonrpc.Message) error {
	if m.Error == nil {
		return nil
	}
	e := &Error{Code: m.Error.Code, Message: m.Error.Message}
	if m.Error.Data != nil {
		e.Data = json.RawMessage(m.Error.Data)
	}
	return e
}

// run waits for the end of the subscription: ctx, Close, the server's
// answer or the connection's end. After cancelling it still waits for the
// server's final answer (or the connection's end), so that the answer is
// not reported as a response to an unknown request.
func (s *Subscription) run(ctx context.Context, resp chan *jsonrpc.Message) {
	cnDone := s.cn.doneChan()
	defer s.forget()
	select {
	case m := <-resp:
		s.err = responseError(m)
		close(s.done)
		return
	case <-cnDone:
		s.err = ErrClosed
		close(s.done)
		return
	case <-ctx.Done():
		s.cancel(s.id, context.Cause(ctx).Error())
	case <-s.stop:
		s.cancel(s.id, "subscription closed by the client")
	}
	close(s.done)
	select {
	case <-resp:
	case <-cnDone:
	}
}

// forget stops routing the listen request's response.
func (s *Subscription) forget() {
	cn := s.cn
	cn.mu.Lock()
	delete(cn.pending, s.id)
	cn.mu.Unlock()
}

// ID returns the subscription's id: the JSON-RPC id of its
// subscriptions/listen request, which tags its notifications
// (_meta[revision.MetaSubscriptionID]).
func (s *Subscription) ID() json.RawMessage {
	return json.RawMessage(strconv.AppendInt(nil, s.id, 10))
}

// Honoured returns the part of the filter the server agreed to honour (from
// its acknowledgement).
func (s *Subscription) Honoured() SubscriptionFilter { return s.honoured }

// Done is closed when the subscription has ended.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Err returns why the subscription ended once Done is closed: nil when the
// client ended it or the server ended it gracefully, an *Error when the
// server answered with one, ErrClosed when the connection ended.
func (s *Subscription) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Close ends the subscription (the client sends notifications/cancelled for
// it, unless it has ended already) and waits until Done is closed.
func (s *Subscription) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
	return nil
}

// acknowledged hands notifications/subscriptions/acknowledged to the
// Listen call waiting for it; other notifications it leaves alone.
func (m *modernState) acknowledged(msg *jsonrpc.Message) {
	if msg.Method != notificationSubscriptionsAcknowledged {
		return
	}
	var p struct {
		Notifications SubscriptionFilter        `json:"notifications"`
		Meta          map[string]jsontext.Value `json:"_meta"`
	}
	if msg.Params == nil || jsonv2.Unmarshal(msg.Params, &p) != nil {
		m.log.Warn("mcp: client received a malformed " + notificationSubscriptionsAcknowledged)
		return
	}
	raw := p.Meta[revision.MetaSubscriptionID]
	id, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || raw.Kind() != '0' {
		m.log.Warn("mcp: "+notificationSubscriptionsAcknowledged+" for an unknown subscription", "subscriptionId", string(raw))
		return
	}
	m.mu.Lock()
	ch := m.acks[id]
	m.mu.Unlock()
	if ch == nil {
		m.log.Warn("mcp: "+notificationSubscriptionsAcknowledged+" for an unknown subscription", "subscriptionId", string(raw))
		return
	}
	select {
	case ch <- &listenAcknowledge{Notifications: p.Notifications}:
	default: // a second acknowledgement
	}
}
