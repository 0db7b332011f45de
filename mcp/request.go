package mcp

import (
	"context"
	"encoding/json"
	"sync/atomic"
)

// Request is one incoming request (or notification) as the Server hands it
// to middleware and method handlers. A request is answered exactly once, by
// the Server, with what the handler chain returns; handlers never write
// the answer themselves.
//
// What a handler may ask about the peer (ProtocolVersion,
// ClientCapabilities, ClientInfo, LogLevel) is answered by the request
// alone, for this very request: a 2026-07-28 request brings its own in its
// _meta, a request of a 2025 session has what its session's client
// declared in initialize. Session is the connection only.
type Request struct {
	// ID is the JSON-RPC id (nil for a notification).
	ID json.RawMessage
	// Method is the JSON-RPC method.
	Method string
	// Params is the raw params member (nil when absent).
	Params json.RawMessage
	// Session is the connection the request arrived on: the same for
	// every request of the connection, whatever their revision.
	Session *Session
	// enc is the response answerChecked encoded (no Middleware); after, what AfterAnswer
	// registered (request_answer.go).
	enc   encodedResult
	after atomic.Pointer[afterAnswer]

	r      responder     // where the answer goes, and the request's revision scope
	f      inflight      // the owner of the request's life (request_table.go); unused for notifications
	handle MethodHandler // the method's own handler, innermost in the chain
	rounds inputRounds   // the input rounds run around handle, when its row declares them
	params paramsCache   // params decoded by Params, per type (request_params.go)
}

// IsNotification reports whether the request is a notification (no
// answer is sent).
func (r *Request) IsNotification() bool { return r.ID == nil }

// ProtocolVersion returns the protocol revision this request is served
// at: its own for a 2026-07-28 request, else the one its session
// negotiated. An initialize request is the negotiation: before its
// handler has accepted it, this, ClientCapabilities and ClientInfo answer
// "" and zero values; once it has (in middleware, after next returns),
// what it negotiated.
func (r *Request) ProtocolVersion() string { return r.r.version() }

// ClientCapabilities returns the client capabilities that apply to this
// request: the ones its _meta declares (2026-07-28), else those the
// session's client declared in initialize.
func (r *Request) ClientCapabilities() ClientCapabilities {
	if r.r.modern() != nil {
		return r.r.modern().meta.ClientCapabilities
	}
	return r.Session.clientCapabilities()
}

// ClientInfo returns the client's self-reported name and version for this
// request (zero when a 2026-07-28 request names none).
func (r *Request) ClientInfo() Implementation {
	if r.r.modern() != nil {
		return r.r.modern().clientInfo()
	}
	return r.Session.clientInfo()
}

// LogLevel returns the logging threshold that applies to this request:
// the logLevel its _meta names for a 2026-07-28 request ("" when it names
// none: the request gets no log messages), else its session's, the level
// the client set with logging/setLevel or, before it did,
// ServerOptions.LogLevel.
func (r *Request) LogLevel() LoggingLevel {
	if r.r.modern() != nil {
		return r.r.modern().meta.LogLevel
	}
	return sessionLogLevel(r.Session)
}

// MethodHandler serves one request method (or notification) and returns
// its result or error: an *Error is answered as that JSON-RPC error, an
// *InputRequiredError as an input-required answer, any other error as
// -32603 (see the method's documentation for its own mapping). The result
// of a notification is ignored.
type MethodHandler func(ctx context.Context, req *Request) (any, error)

