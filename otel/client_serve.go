package otel

import (
	"context"
	"encoding/json"
	"time"

	"github.com/keelmcp/keel/transport"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	"go.opentelemetry.io/otel/trace"
)

// received makes the SERVER span of a request or notification the client
// read from its server (sampling/createMessage, elicitation/create,
// roots/list, notifications/progress, ...): its parent is the trace
// context of params._meta, when the server sent one. A notification's
// span ends at once; a request's when the client writes its answer
// (answered), or when the connection ends.
func (c *clientConn) received(ctx context.Context, msg, rawID []byte, method string) {
	start := time.Now()
	metrics := c.tm.serverOp.Enabled(ctx)
	var p *params
	pctx := ctx
	if len(c.tm.prop.Fields()) > 0 {
		p = paramsOf(msg)
		if len(p.Meta) > 0 {
			pctx = c.tm.prop.Extract(ctx, metaCarrier(p.Meta))
		}
	}
	sctx, span := c.tm.tracer.Start(pctx, method, c.tm.serverKind...)
	recording := span.IsRecording()
	if !recording && !metrics {
		span.End()
		return
	}
	if p == nil {
		p = paramsOf(msg)
	}
	o := op{method: method, id: idString(rawID), transport: c.transport, httpProto: c.httpProto}
	o.setTarget(p)
	c.mu.Lock()
	o.version = c.version
	c.mu.Unlock()
	if v := metaCarrier(p.Meta).Get(metaProtocolVersion); v != "" {
		o.version = v
	}
	if c.sid != nil {
		o.session = c.sid.SessionID()
	}
	if recording {
		span.SetName(o.spanName(c.tm.uriInName))
		span.SetAttributes(o.startAttrs()...)
	}
	if o.id == "" {
		c.served(sctx, span, &o, start, metrics)
		return
	}
	c.mu.Lock()
	tracked := !c.ended && len(c.serving) < MaxPendingSpans
	if tracked {
		c.serving[string(rawID)] = &pendingOp{o: o, ctx: sctx, span: span, start: start, metrics: metrics}
	}
	c.mu.Unlock()
	if !tracked {
		span.SetAttributes(attribute.Bool("keel.otel.untracked_response", true))
		c.served(sctx, span, &o, start, metrics)
	}
}

// answered ends the span of the server's request that msg (the client's
// response, raw id rawID) answers; err is the Write's outcome.
func (c *clientConn) answered(msg, rawID []byte, err error) {
	c.mu.Lock()
	po := c.serving[string(rawID)]
	delete(c.serving, string(rawID))
	c.mu.Unlock()
	if po == nil {
		return
	}
	var env struct {
		Error *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	switch {
	case err != nil:
		po.o.errType, po.o.errMsg = errorType(err), err.Error()
	case json.Unmarshal(msg, &env) == nil && env.Error != nil:
		po.o.setCode(env.Error.Code, env.Error.Message)
	}
	c.served(po.ctx, po.span, &po.o, po.start, po.metrics)
}

// answering reports whether a request of the server awaits the client's
// answer.
func (c *clientConn) answering() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.serving) > 0
}

// served ends a client-side SERVER span and records its duration.
func (c *clientConn) served(ctx context.Context, span trace.Span, o *op, start time.Time, metrics bool) {
	end(ctx, span, o)
	if metrics {
		c.tm.serverOp.Record(ctx, time.Since(start).Seconds(), mcpconv.MethodNameAttr(o.method), o.metricAttrs()...)
	}
}

// paramsOf decodes the params of a whole message.
func paramsOf(msg []byte) *params {
	var env struct {
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(msg, &env)
	return parseParams(env.Params)
}

// Write of a server connection: the requests and notifications the
// server sends carry the trace context of their context (the CLIENT span
// SendMiddleware starts) in params._meta.
func (c *serverConn) Write(ctx context.Context, msg []byte) error {
	if len(c.tm.prop.Fields()) > 0 {
		if _, method, ok := scanHead(msg); ok && method != "" {
			msg = injectMeta(ctx, c.tm, msg)
		}
	}
	return c.Transport.Write(ctx, msg)
}

var _ transport.Transport = (*serverConn)(nil)
