// Package middleware is keel's tools/call chain: each stage of a tool
// call's processing (limits, lookup, admission, locking, validation, audit,
// deadline, dispatch) as a value that can be reordered, dropped, or
// interleaved with stages of your own.
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
//	Recover → PayloadLimit → Lookup → [Admit] → [RateLimit] → Concurrency →
//	Lock → Validate → AuditExit → AuditEnter → ResponseLimit → Deadline →
//	Timeout → Dispatch
//
// The stages:
//
//   - Recover: a panic becomes an INTERNAL tool error; the server lives on.
//   - PayloadLimit: arguments larger than a byte limit get RESOURCE_EXHAUSTED.
//   - Lookup: an unknown tool gets JSON-RPC -32602 carrying NOT_FOUND.
//   - Admit: the admission policy (StandardOptions.Admission, Chain.Admit)
//     refuses calls of tools the request may not use; the same policy
//     leaves them out of tools/list.
//   - RateLimit (RateLimiter, off by default): token buckets per client,
//     and per client and tool; a call over the rate gets RATE_LIMITED with
//     details.retryAfterMs, before it takes a slot.
//   - Concurrency (Limiter): at most N calls execute at once, and one
//     client at most its share of them (half by default); the rest get
//     RESOURCE_EXHAUSTED at once, nothing queues. A slot is held until the
//     handler returns. Calls that run as tasks (mcp.ToolCall.Task set)
//     take no slot: the Server's task pool bounds them
//     (mcp.TaskOptions.MaxRunning, MaxRunningPerOwner, MaxRunTime), so
//     long tasks never crowd out plain calls.
//   - Lock: a per-tool mutex, for tools registered Serial (or all tools).
//   - Validate: the arguments must match the tool's input schema, or the
//     call ends with INVALID_ARGUMENT listing every violation.
//   - AuditEnter, AuditExit: a pair of events per call to an AuditSink.
//   - ResponseLimit: a result larger than a byte limit, or with an array of
//     more items than a limit, is replaced by a RESOURCE_EXHAUSTED error
//     naming the limit; nothing is truncated.
//   - Deadline: a context deadline for tools without their own Timeout
//     (Standard: StandardOptions.DefaultTimeout). The handler runs on the
//     caller's goroutine under a context that ends at the deadline; once
//     it has passed the answer is TIMEOUT whatever the handler returns,
//     and the answer goes back up the chain when the handler returns.
//   - Timeout: a response deadline (Standard: a tool's own
//     registry.ToolOptions.Timeout). The handler runs on a goroutine of a
//     pool while the call waits; at the deadline its context is cancelled
//     and the stage returns TIMEOUT through the chain at once, while the
//     handler may still run. Once the deadline has passed the answer is
//     TIMEOUT whatever the handler returns; its late result is logged,
//     never sent, and what the stages outside hold for it (slot, lock,
//     audit-exit) is released when it really returns.
//   - Dispatch: the terminal handler. A handler error matching
//     errors.ErrUnsupported becomes NOT_IMPLEMENTED.
//
// Middlewares are called once, when the chain is built on its first call;
// after that the chain is frozen (Use panics). A stage reports failures as
// errors: a *mcp.StructuredError becomes an isError result, a *mcp.Error a
// JSON-RPC error.
//
// # Errors
//
// Every tool error the stages raise is a *mcp.StructuredError whose
// Retryable flag tells the client whether the same call may succeed later:
//
//	code                 raised by                                retryable
//	INVALID_ARGUMENT     Validate (arguments vs input schema)     no
//	INVALID_INPUT        tools refusing arguments that passed     no
//	                     the schema (the administrative tools)
//	NOT_FOUND            Lookup, Admit of a hidden tool (-32602)  no
//	UNAUTHORIZED         Admit: missing or refused credentials    no
//	PERMISSION_DENIED    Admit: not permitted (TrustPolicy)       no
//	RATE_LIMITED         RateLimit (details.retryAfterMs)         yes
//	RESOURCE_EXHAUSTED   Concurrency (slots, client share)        yes
//	                     PayloadLimit, ResponseLimit (sizes)      no
//	TIMEOUT              Timeout                                  yes
//	INTERNAL             Recover, AuditEnter failures             yes
//	NOT_IMPLEMENTED      Dispatch (errors.ErrUnsupported), the    no
//	                     admin agentProxy type when not added
//
// The flag follows the code (mcp.ErrorCode.Retryable) except for the size
// limits, where the same call would exceed the limit again.
//
// # Clients and their limits
//
// The fair share of the concurrency slots and the rate limit apply per
// client. A ClientKeyFunc (StandardOptions.ClientKey) says which client a
// call comes from; DefaultClientKey uses the call's peer
// (mcp.PeerFromContext): the bearer token's subject or client id, else the
// remote address (IPv6 by /64, through trusted proxies only), else the
// connection. What a client says about itself (its name, the sessions it
// opens) is never part of it, so it cannot enlarge its share. A
// ClientKeyFunc of your own may split a peer's share among its clients;
// the peer is still held to it. Every other per-peer bound of keel
// (tasks, listen streams, sessions, HTTP streams) uses the same peer.
// Per-client state is bounded: the Limiter keeps only clients holding
// slots, the RateLimiter at most RateLimitOptions.MaxClients clients.
//
// The package also keeps the process-wide count of consecutive
// RESOURCE_EXHAUSTED rejections (ResourceExhaustedCount) and offers two
// built-in tools: health (RegisterHealthTool: limits, memory, scheduling
// delay, concurrent executions and a healthy/degraded/unhealthy status
// against thresholds) and server_ping (RegisterPingTool: version, mode,
// uptime).
//
// # Admission
//
// One mechanism gates tools, at list time and at call time: an
// AdmissionPolicy over a tool's metadata and the request's session. Three
// policies ship with the package: ModePolicy, the tool surface of a server
// mode (FULL, READONLY, TEST, MINIMAL); TrustPolicy, which runs
// destructive tools only while a trust state is TRUSTED; and
// Admin, the admin policy of the administrative tools
// admin/registerTool and admin/unregisterTool (NewAdmin,
// StandardOptions.Admin), which register tools of predefined types (echo,
// health, agentProxy) with their canonical schemas. AllOf composes
// policies. A tool a policy hides looks unknown (-32602); a refusal the
// client may see is an UNAUTHORIZED isError result (missing or refused
// credentials, see Unauthorized) or a PERMISSION_DENIED one (not permitted,
// see Denied).
package middleware
