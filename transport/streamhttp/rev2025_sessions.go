//go:build !keel_omit2025

package streamhttp

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/revision"
	"github.com/keelmcp/keel/transport"
)

// serveUnmarked serves a POST that names no per-request revision: by the
// 2025 rules, in the session its Mcp-Session-Id names (a new one for
// initialize), or in a fresh session per POST in Stateless mode.
func (h *Handler) serveUnmarked(w http.ResponseWriter, r *http.Request, body []byte, env *envelope) {
	if h.opts.Stateless {
		h.serveStateless(w, r, body, env)
		return
	}
	ex := h.exchangeOf(r).with(env)
	var s *httpSession
	created := env.initialize && r.Header.Get(headerSessionID) == ""
	if created {
		if s = h.createSession(w, r, ex, env.x.Msg.ID); s == nil {
			return
		}
	} else {
		if !env.initialize {
			if _, ok := h.checkVersion(w, ex); !ok {
				return
			}
		}
		if s = h.lookup(w, ex); s == nil {
			return
		}
		s.used()
	}
	defer s.end()
	ex = ex.in(s)
	if env.batch {
		s.mu.Lock()
		v := s.rev2025.version
		s.mu.Unlock()
		if !revision.BatchAllowed(v) {
			writeHTTPError(w, ex, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, revision.BatchRefused)
			return
		}
	}
	h.dispatch(w, r, s, body, env, created)
}

// checkVersion validates MCP-Protocol-Version; absent means 2025-03-26.
func (h *Handler) checkVersion(w http.ResponseWriter, ex exchange) (string, bool) {
	v := ex.rev2025.header.Get(headerProtocolVersion)
	if v == "" {
		return revision.DefaultHeaderVersion, true
	}
	if !h.versions[v] {
		writeHTTPError(w, ex, http.StatusBadRequest, jsonrpc.CodeInvalidRequest,
			"Bad Request: unsupported MCP-Protocol-Version "+quoteHeader(v)+" (supported: "+strings.Join(h.opts.SupportedVersions, ", ")+")")
		return "", false
	}
	return v, true
}

// lookup finds the session a request names: 400 when the header is
// missing, 404 when the session is unknown, ended, or bound to another
// user. On success the session counts the request as active (call end).
func (h *Handler) lookup(w http.ResponseWriter, ex exchange) *httpSession {
	id := ex.rev2025.header.Get(headerSessionID)
	if id == "" {
		writeHTTPError(w, ex, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "Bad Request: Mcp-Session-Id header is required")
		return nil
	}
	h.mu.Lock()
	s := h.rev2025.sessions[id]
	h.mu.Unlock()
	otherUser := s != nil && s.rev2025.subject != subjectOfContext(ex.rev2025.ctx)
	if otherUser || s == nil || !s.begin() {
		cid := writeHTTPError(w, ex, http.StatusNotFound, codeSessionNotFound, "Session not found")
		if otherUser {
			h.refusals.print("transport: session used by another user refused", clipped("session", id), correlationAttr(cid))
		}
		return nil
	}
	return s
}

// createSession starts a stateful session for the initialize request id.
func (h *Handler) createSession(w http.ResponseWriter, r *http.Request, ex exchange, reqID []byte) *httpSession {
	h.mu.Lock()
	if max := h.opts.MaxSessions; max > 0 && len(h.rev2025.sessions) >= max {
		h.mu.Unlock()
		h.refuseAtLimit(w, ex, http.StatusServiceUnavailable, reqID, "MaxSessions", int64(max), "too many sessions")
		return nil
	}
	peer := peerKey(r)
	if !h.rev2025.peerSessions.acquire(peer, h.opts.MaxSessionsPerPeer) {
		h.mu.Unlock()
		h.refuseAtLimit(w, ex, http.StatusTooManyRequests, reqID, "MaxSessionsPerPeer", int64(h.opts.MaxSessionsPerPeer), "too many sessions for this peer")
		return nil
	}
	id := h.opts.NewSessionID()
	for h.rev2025.sessions[id] != nil {
		id = h.opts.NewSessionID()
	}
	p, _ := transport.PeerFromContext(r.Context())
	s := h.newHTTPSession(transport.WithPeer(context.Background(), p), nil, 16)
	s.makeStateful(id, subjectOf(r))
	h.rev2025.sessions[id] = s
	h.mu.Unlock()
	s.begin()
	var ended func(error)
	if h.opts.OnSession != nil {
		ended = h.opts.OnSession(s.ctx, id)
	}
	h.startSession(s, s.ctx, ended)
	h.log.Debug("transport: session created", "session", id)
	return s
}

