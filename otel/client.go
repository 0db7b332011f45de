package otel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/keelmcp/keel/transport"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	"go.opentelemetry.io/otel/trace"
)

// MaxPendingSpans bounds, per client connection, the spans that wait for
// an answer: those of the client's requests, and apart those of the
// server's requests the client is answering. A request past it still goes
// through, its trace context carried, but its span ends at once (with the
// attribute keel.otel.untracked_response = true) instead of with its
// answer.
const MaxPendingSpans = 4096

// ClientTransport wraps the transport an mcp.Client connects over
// (Client.Connect(ctx, tm.ClientTransport(t))): mcp.Client has no
// middleware seam, so the client side is instrumented on the JSON-RPC
// messages themselves.
//
// Every request or notification the client writes gets a CLIENT span, a
// child of the span in the context of the call (Client.CallTool(ctx, ...)),
// and the span's trace context is injected into params._meta with the
// Propagator (W3C traceparent, tracestate, baggage), in both protocol
// revisions. A request's span ends when its response is read (error.type
// and rpc.response.status_code from a JSON-RPC error, tool_error from a
// tool result with isError), when the client cancels it
// (notifications/cancelled: error.type cancelled), or when the connection
// ends (transport_closed); mcp.client.operation.duration is recorded then.
// mcp.client.session.duration is recorded when the connection is closed or
// its Read ends. Batches (a JSON array) pass through untraced; so do the
// client's answers to the server's requests. The wrapper keeps the
// optional interfaces of package transport (PeerWatcher, MessageLimiter,
// MessageContexter) and the SessionID method of the streamable HTTP client
// transport.
func (tm *Telemetry) ClientTransport(t transport.Transport) transport.Transport {
	c := &clientConn{forward: forward{t}, tm: tm, start: time.Now(), pending: make(map[string]*pendingOp), serving: make(map[string]*pendingOp), links: newRoundLinks()}
	c.transport, c.httpProto = networkTransport(t.Kind())
	c.sid, _ = t.(interface{ SessionID() string })
	return c
}

// clientConn is an instrumented client connection.
type clientConn struct {
	forward
	tm        *Telemetry
	start     time.Time
	transport string
	httpProto bool
	sid       interface{ SessionID() string }

	mu      sync.Mutex
	pending map[string]*pendingOp // by raw request id
	serving map[string]*pendingOp // the server's requests being answered, by raw id
	version string                // negotiated in initialize
	ended   bool
	links   *roundLinks
}

// pendingOp is a request whose response has not been read yet.
type pendingOp struct {
	o       op
	ctx     context.Context
	span    trace.Span
	start   time.Time
	metrics bool // the duration histogram is enabled
}

