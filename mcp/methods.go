package mcp

import (
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
// whether this server (or session) offers it, and how it is served.
type method struct {
	eras era
	// offered reports whether the server offers the method to this
	// session (nil: always); when not, the request gets -32601.
	offered func(ss *Session) bool
	// serve returns the job that will answer through r (a request that
	// runs user code: see request.go and runInline), or answers itself
	// and returns nil; answer is set instead for a method that always
	// answers at once.
	serve  func(ss *Session, m *jsonrpc.Message, r responder) (job func())
	answer func(ss *Session, m *jsonrpc.Message, r responder)
	// cacheable: modern results carry ttlMs and cacheScope.
	cacheable bool
}

// lookupMethod is the static method table of every request method the
// server serves after the handshake (initialize and ping are served before
// it; see handleRequest). There are no other registrations. It is a switch
// rather than a map literal: the handlers reach handleRequest again (a
// handler waiting for the client hands reading over), which a package-level
// map could not refer to without an initialization cycle.
func lookupMethod(name string) (method, bool) {
	switch name {
	case MethodToolsList:
		return method{eras: eraBoth, offered: hasTools, answer: (*Session).handleToolsList, cacheable: true}, true
	case MethodToolsCall:
		return method{eras: eraBoth, offered: hasTools, serve: (*Session).handleToolsCall}, true
	case MethodResourcesList:
		return method{eras: eraBoth, offered: hasResources, answer: (*Session).handleResourcesList, cacheable: true}, true
	case MethodResourcesTemplatesList:
		return method{eras: eraBoth, offered: hasResources, answer: (*Session).handleResourceTemplatesList, cacheable: true}, true
	case MethodResourcesRead:
		return method{eras: eraBoth, offered: hasResources, serve: (*Session).handleResourcesRead, cacheable: true}, true
	case MethodResourcesSubscribe:
		return method{eras: eraLegacy, offered: hasSubscriptions, answer: (*Session).handleSubscribeOn}, true
	case MethodResourcesUnsubscribe:
		return method{eras: eraLegacy, offered: hasSubscriptions, answer: (*Session).handleSubscribeOff}, true
	case MethodPromptsList:
		return method{eras: eraBoth, offered: hasPrompts, answer: (*Session).handlePromptsList, cacheable: true}, true
	case MethodPromptsGet:
		return method{eras: eraBoth, offered: hasPrompts, serve: (*Session).handlePromptsGet}, true
	case MethodCompletionComplete:
		return method{eras: eraBoth, offered: hasCompletions, serve: (*Session).handleComplete}, true
	case MethodLoggingSetLevel:
		return method{eras: eraLegacy, offered: hasLogging, answer: (*Session).handleSetLevel}, true
	case MethodTasksGet:
		return method{eras: eraBoth, offered: hasTasks, serve: byEra((*Session).handleTasksGet, (*Session).handleModernTasksGet)}, true
	case MethodTasksResult:
		return method{eras: eraLegacy, offered: (*Session).tasksOn, serve: (*Session).handleTasksResult}, true
	case MethodTasksCancel:
		return method{eras: eraBoth, offered: hasTasks, serve: byEra((*Session).handleTasksCancel, (*Session).handleModernTasksCancel)}, true
	case MethodTasksUpdate:
		return method{eras: eraModern, offered: hasTasks, serve: (*Session).handleModernTasksUpdate}, true
	case MethodTasksList:
		return method{eras: eraLegacy, offered: (*Session).tasksOn, serve: (*Session).handleTasksList}, true
	case MethodServerDiscover:
		return method{eras: eraModern, answer: (*Session).handleDiscover, cacheable: true}, true
	case MethodSubscriptionsListen:
		return method{eras: eraModern, serve: (*Session).handleListen}, true
	}
	return method{}, false
}

// lookupNotification is the static table of the notifications the server acts
// on (besides initialized and cancelled, which handleNotification serves).
func lookupNotification(name string) func(ss *Session, m *jsonrpc.Message) {
	if name == NotificationRootsListChanged {
		return (*Session).handleRootsListChanged
	}
	return nil
}

// dispatch serves m through r: it answers at once, or returns the job
// that will.
func (md *method) dispatch(ss *Session, m *jsonrpc.Message, r responder) func() {
	if md.answer != nil {
		md.answer(ss, m, r)
		return nil
	}
	return md.serve(ss, m, r)
}

// byEra serves a method both eras have under different rules: legacy
// requests (offered to sessions whose revision has tasks: tasksOn) with
// legacy, modern requests with modern.
func byEra(legacy, modern func(*Session, *jsonrpc.Message, responder) func()) func(*Session, *jsonrpc.Message, responder) func() {
	return func(ss *Session, m *jsonrpc.Message, r responder) func() {
		if r.mod != nil {
			return modern(ss, m, r)
		}
		if !ss.tasksOn() {
			r.error(methodNotFound(m.Method))
			return nil
		}
		return legacy(ss, m, r)
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

func (ss *Session) handleSubscribeOn(m *jsonrpc.Message, r responder) { ss.handleSubscribe(m, r, true) }
func (ss *Session) handleSubscribeOff(m *jsonrpc.Message, r responder) {
	ss.handleSubscribe(m, r, false)
}

// methodNotFound is the -32601 answer to a method that does not exist in
// the request's era or that this server does not offer.
func methodNotFound(name string) *Error {
	return &Error{Code: CodeMethodNotFound, Message: "Method not found: " + quote(name)}
}
