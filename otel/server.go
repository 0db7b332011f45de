package otel

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	"go.opentelemetry.io/otel/trace"
)

// Middleware returns the server middleware (mcp.ServerOptions.Middleware)
// that makes a SERVER span per incoming request or notification and
// records mcp.server.operation.duration. List it first so that the span
// covers the other middleware.
//
// The span's parent is the trace context in params._meta when it carries
// one, else the span in the request's context (on streamable HTTP, the
// HTTP server span of an otelhttp handler); when both exist the ambient
// span is a link of the span. A tasks/* request served by this process
// links to the span of the tools/call that created its task (at most
// MaxLinkedRounds tasks are remembered per Telemetry). The span starts
// named after the method, with the other attributes set once it is known
// to record (a sampler sees the span kind, parent and links). Tool and prompt names, the resource uri, the
// request id, the protocol revision of the request, the session id (see
// HTTPSessionID) and the transport are attributes. An *mcp.Error answer
// sets error.type and rpc.response.status_code to its code, another error
// to -32603 (what the Server answers it with), a tool result with isError
// sets error.type tool_error; the span status is then Error.
func (tm *Telemetry) Middleware() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			start := time.Now()
			metrics := tm.serverOp.Enabled(ctx)
			var p *params // decoded only when something uses it
			pctx := ctx
			var links []trace.Link
			if len(tm.prop.Fields()) > 0 {
				p = parseParams(req.Params)
				if len(p.Meta) > 0 {
					pctx = tm.prop.Extract(ctx, metaCarrier(p.Meta))
					if amb := trace.SpanContextFromContext(ctx); amb.IsValid() {
						if got := trace.SpanContextFromContext(pctx); !got.Equal(amb) {
							links = append(links, trace.Link{SpanContext: amb})
						}
					}
				}
			}
			var ctx2 context.Context
			var span trace.Span
			if len(links) == 0 {
				ctx2, span = tm.tracer.Start(pctx, req.Method, tm.serverKind...)
			} else {
				ctx2, span = tm.tracer.Start(pctx, req.Method, trace.WithSpanKind(trace.SpanKindServer), trace.WithLinks(links...))
			}
			ctx = ctx2
			recording := span.IsRecording()
			if !recording && !metrics {
				// No provider configured: nothing to record.
				res, err := next(ctx, req)
				span.End()
				return res, err
			}
			if p == nil {
				p = parseParams(req.Params)
			}
			o := op{method: req.Method, id: idString(req.ID)}
			o.setTarget(p)
			if req.Session != nil { // always, but for a Request made by hand
				o.version = req.ProtocolVersion()
				o.transport, o.httpProto = networkTransport(req.Session.TransportKind())
			}
			o.session = sessionIDFromContext(ctx)
			if recording {
				span.SetName(o.spanName(tm.uriInName))
				span.SetAttributes(o.startAttrs()...)
				if strings.HasPrefix(o.method, "tasks/") {
					if sc, ok := tm.tasks.get(LinkKindTask, p.TaskID); ok {
						span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{LinkKindKey.String(LinkKindTask)}})
					}
				}
			}

			res, err := next(ctx, req)
			if recording {
				switch r := res.(type) {
				case *mcp.CreateTaskResult: // 2025-11-25
					if r == nil {
						break
					}
					tm.tasks.put(LinkKindTask, r.Task.TaskID, span.SpanContext())
				case *mcp.TaskCreatedResult: // 2026-07-28
					if r == nil {
						break
					}
					tm.tasks.put(LinkKindTask, r.TaskID, span.SpanContext())
				}
			}
			classify(&o, res, err)
			end(ctx, span, &o)
			if metrics {
				tm.serverOp.Record(ctx, time.Since(start).Seconds(), mcpconv.MethodNameAttr(o.method), o.metricAttrs()...)
			}
			return res, err
		}
	}
}

// classify sets the outcome of a served request from its handler's result
// and error.
func classify(o *op, res any, err error) {
	if err != nil {
		var e *mcp.Error
		var ir *mcp.InputRequiredError
		switch {
		case errors.As(err, &ir):
			// An input_required answer is a round of the call, not a failure.
		case errors.As(err, &e):
			o.setCode(e.Code, e.Message)
		default:
			o.setCode(mcp.CodeInternalError, err.Error())
		}
		return
	}
	switch r := res.(type) {
	case *mcp.CallToolResult:
		if r != nil && r.IsError {
			o.errType, o.errMsg = ErrorTypeToolError, "tool returned isError"
		}
	case mcp.CallToolResult:
		if r.IsError {
			o.errType, o.errMsg = ErrorTypeToolError, "tool returned isError"
		}
	}
}

