package streamhttp

import (
	"bytes"
	"context"
	"slices"
	"sync"

	"github.com/keelmcp/keel/mcp"
)

// NewServerHandler returns a streamable HTTP handler serving srv: mount it
// on your endpoint path ("/mcp") in a net/http server. opts may be nil; its
// Serve is replaced by srv.Run, SupportedVersions defaults to
// mcp.AllVersions(), and MaxDepth and Logger to the server's. In stateless
// mode (opts.Stateless) each POST is served by a fresh session that is
// already initialized at the revision of its MCP-Protocol-Version header.
//
// The endpoint serves both eras: clients of the 2025 revisions initialize
// (a session in stateful mode), while each request of revision 2026-07-28
// (mcp.Version20260728) is served on its own, in either mode, from the
// version and capabilities in its params._meta (see Handler for the checks
// the transport makes first and the HTTP statuses of modern errors). Unless
// opts sets ToolParamHeaders, the Mcp-Param-* headers of a modern tools/call
// are checked against the x-mcp-header annotations of the tool's input
// schema, as the server's ToolSource lists it.
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
	o.ServeRequest, o.serveRequestAborts = srv.ServeRequest, true
	o.serveRefusals = len(so.Middleware) > 0 // without one, nobody but the client sees a refusal: answered at once
	o.newCorrelationID = so.NewID
	if o.SupportedVersions == nil {
		o.SupportedVersions = mcp.AllVersions()
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = so.MaxDepth
	}
	if o.Logger == nil {
		o.Logger = so.Logger
	}
	if o.ToolParamHeaders == nil && so.Tools != nil {
		o.ToolParamHeaders = toolParamHeaders(so.Tools)
	}
	return NewHandler(&o)
}

// toolParamHeaders looks a tool up in src (by name when src is an
// mcp.ToolFinder, as registry.Registry and middleware.Chain are) and returns its x-mcp-header
// annotations; the annotations of each tool are parsed again only when its
// input schema changes.
func toolParamHeaders(src mcp.ToolSource) func(ctx context.Context, tool string) []ParamHeader {
	type entry struct {
		schema  []byte
		headers []ParamHeader
	}
	var mu sync.Mutex
	cache := map[string]entry{}
	find, _ := src.(mcp.ToolFinder)
	return func(ctx context.Context, name string) []ParamHeader {
		var tool *mcp.Tool
		if find != nil { // looked up by name
			tool, _ = find.FindTool(ctx, name)
		} else {
			tools, err := src.ListTools(ctx)
			if err != nil {
				return nil
			}
			if i := slices.IndexFunc(tools, func(t *mcp.Tool) bool { return t != nil && t.Name == name }); i >= 0 {
				tool = tools[i]
			}
		}
		if tool == nil {
			return nil
		}
		schema := tool.InputSchema
		mu.Lock()
		defer mu.Unlock()
		if e, ok := cache[name]; ok && bytes.Equal(e.schema, schema) {
			return e.headers
		}
		e := entry{schema: bytes.Clone(schema), headers: paramHeadersOf(schema)}
		if len(cache) >= 4096 {
			clear(cache) // a bound for tool sources that invent names
		}
		cache[name] = e
		return e.headers
	}
}
