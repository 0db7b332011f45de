// Package apps serves MCP Apps: interactive HTML views that a host renders
// in a sandboxed iframe beside a tool's result (the MCP extension
// "io.modelcontextprotocol/ui").
//
// A view is a ui:// resource whose MIME type is MIMEType
// ("text/html;profile=mcp-app"). A tool links to it through its
// _meta.ui.resourceUri (ToolMeta); the view's _meta.ui (ResourceMeta)
// carries the origins the host's Content-Security-Policy must allow
// (connectDomains, resourceDomains, frameDomains, baseUriDomains), the
// browser permissions it asks for and whether it prefers a border. Inside
// the iframe the view talks to the host over postMessage (JSON-RPC): the
// host hands it the tool's input and result, and forwards the tools/call
// requests it makes to this server.
//
// Serving a view takes three steps:
//
//   - AddView (or AddViewFS, for an embed.FS) registers the HTML as a
//     ui:// resource with the right MIME type and metadata;
//   - ToolMeta.Meta is the _meta of the tool that shows it (or of a tool
//     only the view calls: Visibility [VisibleToApp]);
//   - Enable, at start-up, checks every link and every CSP origin
//     (ErrUnknownView, ErrInvalidDomain, ...), declares the extension and
//     adds HideAppOnlyTools to the server's middleware.
//
// Hosts that do not render views see plain tools: the extension adds
// members under _meta only, and HideAppOnlyTools leaves the tools that
// only a view may call out of their tools/list. A handler asks RendersViews
// whether the client that sent the request renders views (its declared
// capabilities in a 2025 session, the request's own in 2026-07-28) and
// falls back to a text result when it does not.
package apps
