// Package streamhttp is MCP's streamable HTTP transport: a server Handler
// for one endpoint (NewServerHandler serves an mcp.Server; NewHandler any
// Serve function) and a client transport (NewClientTransport) for
// mcp.Client.
//
// One endpoint serves both eras. Legacy revisions (2025-11-25 and earlier)
// get sessions (Mcp-Session-Id), the GET stream, resumable SSE streams and
// DELETE, or, with Options.Stateless, a fresh session per POST. A request
// of revision 2026-07-28 is served on its own, without a session, in either
// mode: the handler checks its _meta, its MCP-Protocol-Version, Mcp-Method,
// Mcp-Name and Mcp-Param-* headers, and answers its errors with their HTTP
// statuses (404 for -32601; 400 for -32020, -32021 and -32022).
//
// Built with the tag keel_omit2025, the Handler serves revision 2026-07-28
// only: no sessions (GET and DELETE get 405, Options.EventStore is not
// used), a POST that names no revision gets the 2026-07-28 rules, except
// initialize, which Serve answers, and SupportedVersions defaults to
// 2026-07-28. The ClientTransport keeps both eras.
//
// # Answers and the Server's middleware
//
// Behind NewServerHandler, every answer to a well-formed request (one with
// a method and an id) passes through the Server's middleware chain
// (mcp.ServerOptions.Middleware), the handler's own refusals included: a
// 2026-07-28 request its checks of _meta, MCP-Protocol-Version, revision,
// Mcp-Method, Mcp-Name or Mcp-Param-* refuse is handed to the Server with
// its refusal, and a Middleware sees it as the *mcp.Error next returns,
// which it may log or replace (a Server without Middleware leaves the
// handler to answer it at once). Unless a Middleware replaces it, the client
// gets what the handler answers itself: 400 and the same JSON-RPC error (a
// replacement keeps 400 while its code is the refusal's, and gets its
// code's status otherwise). The handler alone answers what is not a
// well-formed request, and what concerns the HTTP exchange rather than a
// request, before any session exists to serve it: a body that is not
// JSON-RPC (-32700, -32600), over MaxBodyBytes or not received in time, a
// refused batch; the Host, Origin, Content-Type and Accept checks, a
// method other than POST, GET and DELETE, and RequireBearer's 401 and
// 403; the bounds on streams and sessions (503, 429), and shutting down;
// and for a 2025 session its MCP-Protocol-Version header, a missing,
// unknown or ended Mcp-Session-Id, and an id in use by an unanswered
// request on the session's streams (whose answer could not be told apart
// from the first's). Wrap the Handler to observe those. A Handler that
// NewHandler makes for another Serve answers all its refusals itself.
//
// # Peers
//
// Who a request comes from is what the network, or a verified credential,
// says: the subject of the bearer token RequireBearer verified (else its
// client id; a token naming neither is refused), else the remote address
// of the connection, an IPv6 address counting by its /64 prefix. Behind a
// reverse proxy, list it in Options.TrustedProxies: from those addresses
// only, the one header the proxy sets is read (Options.TrustedProxyHeader:
// X-Forwarded-For by default, or Forwarded; never the other, which a
// proxy passes through as the client sent it), and its rightmost hop that
// is not a trusted proxy is the client; from anyone else no header is
// read. The Handler places that transport.Peer in every request's context
// (mcp.PeerFromContext), and every per-peer bound of keel, here and in the
// server (request slots, tasks, listen streams, rate limits), is keyed by
// it. What a client says about itself (its clientInfo name, the sessions
// it opens) never changes its peer.
//
// # Safe by default
//
// Everything a peer can make the Handler hold is bounded, in all and per
// peer, and a request refused at a bound gets a JSON-RPC error whose
// message and data name the Options field and its value:
//
//   - live sessions: MaxSessions (DefaultMaxSessions; an initialize beyond
//     it gets 503), MaxSessionsPerPeer of one peer
//     (DefaultMaxSessionsPerPeer; 429);
//   - a session no request names after its initialize ends after
//     InitTimeout (DefaultInitTimeout), any other after IdleTimeout
//     (DefaultIdleTimeout) without requests or open streams;
//   - HTTP requests in progress, every POST until its answer and every GET
//     stream, all sessions and modes together: MaxStreams
//     (DefaultMaxStreams; 503), MaxStreamsPerPeer of one peer
//     (DefaultMaxStreamsPerPeer; 429);
//   - GET streams of one session: MaxSessionGETStreams
//     (DefaultMaxSessionGETStreams; 429);
//   - a request body: MaxBodyBytes (413), delivered within BodyReadTimeout
//     (DefaultBodyReadTimeout; 408 and the connection is closed);
//   - log lines of refused requests: RefusalLogsPerSecond
//     (DefaultRefusalLogsPerSecond), with the values a peer sent (Host,
//     Origin, session id) cut to 64 bytes and their length.
//
// The Host and Origin checks against DNS rebinding are on by default
// (localhost only): a server reachable under another name lists it in
// Options.AllowedHosts.
//
// Connections are bounded around the Handler: NewHTTPServer returns an
// http.Server with a read-header timeout, an idle timeout for keep-alive
// connections, a timeout on each write (SSE streams may last, a client
// that stops reading may not), a header size limit and its error log on
// slog (clipped and rate-limited); LimitListener closes connections beyond MaxConns in all or
// MaxConnsPerPeer from one address at accept, logging them at a bounded
// rate:
//
//	hs := streamhttp.NewHTTPServer(mux, nil)
//	_ = hs.Serve(streamhttp.LimitListener(ln, nil))
//
// Around the handler, RequireBearer makes the endpoint an OAuth resource
// server (RFC 9728 metadata) and CORS answers browsers' preflights.
// RequireBearer needs BearerOptions.Resource, the endpoint's canonical URL,
// and refuses tokens not issued for it; it panics without it. Its
// challenges name only configured URLs, never the request's Host, so it
// may wrap the Handler even though the Host check runs inside.
package streamhttp
