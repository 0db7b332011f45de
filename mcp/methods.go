package mcp

import (
	"context"
	"encoding/json"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// method is one row of the method table: whether this server (or session)
// offers the method, and its handler in each protocol era (nil: the method
// does not exist in that era). Each engine takes its own column.
type method struct {
	// offered reports whether the server offers the method to this
	// session (nil: always); when not, the request gets -32601.
	offered func(ss *Session) bool
	// legacy and modern serve the request and return its outcome; the
	// request answers with it (request_table.go).
	legacy, modern MethodHandler
	// legacyInput and modernInput declare that the method takes input
	// rounds in that column (nil: it does not), and how that column reads
	// the request's input target (inputReader). The column's inputRule
	// then runs around the handler (withInputRounds): the handler reads
	// its Input from its context (InputFromContext), as any handler does,
	// and returns InputRequired to ask for more.
	legacyInput, modernInput inputReader
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

// both returns a row whose handler is the same in both eras.
func both(h MethodHandler) method { return method{legacy: h, modern: h} }

// takesInput returns md declaring input rounds read by read in both
// columns.
func (md method) takesInput(read inputReader) method {
	md.legacyInput, md.modernInput = read, read
	return md
}

// lookupMethod is the method table of every request method the server
// serves after the handshake (initialize and ping are the legacy engine's:
// rev2025_engine.go): the built-in methods, then the server's custom ones
// (ServerOptions.Methods), which exist in both eras. A row declares the
// input rounds of its method (legacyInput, modernInput): tools/call,
// prompts/get, resources/read, and the custom methods named in
// ServerOptions.InputMethods. The rounds run around the handler, each
// column with its revision's rule (inputRule: legacyRounds, modernRounds),
// so that the handler of every such method, built-in or custom, reads
// its Input the same way and never sees the rule. What else a revision
// changes in a built-in method is its column's too (how tools/call reads
// its _meta and applies the task rules, the context of
// completion/complete), so that no handler asks which revision it serves.
// It is a switch rather than a map literal: the handlers reach
// handleRequest again (a handler waiting for the client hands reading
// over), which a package-level map could not refer to without an
// initialization cycle.
func (s *Server) lookupMethod(name string) (md method, ok bool) {
	switch name {
	case methodToolsList:
		md = both(handleToolsList)
		md.offered, md.cacheable, md.inline = hasTools, true, true
	case methodToolsCall:
		md = method{offered: hasTools, legacy: legacyToolsCall, modern: modernToolsCall,
			legacyInput: legacyToolsCallInput, modernInput: modernToolsCallInput}
	case methodResourcesList:
		md = both(handleResourcesList)
		md.offered, md.cacheable, md.inline = hasResources, true, true
	case methodResourcesTemplatesList:
		md = both(handleResourceTemplatesList)
		md.offered, md.cacheable, md.inline = hasResources, true, true
	case methodResourcesRead:
		md = both(handleResourcesRead).takesInput(resourceInput)
		md.offered, md.cacheable = hasResources, true
	case methodResourcesSubscribe:
		md = method{offered: hasSubscriptions, legacy: handleSubscribe, inline: true}
	case methodResourcesUnsubscribe:
		md = method{offered: hasSubscriptions, legacy: handleUnsubscribe, inline: true}
	case methodPromptsList:
		md = both(handlePromptsList)
		md.offered, md.cacheable, md.inline = hasPrompts, true, true
	case methodPromptsGet:
		md = both(handlePromptsGet).takesInput(promptInput)
		md.offered = hasPrompts
	case methodCompletionComplete:
		md = method{offered: hasCompletions, legacy: legacyComplete, modern: modernComplete}
	case methodLoggingSetLevel:
		md = method{offered: hasLogging, legacy: handleSetLevel, inline: true}
	case methodTasksGet:
		md = method{offered: hasTasks, legacy: legacyTasks(handleTasksGet), modern: handleModernTasksGet, inline: true}
	case methodTasksResult:
		md = method{offered: hasTasks, legacy: legacyTasks(handleTasksResult)}
	case methodTasksCancel:
		md = method{offered: hasTasks, legacy: legacyTasks(handleTasksCancel), modern: handleModernTasksCancel, inline: true}
	case methodTasksUpdate:
		md = method{offered: hasTasks, modern: handleModernTasksUpdate, inline: true}
	case methodTasksList:
		md = method{offered: hasTasks, legacy: legacyTasks(handleTasksList), inline: true}
	case methodServerDiscover:
		md = method{modern: handleDiscover, cacheable: true, inline: true}
	case methodSubscriptionsListen:
		md = method{modern: handleListen, lasting: true}
	default:
		h, ok := s.opts.Methods[name]
		if !ok {
			return method{}, false
		}
		md = both(h)
		if s.inputMethods[name] { // ServerOptions.InputMethods
			md = md.takesInput(readInputParams)
		}
	}
	return md, true
}

// builtinMethod reports whether name is a request method or notification
// keel serves itself (custom handlers may not take these names).
func builtinMethod(name string) bool {
	switch name {
	case methodInitialize, methodPing, notificationInitialized, notificationCancelled, notificationRootsListChanged:
		return true
	}
	var s Server
	_, ok := s.lookupMethod(name)
	return ok
}

// serveMethod registers request m as in flight and returns the job that
// runs its handler chain (middleware, then h, the method's handler in the
// request's era, in the input rounds of that era when its row declares
// them: rounds) and answers with its outcome; a lasting request is
// started on its own goroutine instead.
func (ss *Session) serveMethod(m *jsonrpc.Message, r responder, md *method, h MethodHandler, rounds inputRounds) job {
	req := &Request{ID: json.RawMessage(m.ID), Method: m.Method, Params: json.RawMessage(m.Params), Session: ss, r: r, handle: h, rounds: rounds}
	if ok, refused := ss.begin(req, ss.rd.messageContext(), md.lasting); !ok {
		return refused
	}
	switch {
	case md.inline:
		req.run()
		return nil
	case md.lasting:
		ss.runWorker(req) // it lasts: never on the reading goroutine
		return nil
	}
	return req
}

// run runs the request's handler chain and answers with its outcome.
func (req *Request) run() { req.f.run(req.serve) }

func (req *Request) serve(ctx context.Context) (any, error) {
	return req.Session.server.handle(ctx, req)
}

// dispatch is the innermost handler of the chain: the method's own, in
// its input rounds when its row declares them.
func dispatch(ctx context.Context, req *Request) (any, error) {
	if req.rounds.read != nil {
		return withInputRounds(ctx, req)
	}
	return req.handle(ctx, req)
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
