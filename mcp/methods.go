package mcp

import (
	"context"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// era is a bit set of the protocol eras a method exists in.
type era uint8

const (
	// eraLegacy: sessions initialized at 2025-11-25 or earlier.
	eraLegacy era = 1 << iota
	// eraModern: requests of revision 2026-07-28 (per-request _meta).
	eraModern

	eraBoth = eraLegacy | eraModern
)

// method is one row of the method table: the eras the method exists in,
// whether this server (or session) offers it, and its handler.
type method struct {
	eras era
	// offered reports whether the server offers the method to this
	// session (nil: always); when not, the request gets -32601.
	offered func(ss *Session) bool
	// handle serves the request and returns its outcome; the request
	// answers with it (request.go).
	handle MethodHandler
	// cacheable: modern results carry ttlMs and cacheScope.
	cacheable bool
	// inline: the handler answers at once (it waits for nothing): it runs
	// on the goroutine that reads the request, also in a batch.
	inline bool
	// lasting: the request stays open (subscriptions/listen); it never
	// runs on the reading goroutine, and a cancellation ends it with an
	// answer.
	lasting bool
}

// lookupMethod is the method table of every request method the server
// serves after the handshake (initialize and ping are served before it;
// see handleRequest): the built-in methods, then the server's custom ones
// (ServerOptions.Methods). It is a switch rather than a map literal: the
// handlers reach handleRequest again (a handler waiting for the client
// hands reading over), which a package-level map could not refer to
// without an initialization cycle.
func (s *Server) lookupMethod(name string) (method, bool) {
	switch name {
	case MethodToolsList:
		return method{eras: eraBoth, offered: hasTools, handle: handleToolsList, cacheable: true, inline: true}, true
	case MethodToolsCall:
		return method{eras: eraBoth, offered: hasTools, handle: handleToolsCall}, true
	case MethodResourcesList:
		return method{eras: eraBoth, offered: hasResources, handle: handleResourcesList, cacheable: true, inline: true}, true
	case MethodResourcesTemplatesList:
		return method{eras: eraBoth, offered: hasResources, handle: handleResourceTemplatesList, cacheable: true, inline: true}, true
	case MethodResourcesRead:
		return method{eras: eraBoth, offered: hasResources, handle: handleResourcesRead, cacheable: true}, true
	case MethodResourcesSubscribe:
		return method{eras: eraLegacy, offered: hasSubscriptions, handle: handleSubscribe, inline: true}, true
	case MethodResourcesUnsubscribe:
		return method{eras: eraLegacy, offered: hasSubscriptions, handle: handleUnsubscribe, inline: true}, true
	case MethodPromptsList:
		return method{eras: eraBoth, offered: hasPrompts, handle: handlePromptsList, cacheable: true, inline: true}, true
	case MethodPromptsGet:
		return method{eras: eraBoth, offered: hasPrompts, handle: handlePromptsGet}, true
	case MethodCompletionComplete:
		return method{eras: eraBoth, offered: hasCompletions, handle: handleComplete}, true
	case MethodLoggingSetLevel:
		return method{eras: eraLegacy, offered: hasLogging, handle: handleSetLevel, inline: true}, true
	case MethodTasksGet:
		return method{eras: eraBoth, offered: hasTasks, handle: byEra(handleTasksGet, handleModernTasksGet), inline: true}, true
	case MethodTasksResult:
		return method{eras: eraLegacy, offered: (*Session).tasksOn, handle: handleTasksResult}, true
	case MethodTasksCancel:
		return method{eras: eraBoth, offered: hasTasks, handle: byEra(handleTasksCancel, handleModernTasksCancel), inline: true}, true
	case MethodTasksUpdate:
		return method{eras: eraModern, offered: hasTasks, handle: handleModernTasksUpdate, inline: true}, true
	case MethodTasksList:
		return method{eras: eraLegacy, offered: (*Session).tasksOn, handle: handleTasksList, inline: true}, true
	case MethodServerDiscover:
		return method{eras: eraModern, handle: handleDiscover, cacheable: true, inline: true}, true
	case MethodSubscriptionsListen:
		return method{eras: eraModern, handle: handleListen, lasting: true}, true
	}
	if h, ok := s.opts.Methods[name]; ok {
		return method{eras: eraBoth, handle: h}, true
	}
	return method{}, false
}

// builtinMethod reports whether name is a request method or notification
// keel serves itself (custom handlers may not take these names).
func builtinMethod(name string) bool {
	switch name {
	case MethodInitialize, MethodPing, NotificationInitialized, NotificationCancelled, NotificationRootsListChanged:
		return true
	}
	var s Server
	_, ok := s.lookupMethod(name)
	return ok
}

// serveMethod registers request m as in flight and returns the job that
// runs its handler chain (middleware, then md.handle) and answers with its
// outcome; a lasting request is started on its own goroutine instead.
func (ss *Session) serveMethod(m *jsonrpc.Message, r responder, md *method) func() {
	req := &Request{ID: m.ID, Method: m.Method, Params: m.Params, Session: ss, r: r, handle: md.handle}
	if r.mod != nil {
		r.mod.cacheable = md.cacheable
	}
	if !ss.begin(req, ss.messageContext()) {
		return nil
	}
	req.f.keepAlive = md.lasting
	switch {
	case md.inline:
		req.run()
		return nil
	case md.lasting:
		ss.workers.run(req.run) // it lasts: never on the reading goroutine
		return nil
	}
	return req.run
}

// run runs the request's handler chain and answers with its outcome.
func (req *Request) run() { req.f.run(req.serve) }

func (req *Request) serve(ctx context.Context) (any, error) {
	return req.Session.server.handle(ctx, req)
}

// dispatch is the innermost handler of the chain: the method's own.
func dispatch(ctx context.Context, req *Request) (any, error) { return req.handle(ctx, req) }

// byEra serves a method both eras have under different rules: legacy
// requests (offered to sessions whose revision has tasks: tasksOn) with
// legacy, modern requests with modern.
func byEra(legacy, modern MethodHandler) MethodHandler {
	return func(ctx context.Context, req *Request) (any, error) {
		if req.r.mod != nil {
			return modern(ctx, req)
		}
		if !req.Session.tasksOn() {
			return nil, methodNotFound(req.Method)
		}
		return legacy(ctx, req)
	}
}

// hasTasks reports whether the server offers tasks at all (the legacy
// rows narrow it to sessions of 2025-11-25: tasksOn).
func hasTasks(ss *Session) bool { return ss.server.tasks != nil && ss.server.opts.Tools != nil }

func hasTools(ss *Session) bool       { return ss.server.opts.Tools != nil }
func hasResources(ss *Session) bool   { return ss.server.opts.Resources != nil }
func hasPrompts(ss *Session) bool     { return ss.server.opts.Prompts != nil }
func hasCompletions(ss *Session) bool { return ss.server.opts.Completions != nil }
func hasLogging(ss *Session) bool     { return ss.server.opts.Logging }
func hasSubscriptions(ss *Session) bool {
	return ss.server.opts.Resources != nil && ss.server.hub.updates
}

// methodNotFound is the -32601 answer to a method that does not exist in
// the request's era or that this server does not offer.
func methodNotFound(name string) *Error {
	return &Error{Code: CodeMethodNotFound, Message: "Method not found: " + quote(name)}
}
