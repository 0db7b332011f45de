//go:build keel_omit2025

package streamhttp

import (
	"net/http"

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

// sessionCorrelationID returns "": there are no sessions.
func (h *Handler) sessionCorrelationID(exchange) string { return "" }