// envelope is what the client reads of a message when it instruments it.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result *struct {
		IsError         bool   `json:"isError"`
		ProtocolVersion string `json:"protocolVersion"`
		ResultType      string `json:"resultType"`
		RequestState    string `json:"requestState"`
		TaskID          string `json:"taskId"` // 2026-07-28
		Task            *struct {
			TaskID string `json:"taskId"` // 2025-11-25
		} `json:"task"`
	} `json:"result"`
	Error *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c *clientConn) Write(ctx context.Context, msg []byte) error {
	if len(msg) == 0 || msg[0] != '{' {
		return c.Transport.Write(ctx, msg)
	}
	rawID, method, ok := scanHead(msg)
	if !ok {
		return c.Transport.Write(ctx, msg)
	}
	if method == "" { // the client's answer to a request of the server
		if len(rawID) == 0 || !c.answering() {
			return c.Transport.Write(ctx, msg)
		}
		key := append([]byte(nil), rawID...) // msg is the caller's
		err := c.Transport.Write(ctx, msg)
		c.answered(msg, key, err)
		return err
	}
	start := time.Now()
	metrics := c.tm.clientOp.Enabled(ctx)
	propagate := len(c.tm.prop.Fields()) > 0
	sctx, span := c.tm.tracer.Start(ctx, method, c.tm.clientKind...)
	recording := span.IsRecording()
	if !recording && !metrics && !propagate {
		// No provider configured: nothing to record or carry.
		err := c.Transport.Write(ctx, msg)
		span.End()
		return err
	}
	var env envelope
	_ = json.Unmarshal(msg, &env)
	p := parseParams(env.Params)
	o := op{method: method, id: idString(rawID), transport: c.transport, httpProto: c.httpProto}
	o.setTarget(p)
	o.version = metaCarrier(p.Meta).Get(metaProtocolVersion)
	c.mu.Lock()
	if o.version == "" {
		o.version = c.version
	}
	c.mu.Unlock()
	if c.sid != nil {
		o.session = c.sid.SessionID()
	}
	if recording {
		span.SetName(o.spanName(c.tm.uriInName))
		span.SetAttributes(o.startAttrs()...)
		c.addLinks(span, &o, p)
	}
	if propagate {
		msg = injectMeta(sctx, c.tm, msg)
	}

	if o.method == "notifications/cancelled" {
		c.finish(p.RequestID, func(po *pendingOp) { po.o.errType, po.o.errMsg = "cancelled", "cancelled by the client" })
	}
	if o.id == "" || (!recording && !metrics) { // done once written
		err := c.Transport.Write(ctx, msg)
		if err != nil {
			o.errType, o.errMsg = errorType(err), err.Error()
		}
		c.done(sctx, span, &o, start, metrics)
		return err
	}
	key := string(rawID)
	c.mu.Lock()
	tracked := !c.ended && len(c.pending) < MaxPendingSpans
	if tracked {
		c.pending[key] = &pendingOp{o: o, ctx: sctx, span: span, start: start, metrics: metrics}
	}
	c.mu.Unlock()
	if !tracked {
		span.SetAttributes(attribute.Bool("keel.otel.untracked_response", true))
	}
	err := c.Transport.Write(ctx, msg)
	switch {
	case err != nil && tracked:
		c.finish(rawID, func(po *pendingOp) { po.o.errType, po.o.errMsg = errorType(err), err.Error() })
	case err != nil:
		o.errType, o.errMsg = errorType(err), err.Error()
		c.done(sctx, span, &o, start, metrics)
	case !tracked:
		c.done(sctx, span, &o, start, metrics)
	}
	return err
}

// injectMeta returns msg with the trace context of ctx in params._meta
// (msg itself when the propagator writes nothing or msg cannot be
// rewritten).
func injectMeta(ctx context.Context, tm *Telemetry, msg []byte) []byte {
	carrier := metaCarrier{}
	tm.prop.Inject(ctx, carrier)
	if len(carrier) == 0 {
		return msg
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil {
		return msg
	}
	ps := map[string]json.RawMessage{}
	if raw, ok := m["params"]; ok && json.Unmarshal(raw, &ps) != nil {
		return msg // params that are not an object carry no _meta
	}
	meta := metaCarrier{}
	if raw, ok := ps["_meta"]; ok && json.Unmarshal(raw, (*map[string]json.RawMessage)(&meta)) != nil {
		return msg
	}
	if meta == nil {
		meta = metaCarrier{}
	}
	for k, v := range carrier {
		meta[k] = v
	}
	var err error
	if ps["_meta"], err = marshal(meta); err != nil {
		return msg
	}
	if m["params"], err = marshal(ps); err != nil {
		return msg
	}
	out, err := marshal(m)
	if err != nil {
		return msg
	}
	return out
}

// marshal encodes v without HTML escaping and without the trailing
// newline.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func (c *clientConn) Read(ctx context.Context) ([]byte, error) {
	b, err := c.Transport.Read(ctx)
	if err != nil {
		var tooLarge *transport.MessageTooLargeError
		if !errors.As(err, &tooLarge) && ctx.Err() == nil &&
			(errors.Is(err, io.EOF) || errors.Is(err, transport.ErrClosed)) {
			c.end("")
		}
		return b, err
	}
	rawID, method, ok := scanHead(b)
	if !ok {
		return b, nil
	}
	if method != "" { // a request or notification of the server
		c.received(ctx, b, rawID, method)
		return b, nil
	}
	if !c.awaiting() {
		return b, nil
	}
	var env envelope
	if json.Unmarshal(b, &env) != nil || env.Method != "" || len(env.ID) == 0 {
		return b, nil
	}
	c.finish(env.ID, func(po *pendingOp) {
		switch {
		case env.Error != nil:
			po.o.setCode(env.Error.Code, env.Error.Message)
		case env.Result != nil && env.Result.IsError && po.o.method == "tools/call":
			po.o.errType, po.o.errMsg = ErrorTypeToolError, "tool returned isError"
		case env.Result != nil && env.Result.ResultType == "input_required":
			c.links.put(LinkKindInputRound, env.Result.RequestState, po.span.SpanContext())
		case env.Result != nil && (env.Result.TaskID != "" || env.Result.Task != nil) && !strings.HasPrefix(po.o.method, "tasks/"):
			id := env.Result.TaskID
			if env.Result.Task != nil {
				id = env.Result.Task.TaskID
			}
			c.links.put(LinkKindTask, id, po.span.SpanContext())
		case env.Result != nil && po.o.method == "initialize" && env.Result.ProtocolVersion != "":
			c.mu.Lock()
			c.version = env.Result.ProtocolVersion
			c.mu.Unlock()
			po.o.version = env.Result.ProtocolVersion
		}
	})
	return b, nil
}