// Middleware wraps the handling of every incoming request and notification
// (ServerOptions.Middleware): built-in methods and custom ones alike. It
// sees the request before the method's handler, and the result or error
// before the Server answers. The first Middleware listed is the outermost.
// A middleware that returns without calling next answers the request
// itself (for example with an *Error).
//
// Every answer to a request passes through the chain, refusals included.
// A well-formed request refused before its method runs (before
// initialize, -32002; an invalid _meta, -32602; an unsupported revision,
// -32022; a method that does not exist, -32601; an id in use by a request
// in flight, MaxInFlight reached, or initialize inside a batch, -32600 or
// CodeServerBusy) runs the chain with a next that returns the refusal as
// an *Error, and nothing else of the method (not its input rounds). It
// runs as a quick request does: on the goroutine that read it, which
// hands reading over to another after InlineBudget, so a middleware that
// blocks on a refusal does not hold up the connection, up to MaxInFlight
// refusals handed over at once; the next one runs on the reading
// goroutine before anything more is read, so a middleware that waits for
// its client there (Session.Ping, an elicitation) holds the connection's
// reading until the wait ends: give such waits a deadline. A refusal's
// context ends when the connection does, whose drain waits for it.
// Its Method, ID and Params are the request's, and every accessor
// answers: for the request's own _meta once that was valid (a 2026-07-28
// request refused for its method), else for its connection (what
// initialize negotiated, else "" and zero values). What
// the middleware returns is what is answered: it may log the refusal, or
// replace it with an error or a result of its own.
//
// A result is checked below every middleware: for a result that cannot
// be encoded, that is not a JSON object on a 2026-07-28 request, or whose
// response exceeds the transport's MaxMessageBytes, next returns the
// -32603 *Error the client gets (and the Server logs why). What the
// middleware returns is encoded when the request answers, and checked
// again: a middleware may change the result next returned in place (redact
// a tool's Content) and return it, or return a value of its own; one that
// cannot be sent is logged, and that -32603 is answered instead. (A result
// is so encoded twice when the server has Middleware; with none, the
// encoding made below is the one sent. In a 2025-03-26 batch, the size of
// the whole answer is checked when it is written.)
//
// A middleware returns only after next has returned (when it calls
// next): the request, its progress and its input rounds are shared with
// the handler below, and a handler still running after its request has
// answered races with it, no longer counts toward MaxInFlight and is not
// waited for by the end of Server.Run. A middleware that must answer by a
// deadline gives next a context with that deadline and returns when next
// does; a tool that must be answered at its deadline whatever its handler
// does gets a Timeout in the tools/call chain (package middleware), which
// is built to return before its handler.
//
// A transport's own refusal of a well-formed request passes through it
// the same way when the transport hands the request over with it (the
// streamable HTTP handler of NewServerHandler does, for its checks of a
// 2026-07-28 POST's headers, _meta and revision).
//
// What is not a well-formed request has no method to serve and does not
// pass through the chain: a message that is not JSON (-32700), JSON that
// is not a request (-32600), a message over MaxMessageBytes, a batch
// refused whole; nor do a transport's answers to an exchange rather than
// to a request, made before the Server has a session to serve it (the
// HTTP transport's Host, Origin, media type, authentication, body and
// stream bounds, its 2025 session checks).
type Middleware func(next MethodHandler) MethodHandler

type requestKey struct{}

// RequestFromContext returns the request ctx belongs to (inside a method
// handler, a tool, prompt or resource handler), or nil.
func RequestFromContext(ctx context.Context) *Request {
	r, _ := ctx.Value(requestKey{}).(*Request)
	return r
}

// chainMiddleware returns h wrapped in mws, the first outermost.
func chainMiddleware(h MethodHandler, mws []Middleware) MethodHandler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// checkCustom returns a copy of a custom handler map, panicking on a name
// keel serves itself or a nil handler: a misconfigured server fails at
// start-up.
func checkCustom(m map[string]MethodHandler, field string) map[string]MethodHandler {
	if m == nil {
		return nil
	}
	out := make(map[string]MethodHandler, len(m))
	for name, h := range m {
		switch {
		case name == "":
			panic("mcp: ServerOptions." + field + " has an empty method name")
		case h == nil:
			panic("mcp: ServerOptions." + field + "[" + quote(name) + "] is nil")
		case builtinMethod(name):
			panic("mcp: ServerOptions." + field + "[" + quote(name) + "]: keel serves this method itself; use Middleware to wrap it")
		}
		out[name] = h
	}
	return out
}

// checkInputMethods returns the set of the methods named in names
// (ServerOptions.InputMethods), whose rows of the method table declare
// input rounds (lookupMethod). It panics on a name that is not in
// methods: a misconfigured server fails at start-up.
func checkInputMethods(methods map[string]MethodHandler, names []string) map[string]bool {
	if len(names) == 0 {
		return nil
	}
	out := make(map[string]bool, len(names))
	for _, name := range names {
		if _, ok := methods[name]; !ok {
			panic("mcp: ServerOptions.InputMethods names " + quote(name) + ", which is not in Methods")
		}
		out[name] = true
	}
	return out
}

// Outgoing is a request or notification a Server sends its client, as
// send middleware (ServerOptions.SendMiddleware) sees it.
type Outgoing struct {
	// Session is the connection it goes to.
	Session *Session
	// Method and Params are the message's method and params (Params is
	// encoded as JSON when the message is written).
	Method string
	Params any
	// IsNotification reports a notification (no response is awaited).
	IsNotification bool
	// Result receives a request's result, decoded from the response
	// (nil for a notification, or when the result is not wanted).
	Result any

	onCancel func(id int64, reason string)
}

// SendHandler sends one outgoing message; for a request it waits for the
// response and decodes it into msg.Result (a JSON-RPC error response is an
// *Error).
type SendHandler func(ctx context.Context, msg *Outgoing) error

// SendMiddleware wraps the sending of every request and notification a
// Server sends its clients. The first listed is the outermost.
type SendMiddleware func(next SendHandler) SendHandler

// sendChain returns the send middleware chain of c (nil without
// middleware): mws around the writing itself.
func sendChain(c *conn, mws []SendMiddleware) SendHandler {
	if len(mws) == 0 {
		return nil
	}
	var h SendHandler = func(ctx context.Context, msg *Outgoing) error {
		if msg.IsNotification {
			return c.writeNotification(ctx, msg.Method, msg.Params)
		}
		return c.request(ctx, msg.Method, msg.Params, msg.Result, msg.onCancel)
	}
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}
