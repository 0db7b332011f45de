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
// Around the handler, RequireBearer makes the endpoint an OAuth resource
// server (RFC 9728 metadata) and CORS answers browsers' preflights; the
// Host and Origin checks against DNS rebinding are on by default.
package streamhttp
