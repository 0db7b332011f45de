package streamhttp

import (
	"github.com/keelmcp/keel/mcp"
)

// NewServerHandler returns a streamable HTTP handler serving srv: mount it
// on your endpoint path ("/mcp") in a net/http server. opts may be nil; its
// Serve is replaced by srv.Run, and SupportedVersions, MaxDepth and Logger
// default to the server's. In stateless mode (opts.Stateless) each POST is
// served by a fresh session that is already initialized at the revision of
// its MCP-Protocol-Version header.
//
// Handlers see the values of the HTTP request that carried their request in
// their context: mcp.TokenInfoFromContext returns the caller's verified
// token when the handler is wrapped in RequireBearer. Messages a handler
// sends (progress, log messages, requests to the client) travel on its
// request's SSE stream.
//
// The HTTP transport lives in its own package so that stdio-only servers do
// not link net/http (about 1.3 MiB of resident memory and part of start-up).
func NewServerHandler(srv *mcp.Server, opts *Options) *Handler {
	var o Options
	if opts != nil {
		o = *opts
	}
	so := srv.Options()
	o.Serve = srv.Run
	if o.SupportedVersions == nil {
		o.SupportedVersions = mcp.SupportedVersions
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = so.MaxDepth
	}
	if o.Logger == nil {
		o.Logger = so.Logger
	}
	return NewHandler(&o)
}
