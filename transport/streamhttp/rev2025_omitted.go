//go:build keel_omit2025

package streamhttp

import (
	"net/http"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/revision"
)

// Built with the tag keel_omit2025, the Handler has no 2025 rules (the
// rev2025_* files and rev2025_http_get.go are left out): it serves revision
// 2026-07-28 only, and this file holds what the shared code needs in
// their place. There are no sessions: no Mcp-Session-Id, no GET stream,
// no DELETE (405, Allow: POST), no resumable streams (Options.EventStore
// is not used). A POST whose messages name no revision gets the
// 2026-07-28 rules (-32602 for a request without _meta, 202 for
// notifications), except initialize, which Serve answers (an mcp.Server
// built with the tag answers -32022, naming the revisions it serves, with
// HTTP status 200).
// SupportedVersions defaults to 2026-07-28.

// defaultVersions are the revisions a Handler accepts by default.
var defaultVersions = append([]string(nil), revision.PerRequestVersions...)

// serveUnmarked serves a POST that names no per-request revision by the
// 2026-07-28 rules; initialize goes to Serve, in a session of its own
// that ends with the POST, and its answer is sent as a 2025 client
// expects it (HTTP 200).
func (h *Handler) serveUnmarked(w http.ResponseWriter, r *http.Request, body []byte, env *envelope) {
	if env.initialize {
		h.serveEphemeral(w, r, body, env, "", false)
		return
	}
	h.serveModern(w, r, body, env)
}

func (h *Handler) serveGET(w http.ResponseWriter, r *http.Request)    { h.noSessions(w, r) }
func (h *Handler) serveDELETE(w http.ResponseWriter, r *http.Request) { h.noSessions(w, r) }

// noSessions answers GET and DELETE: 405, Allow: POST.
func (h *Handler) noSessions(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", "POST")
	writeHTTPError(w, h.exchangeOf(r), http.StatusMethodNotAllowed, codeServerError,
		"Method Not Allowed: this server serves protocol revision "+revision.V20260728+" only, which has no GET stream and no sessions")
}

// The stand-ins below are what the shared code calls where a build with
// the 2025 rules has sessions, resumable streams and a GET stream: there
// are none, so each does nothing, or answers as for a session that serves
// one POST.

// handlerRev2025 holds nothing: there are no stateful sessions and no
// event store.
type handlerRev2025 struct{}

func (*handlerRev2025) init(*Options) {}

// SessionCount returns the number of live sessions: always 0, since a
// Handler built with the tag keel_omit2025 has no sessions.
func (h *Handler) SessionCount() int { return 0 }

func (h *Handler) appendSessionsLocked(all []*httpSession) []*httpSession { return all }
func (h *Handler) forgetSessionLocked(*httpSession)                       {}
func (h *Handler) sessionCorrelationID(exchange) string                   { return "" }

// sessionRev2025 holds nothing: every session serves one POST.
type sessionRev2025 struct{}

func (*sessionRev2025) answeredLocked(string, []byte)                   {}
func (*sessionRev2025) endLocked()                                      {}
func (s *httpSession) sessionID() string                                { return "" }
func (s *httpSession) releaseEvents()                                   {}
func (s *httpSession) addStreamLocked(*stream)                          {}
func (s *httpSession) forgetStream(*stream)                             {}
func (s *httpSession) setInitHeaderLocked(*stream, http.Header, []byte) {}

// sendStandalone: there is no GET stream to carry msg.
func (s *httpSession) sendStandalone(_ []byte, request bool) error {
	return s.noStandaloneStream(request)
}

// exchangeRev2025 holds nothing: no request names a session.
type exchangeRev2025 struct{}

func exchangeOfRequest(*http.Request) exchangeRev2025 { return exchangeRev2025{} }

// envelopeRev2025 holds nothing: no request is cancelled by notification
// (a 2026-07-28 client closes the connection instead).
type envelopeRev2025 struct{}

func (*envelopeRev2025) noteNotification(*jsonrpc.Message) {}

// streamRev2025 holds nothing: streams have no ids and are not resumable.
type streamRev2025 struct{}

func (*streamRev2025) finishLocked()                   {}
func (st *stream) standalone() bool                    { return false }
func (st *stream) writePrimingLocked(*attachment) bool { return true }
func (st *stream) nextEventLocked([]byte) string       { return "" }
func (st *stream) closeForPolling() error              { return ErrNotResumable }
