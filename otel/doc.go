// Package otel instruments keel servers and clients with OpenTelemetry,
// following the OpenTelemetry semantic conventions for the Model Context
// Protocol (semconv v1.41.0, package mcpconv). It is a module of its own
// (github.com/keelmcp/keel/otel) so that the core module never imports
// OpenTelemetry.
//
// A Telemetry built by New plugs into the public seams of keel:
//
//   - Middleware (mcp.ServerOptions.Middleware) makes a SERVER span per
//     incoming request or notification and records
//     mcp.server.operation.duration;
//   - SendMiddleware (mcp.ServerOptions.SendMiddleware) makes a CLIENT span
//     per request or notification the server sends its client (sampling,
//     elicitation, progress, logging, ...) and records
//     mcp.client.operation.duration;
//   - ClientTransport wraps the transport an mcp.Client connects over: a
//     CLIENT span per request or notification the client sends, the W3C
//     trace context injected into params._meta, mcp.client.operation.duration
//     and mcp.client.session.duration, and a SERVER span (with
//     mcp.server.operation.duration) per request or notification the client
//     receives from its server (mcp.Client has no middleware seam of its
//     own, so the client side works on the JSON-RPC messages);
//   - ServerTransport wraps a connection a Server runs over (Server.Run):
//     it writes the trace context of the server's own requests and
//     notifications into their params._meta, and records
//     mcp.server.session.duration when the connection ends;
//   - HTTPSession, set as streamhttp.Options.OnSession, records
//     mcp.server.session.duration for the 2025 sessions of a streamable
//     HTTP handler, from their initialize to their end.
//
// The span of an incoming request has as parent the trace context the
// request carries in params._meta (traceparent, tracestate, baggage, as the
// conventions ask; both the 2025 revisions and 2026-07-28 carry _meta in
// every request). When _meta carries none, the parent is the span already
// in the request's context: on streamable HTTP, the HTTP server span of an
// otelhttp handler around keel's. When both exist, _meta wins (it is the
// caller's MCP span, whatever HTTP requests carried the message) and the
// ambient span is added as a link.
//
// A call's later rounds stay tied to the call that started them: on the
// client, the request of a later input_required round (2026-07-28) links
// to the round answered input_required, and a tasks/* request links to the
// tools/call that created its task (span links with the attribute
// keel.otel.link), also when made from another context; every round's
// server span, on whichever process serves it, is the child of its
// client span.
//
// With no TracerProvider or MeterProvider configured (the global defaults),
// the spans are non-recording and the histograms disabled: params are
// neither decoded nor rewritten, and the cost is a non-recording span per
// message, a few allocations (BenchmarkToolCall measures it).
package otel