// SendMiddleware returns the send middleware
// (mcp.ServerOptions.SendMiddleware) that makes a CLIENT span per request
// or notification the server sends its client, a child of the span of
// the request it is sent for (when sent from a handler), and records
// mcp.client.operation.duration (the server is the sender). The trace
// context is not written into these messages' _meta: their params are
// typed values the middleware does not rewrite.
func (tm *Telemetry) SendMiddleware() mcp.SendMiddleware {
	return func(next mcp.SendHandler) mcp.SendHandler {
		return func(ctx context.Context, msg *mcp.Outgoing) error {
			start := time.Now()
			metrics := tm.clientOp.Enabled(ctx)
			ctx, span := tm.tracer.Start(ctx, msg.Method, tm.clientKind...)
			recording := span.IsRecording()
			if !recording && !metrics {
				err := next(ctx, msg)
				span.End()
				return err
			}
			o := op{method: msg.Method}
			if msg.Session != nil {
				o.version = msg.Session.ProtocolVersion()
				o.transport, o.httpProto = networkTransport(msg.Session.TransportKind())
			}
			if recording {
				span.SetAttributes(o.startAttrs()...)
			}
			err := next(ctx, msg)
			if err != nil {
				var e *mcp.Error
				if errors.As(err, &e) {
					o.setCode(e.Code, e.Message)
				} else {
					o.errType, o.errMsg = errorType(err), err.Error()
				}
			}
			end(ctx, span, &o)
			if metrics {
				tm.clientOp.Record(ctx, time.Since(start).Seconds(), mcpconv.MethodNameAttr(o.method), o.metricAttrs()...)
			}
			return err
		}
	}
}

// errorType is the error.type of an error that is no JSON-RPC answer.
func errorType(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, transport.ErrClosed), errors.Is(err, io.EOF):
		return "transport_closed"
	}
	return string(mcpconv.ErrorTypeOther)
}

// ServerTransport wraps a connection a Server runs over (Server.Run) so
// that mcp.server.session.duration is recorded when the connection ends:
// at Close, or when Read reports its end (io.EOF or ErrClosed); error.type
// is set when Read ended with another error. Streamable HTTP sessions are
// created inside streamhttp.Handler: HTTPSession records their duration.
// The wrapper keeps the optional interfaces of package transport the
// Server uses (PeerWatcher, MessageLimiter, MessageContexter), and
// streamable HTTP's hand-off of each message.
func (tm *Telemetry) ServerTransport(t transport.Transport) transport.Transport {
	tr, httpProto := networkTransport(t.Kind())
	a := []attribute.KeyValue{}
	if tr != "" {
		a = append(a, semconv.NetworkTransportKey.String(tr))
	}
	if httpProto {
		a = append(a, semconv.NetworkProtocolName("http"))
	}
	return &serverConn{forward: forward{t}, sessionClock: sessionClock{tm: tm, start: time.Now(), attrs: a}}
}

// HTTPSession records mcp.server.session.duration for the stateful
// sessions of a streamable HTTP handler: set it as the handler's
// streamhttp.Options.OnSession. The clock starts when the session's
// initialize is accepted and stops when the session ends (DELETE, idle
// expiry, Shutdown); error.type is set when the session ended with an
// error other than being closed. The attributes are network.transport tcp
// and network.protocol.name http. Stateless sessions and 2026-07-28
// requests have no session and are not recorded.
func (tm *Telemetry) HTTPSession(ctx context.Context, id string) (ended func(err error)) {
	c := &sessionClock{tm: tm, start: time.Now(), attrs: httpSessionAttrs}
	return func(err error) {
		et := ""
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, transport.ErrClosed) && !errors.Is(err, io.EOF) {
			et = errorType(err)
		}
		c.record(et)
	}
}

// httpSessionAttrs are the attributes of a streamable HTTP session's
// duration.
var httpSessionAttrs = []attribute.KeyValue{
	semconv.NetworkTransportKey.String(string(mcpconv.NetworkTransportTCP)),
	semconv.NetworkProtocolName("http"),
}

// serverConn is a server connection whose end records its duration once.
type serverConn struct {
	forward
	sessionClock
}

// sessionClock records the duration of one session, once.
type sessionClock struct {
	tm    *Telemetry
	start time.Time
	attrs []attribute.KeyValue
	once  sync.Once
}

func (c *serverConn) Read(ctx context.Context) ([]byte, error) {
	b, err := c.Transport.Read(ctx)
	if err != nil {
		var tooLarge *transport.MessageTooLargeError
		switch {
		case errors.As(err, &tooLarge), ctx.Err() != nil:
			// The connection goes on (or the reader was stopped).
		case errors.Is(err, io.EOF), errors.Is(err, transport.ErrClosed):
			c.record("")
		default:
			c.record(string(mcpconv.ErrorTypeOther))
		}
	}
	return b, err
}

func (c *serverConn) Close() error {
	err := c.Transport.Close()
	c.record("")
	return err
}

func (c *sessionClock) record(errType string) {
	c.once.Do(func() {
		a := c.attrs
		if errType != "" {
			a = append(a[:len(a):len(a)], semconv.ErrorTypeKey.String(errType))
		}
		c.tm.serverSession.Record(context.Background(), time.Since(c.start).Seconds(), a...)
	})
}

// sessionKey is the context key of the MCP session id HTTPSessionID
// stores.
type sessionKey struct{}

// HTTPSessionID wraps the streamable HTTP handler so that the spans of
// requests of a stateful session carry mcp.session.id: it stores the
// request's Mcp-Session-Id header in the request context, which keel
// hands on to the handlers of the messages the HTTP request carries.
// (The initialize request has no session id yet.)
func HTTPSessionID(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, id))
		}
		h.ServeHTTP(w, r)
	})
}

func sessionIDFromContext(ctx context.Context) string {
	s, _ := ctx.Value(sessionKey{}).(string)
	return s
}
