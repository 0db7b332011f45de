package mcp

import (
	"context"
	stdjson "encoding/json"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ClientMiddleware wraps what a Client sends and what it serves
// (ClientOptions.Middleware): every request and notification it sends
// through Call and Notify — and so through every typed method built on
// them (CallTool, ListTools, ReadResource, Ping, ...) — and every request
// the server sends it (sampling, elicitation, roots), including those a
// 2026-07-28 server asks for in an input-required result. The first listed
// is the outermost. A middleware that returns without calling next answers
// in place of the server (a request it sends) or of the client's handler
// (a request it serves).
//
// The initialize handshake, the notifications/cancelled the client sends
// when a call's context ends, and the subscriptions/listen stream are the
// client's own bookkeeping and do not pass through it.
type ClientMiddleware func(next ClientHandler) ClientHandler

// ClientHandler handles one message a Client sends or serves, as
// ClientMiddleware sees it. For a request the client sends, the result is
// the server's result as raw JSON (a json.RawMessage), which the Client
// then decodes into Call's result; a middleware may return another value,
// which is encoded and decoded in its place. For a request the client
// serves, the result is what the client's handler returns, which the
// Client sends as the answer. A notification's result is ignored.
type ClientHandler func(ctx context.Context, msg *ClientMessage) (any, error)

// ClientMessage is a request or notification as ClientMiddleware sees it.
type ClientMessage struct {
	// Method is the JSON-RPC method.
	Method string
	// Params is the raw params member (nil when there are none). For a
	// request the client sends, it is the params as the caller gave them:
	// the members a revision adds on the wire (2026-07-28's _meta) are
	// added after the chain, and input rounds send again underneath it.
	Params stdjson.RawMessage
	// Incoming reports a request the server sent the client; false for
	// what the client sends.
	Incoming bool
	// Notification reports a notification (no answer).
	Notification bool
}

// clientChains are a Client's middleware chains, built once by NewClient;
// nil when ClientOptions.Middleware is empty, so that a client without
// middleware pays nothing.
type clientChains struct {
	send ClientHandler // what the client sends (Call, Notify)
}

// chainClient returns h wrapped in mws, the first outermost.
func chainClient(h ClientHandler, mws []ClientMiddleware) ClientHandler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// setup builds the chain of what c sends.
func (m *clientChains) setup(c *Client) {
	if len(c.opts.Middleware) == 0 {
		return
	}
	m.send = chainClient(func(ctx context.Context, msg *ClientMessage) (any, error) {
		var params any // an untyped nil when there are none
		if msg.Params != nil {
			params = msg.Params
		}
		if msg.Notification {
			return nil, notifyDirect(c, ctx, msg.Method, params)
		}
		var raw jsontext.Value
		if err := callDirect(c, ctx, msg.Method, params, &raw); err != nil {
			return nil, err
		}
		return stdjson.RawMessage(raw), nil
	}, c.opts.Middleware)
}

// sendThrough sends a request (result non-nil or not) or a notification
// through the middleware chain, decoding the chain's result into result.
func (m *clientChains) sendThrough(ctx context.Context, method string, params, result any, notification bool) error {
	msg := &ClientMessage{Method: method, Notification: notification}
	switch p := params.(type) {
	case nil:
	case jsontext.Value:
		msg.Params = stdjson.RawMessage(p)
	case stdjson.RawMessage:
		msg.Params = p
	default:
		b, err := json.Marshal(p)
		if err != nil {
			return err
		}
		msg.Params = b
	}
	res, err := m.send(ctx, msg)
	if err != nil || notification || result == nil || res == nil {
		return err
	}
	var raw []byte
	switch r := res.(type) {
	case stdjson.RawMessage:
		raw = r
	case jsontext.Value:
		raw = r
	default:
		if raw, err = json.Marshal(res); err != nil {
			return err
		}
	}
	return json.Unmarshal(raw, result)
}

// serveThrough runs h, the client's handler of a request the server sent
// (method, with params), inside the middleware chain.
func (s *clientSide) serveThrough(ctx context.Context, method string, params jsontext.Value, h func(ctx context.Context, params jsontext.Value) (any, error)) (any, error) {
	if len(s.opts.Middleware) == 0 {
		return h(ctx, params)
	}
	return chainClient(func(ctx context.Context, msg *ClientMessage) (any, error) {
		return h(ctx, jsontext.Value(msg.Params))
	}, s.opts.Middleware)(ctx, &ClientMessage{Method: method, Params: stdjson.RawMessage(params), Incoming: true})
}