// dispatch hands a POSTed message to session s and answers the POST: 202
// when it carries no request, else the stream of its responses.
// created marks the POST of the initialize request that created s.
func (h *Handler) dispatch(w http.ResponseWriter, r *http.Request, s *httpSession, body []byte, env *envelope, created bool) {
	ex := h.exchangeOf(r).with(env).in(s)
	if !env.hasRequests() {
		if !s.deliver(r, env, body, nil) {
			writeHTTPError(w, ex, http.StatusNotFound, codeSessionNotFound, "Session not found")
			return
		}
		if c := env.rev2025.cancelled; len(c) > 0 {
			s.release(c)
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	st, dup := s.newStream(env.requests, nil)
	if st == nil {
		writeHTTPErrorID(w, ex, http.StatusBadRequest, jsonrpc.CodeInvalidRequest,
			"Invalid Request: id is already in use by an unanswered request", []byte(dup), nil)
		return
	}
	if created {
		st.rev2025.initPOST = true
		s.mu.Lock()
		s.rev2025.initID = env.requests[0]
		s.mu.Unlock()
	}
	st.mu.Lock()
	a := st.attachLocked(w, nil)
	if h.opts.ResponseMode == ResponseSSE && !st.rev2025.initPOST {
		st.mode = modeSSE
		st.writeHeaderLocked(a, true)
	} else if h.opts.ResponseMode == ResponseAuto && h.opts.SSEAfter > 0 && st.rev2025.useIDs && s.canPrime() {
		st.rev2025.sseTimer = time.AfterFunc(h.opts.SSEAfter, st.switchToSSE)
	}
	st.mu.Unlock()
	if !s.deliver(r, env, body, st) {
		st.detach(a)
		s.release(env.requests)
		st.mu.Lock()
		sent := a.headerSent
		st.mu.Unlock()
		if !sent && r.Context().Err() == nil {
			writeHTTPError(w, ex, http.StatusNotFound, codeSessionNotFound, "Session not found")
		}
		return
	}
	if c := env.rev2025.cancelled; len(c) > 0 {
		s.release(c)
	}
	finished := st.wait(r, a)
	st.mu.Lock()
	sent := a.headerSent
	resumable := st.mode == modeSSE && s.resumable()
	st.mu.Unlock()
	if !finished && r.Context().Err() != nil && !resumable {
		s.cancelAbandoned(env.requests)
	}
	if !sent && r.Context().Err() == nil {
		writeHTTPError(w, ex, http.StatusNotFound, codeSessionNotFound, "Session not found (it ended before the response)")
	}
}

// serveStateless serves one POST with a fresh session (Stateless mode).
func (h *Handler) serveStateless(w http.ResponseWriter, r *http.Request, body []byte, env *envelope) {
	ex := h.exchangeOf(r).with(env)
	v := revision.DefaultHeaderVersion
	if !env.initialize {
		var ok bool
		if v, ok = h.checkVersion(w, ex); !ok {
			return
		}
	}
	if env.batch && !revision.BatchAllowed(v) {
		writeHTTPError(w, ex, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, revision.BatchRefused)
		return
	}
	if !env.hasRequests() {
		// No session outlives a POST: notifications and responses have
		// nothing to act on.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	h.serveEphemeral(w, r, body, env, v, false)
}

var defaultVersions = append([]string(nil), revision.NegotiatedVersions...)