// finish ends the pending span of the request with raw id id, after
// outcome has set its result (no-op when none is pending).
func (c *clientConn) finish(id json.RawMessage, outcome func(*pendingOp)) {
	if len(id) == 0 {
		return
	}
	c.mu.Lock()
	po := c.pending[string(id)]
	delete(c.pending, string(id))
	c.mu.Unlock()
	if po == nil {
		return
	}
	outcome(po)
	c.done(po.ctx, po.span, &po.o, po.start, po.metrics)
}

// addLinks links the span of a later input_required round to the round
// answered input_required (by its requestState), and the span of a tasks/*
// request to the call that created the task: rounds and polls made from
// another context (or after the first round's trace ended) stay tied to
// the call that started them.
func (c *clientConn) addLinks(span trace.Span, o *op, p *params) {
	if sc, ok := c.links.get(LinkKindInputRound, p.RequestState); ok {
		span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{LinkKindKey.String(LinkKindInputRound)}})
	}
	if strings.HasPrefix(o.method, "tasks/") {
		if sc, ok := c.links.get(LinkKindTask, p.TaskID); ok {
			span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{LinkKindKey.String(LinkKindTask)}})
		}
	}
}

// awaiting reports whether a response is awaited (Read skips decoding
// when none is).
func (c *clientConn) awaiting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) > 0
}

// done ends a client span and records its duration.
func (c *clientConn) done(ctx context.Context, span trace.Span, o *op, start time.Time, metrics bool) {
	end(ctx, span, o)
	if metrics {
		c.tm.clientOp.Record(ctx, time.Since(start).Seconds(), mcpconv.MethodNameAttr(o.method), o.metricAttrs()...)
	}
}

func (c *clientConn) Close() error {
	err := c.Transport.Close()
	c.end("")
	return err
}

// end ends the connection once: pending spans end with transport_closed
// and the session duration is recorded.
func (c *clientConn) end(errType string) {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return
	}
	c.ended = true
	pending, serving := c.pending, c.serving
	c.pending, c.serving = nil, nil
	version := c.version
	c.mu.Unlock()
	for _, po := range pending {
		po.o.errType, po.o.errMsg = "transport_closed", "the connection ended before the response"
		c.done(po.ctx, po.span, &po.o, po.start, po.metrics)
	}
	for _, po := range serving {
		po.o.errType, po.o.errMsg = "transport_closed", "the connection ended before the answer"
		c.served(po.ctx, po.span, &po.o, po.start, po.metrics)
	}
	if !c.tm.clientSession.Enabled(context.Background()) {
		return
	}
	a := make([]attribute.KeyValue, 0, 4)
	if c.transport != "" {
		a = append(a, semconv.NetworkTransportKey.String(c.transport))
	}
	if c.httpProto {
		a = append(a, semconv.NetworkProtocolName("http"))
	}
	if version != "" {
		a = append(a, semconv.McpProtocolVersion(version))
	}
	if errType != "" {
		a = append(a, semconv.ErrorTypeKey.String(errType))
	}
	c.tm.clientSession.Record(context.Background(), time.Since(c.start).Seconds(), a...)
}
