// Package middleware is keel's tools/call chain: each stage of seed 000's
// processing order (and seed 003's five-stage chain) as a value that can be
// reordered, dropped, or interleaved with stages of your own.
//
// A Middleware wraps a Handler; a Chain lists middlewares, the first listed
// outermost, and ends in Dispatch, which runs the tool's own handler. A Chain
// is an mcp.ToolSource, so it goes straight into mcp.ServerOptions.Tools:
//
//	reg := registry.New(nil)
//	registry.MustRegister(reg, "echo", "Echoes a message.", echo, nil)
//	srv := mcp.NewServer(&mcp.ServerOptions{Tools: middleware.Standard(reg, nil)})
//
// Standard is the chain for people who do not want to choose:
//
//	Recover → PayloadLimit → Lookup → [Admit] → Concurrency → Lock → Validate →
//	AuditExit → AuditEnter → Timeout → Dispatch
//
// The stages:
//
//   - Recover: a panic becomes an INTERNAL tool error; the server lives on.
//   - PayloadLimit: arguments larger than a byte limit get RESOURCE_EXHAUSTED.
//   - Lookup: an unknown tool gets JSON-RPC -32602 carrying NOT_FOUND.
//   - Admit: the admission policy (StandardOptions.Admission, Chain.Admit)
//     refuses calls of tools the request may not use; the same policy
//     leaves them out of tools/list.
//   - Concurrency (Limiter): at most N calls execute at once; the rest get
//     RESOURCE_EXHAUSTED. A slot is held until the handler returns.
//   - Lock: a per-tool mutex, for tools registered Serial (or all tools).
//   - Validate: the arguments must match the tool's input schema, or the
//     call ends with INVALID_ARGUMENT listing every violation.
//   - AuditEnter, AuditExit: a pair of events per call to an AuditSink.
//   - Timeout: a response deadline. The handler's context is cancelled and
//     TIMEOUT is answered at once, while the handler may still run; its late
//     result is logged, never sent.
//   - Dispatch: the terminal handler.
//
// Middlewares are called once, when the chain is built on its first call;
// after that the chain is frozen (Use panics). A stage reports failures as
// errors: a *mcp.StructuredError becomes an isError result, a *mcp.Error a
// JSON-RPC error.
//
// The package also keeps the process-wide count of consecutive
// RESOURCE_EXHAUSTED rejections (ResourceExhaustedCount) and offers two
// built-in tools: health (RegisterHealthTool, seed 000's telemetry and
// thresholds) and server_ping (RegisterPingTool, seed 003).
//
// # Admission
//
// One mechanism gates tools, at list time and at call time: an
// AdmissionPolicy over a tool's metadata and the request's session. Three
// policies ship with the package: ModePolicy, the tool surface of a server
// mode (FULL, READONLY, TEST, MINIMAL; seed 003); TrustPolicy, which runs
// destructive tools only while a trust state is TRUSTED (seed 001); and
// Admin, the admin policy of seed 000's administrative tools
// admin/registerTool and admin/unregisterTool (NewAdmin,
// StandardOptions.Admin), which register tools of predefined types (echo,
// health, agentProxy) with their canonical schemas. AllOf composes
// policies. A tool a policy hides looks unknown (-32602); a refusal the
// client may see is an UNAUTHORIZED isError result.
package middleware
