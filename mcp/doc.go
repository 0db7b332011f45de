// Package mcp is the Model Context Protocol itself: the vocabulary
// (requests, results, content, capabilities, errors), the Server that
// serves any Transport, and the Client.
//
// # Quick start
//
// Register typed tools in a registry, hand it to a Server, and run the
// server on a transport (stdio here):
//
//	type GreetIn struct {
//		Name string `json:"name" jsonschema:"minLength=1"`
//	}
//	type GreetOut struct {
//		Greeting string `json:"greeting"`
//	}
//
//	reg := registry.New(nil)
//	registry.MustRegister(reg, "greet", "Greets someone by name",
//		func(ctx context.Context, in GreetIn) (GreetOut, error) {
//			return GreetOut{Greeting: "Hello, " + in.Name + "!"}, nil
//		}, nil)
//	srv := mcp.NewServer(&mcp.ServerOptions{Name: "hello", Version: "0.1.0",
//		Registry: reg, Tools: middleware.Standard(reg, nil)})
//	err := srv.Run(ctx, transport.NewStdio(nil))
//
// In a test, join a Client to the server with the in-memory transport:
//
//	clientEnd, serverEnd := transport.NewPipe(nil)
//	go srv.Run(ctx, serverEnd)
//	c := mcp.NewClient(nil)
//	err := c.Connect(ctx, clientEnd)
//	res, err := c.CallTool(ctx, "greet", map[string]any{"name": "Ann"})
//
// The package example runs exactly this. Input types become the tools'
// JSON Schemas (package registry), middleware.Standard adds the tools/call
// stages (validation, timeouts, audit), and the sections below say what
// the Server does for each request.
//
// # Revisions and eras
//
// A Server speaks two eras at once. Sessions of the 2025 revisions
// negotiate 2025-11-25, 2025-06-18, 2025-03-26 or 2024-11-05 with
// initialize and keep that revision, the client's capabilities and the
// logging level for the life of the connection. Revision 2026-07-28 is stateless: a request whose
// params._meta names io.modelcontextprotocol/protocolVersion is served from
// its own _meta (capabilities, logLevel, progressToken) on any connection,
// initialized or not; server/discover replaces initialize,
// subscriptions/listen replaces the GET stream and resources/subscribe,
// and every result carries resultType.
//
// Each era is one engine that takes a request once and applies the era's
// rules: which methods exist, how results are shaped, how a handler's need
// for input is met. Handlers never test the revision. What they ask about
// the peer is answered by the request they serve, alone:
// RequestFromContext(ctx).ProtocolVersion(), ClientCapabilities(),
// ClientInfo() and LogLevel() are a 2026-07-28 request's own, and what
// initialize declared for a request of a 2025 session. The Session
// (SessionFromContext) is the connection, the same for all its requests;
// it answers nothing about the peer but its kind (Session.ProtocolVersion).
//
// Built with the tag keel_omit2025, the Server serves revision 2026-07-28
// only: the files of the 2025 rules (rev2025_*.go) are left out, a
// request that names no revision gets the 2026-07-28 rules, initialize is
// answered with -32022 (data.supported lists 2026-07-28 alone), the 2025
// methods answer -32601, the Session's requests to the client return
// an error matching ErrNoClientRequests, and nothing reaches a client
// outside a request (Session.Notify returns ErrNoChannel; Session.Log
// follows the request's own logLevel only). The Client of that build
// speaks 2026-07-28 only: it is ClientOptions.ProtocolVersion's default,
// Connect refuses another revision (an error matching
// ErrNeedsVersion20260728), and the Client methods of the 2025 methods
// (Ping, SetLoggingLevel, Subscribe, the 2025-11-25 tasks) send nothing
// and return an error matching ErrMethodRemoved. The API is the same, so
// a program builds either way, and the quick start runs in both builds.
//
// # Asking the client
//
// A handler that needs the user or the client's model returns an
// *InputRequiredError (InputRequired) and reads the answers with
// InputFromContext on the next call. A 2026-07-28 client receives an
// input_required result with a requestState and calls again; a 2025
// client is asked by the server itself (elicitation/create,
// sampling/createMessage, roots/list), and the handler runs again. The
// Session methods CreateMessage, Elicit and ListRoots remain for 2025
// sessions only: while serving a 2026-07-28 request they fail with
// ErrNoClientRequests.
//
// The requestState is encrypted and authenticated (AES-256-GCM under a key
// derived per key id with HKDF-SHA-256) and bound to the request it was
// issued for, its caller and an expiry (ServerOptions.StateTTL). Give every
// replica the same key: ServerOptions.StateKey, or the key ring StateKeys
// for rotation. A key shorter than MinStateKeyBytes fails
// ServerOptions.Validate (NewServer panics with the *OptionError); without
// a key each process uses a random one and warns when it first seals a state. StateSingleUse refuses a
// second use of a state. Every refused state is logged with its reason, at
// a bounded rate.
//
// # Requests
//
// Every request is owned, from the moment it is read until it is answered,
// by one value that registers its id (a duplicate is refused), cancels it
// on notifications/cancelled, at the end of the connection or when the
// client goes away (a transport.PeerWatcher reports it), recovers a panic
// of its handler, and answers it exactly once, with what its handler chain
// returns: a deadline answers by returning through the chain (see
// ToolCall.Detach), and a cancellation suppresses the answer. The methods a server
// serves, and the eras they exist in, are one static table. When the input
// ends (stdin closed), requests in flight still get ShutdownTimeout to
// finish and be answered.
//
// # Extending the server
//
// A method handler is a MethodHandler: it takes the *Request
// (RequestFromContext in any handler) and returns the result or an error;
// the Server answers. ServerOptions offers the seams:
//
//   - Middleware wraps the handling of every incoming request and
//     notification, built-in and custom methods alike, in both eras (the
//     first listed is the outermost);
//   - SendMiddleware wraps every request and notification the server sends;
//   - Methods and Notifications add methods of your own (a name the server
//     serves itself makes NewServer panic);
//   - Capabilities declares Experimental entries and Extensions beyond
//     those the server derives.
//
// Server.Sessions lists the live connections, Session.Notify sends one of
// them a notification, and Server.NotifyAll reaches every running 2025
// session and every open 2026-07-28 subscriptions/listen stream.
//
// # Limits
//
// What a peer can make a Server hold is bounded: message nesting depth and
// batch size (MaxDepth, MaxBatch), rounds of input per request
// (MaxInputRounds), open subscriptions/listen requests in all and per
// peer (MaxListens, MaxListensPerClient; beyond them CodeServerBusy with
// a RESOURCE_EXHAUSTED StructuredError naming the limit), used states
// remembered in single-use mode (MaxUsedStates), each request the server
// sends a client (RequestTimeout), and tasks: handlers running in the task
// pool in all and per owner, their run time, tasks in progress and
// finished ones per owner, a result's size and a task's ttl (TaskOptions).
//
// A peer (PeerFromContext) is who the transport says a request comes
// from: a verified token's subject or client id, else the remote address
// (HTTP), else the connection (stdio, the in-memory pipe); never what the
// client says about itself. Per-peer bounds are keyed by it, so a peer's
// share stays one share however many names or sessions it uses; an
// anonymous 2026-07-28 caller's tasks belong to its peer.
//
// Bytes are bounded as well as counts: a resource URI or task id a client
// names (MaxURIBytes), the subscriptions of a session and the filter of a
// listen (MaxSubscriptionBytes), and every message the server sends (the
// transport's own MaxMessageBytes: a response past it is answered with an
// error naming the limit instead, see transport.MessageLimiter). What a
// peer makes the server log is bounded too (Logger, LogLinesPerSecond),
// and a handler's plain error text reaches the log, not the client
// (ExposeErrorText).
package mcp

// The files of this package follow its design, one prefix per concern:
//
//	proto_*          the protocol vocabulary: the types of the wire, their JSON, the errors
//	request*, engine.go, methods.go, reader.go, conn.go, session*.go, server*.go
//	                 a request and its answer: reading, the method table, the engines, the
//	                 answer path, connections and the Server
//	rev2025_*        the 2025 rules (initialize and the state gate, the session's
//	                 lifecycle, log level and change notifications, the legacy engine,
//	                 downgrading, batches, requests to the client, the 2025-11-25 tasks,
//	                 their policy and the sessions of their owners);
//	                 left out by the build tag keel_omit2025, rev2025_omitted.go stands in
//	rev2026_*        the 2026-07-28 rules (_meta, the modern engine, requestState,
//	                 subscriptions/listen, the tasks extension)
//	feature_*        what a server offers: tools, resources, prompts, completion,
//	                 logging, progress and list changes
//	task_*           the tasks of both revisions: options, host, runner, store
//	client_*         the Client (client_rev2026_*: what revision 2026-07-28 has); its 2025
//	                 session and tasks are rev2025_client_*, left out by keel_omit2025
//	                 with rev2025_omitted_client.go standing in
