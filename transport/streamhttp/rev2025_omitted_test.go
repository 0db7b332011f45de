//go:build keel_omit2025

package streamhttp_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// TestOmit2025OverHTTP runs with the build tag keel_omit2025: a
// 2026-07-28 request is served without a session, initialize is refused
// with -32022 (in an HTTP 200, as a 2025 client reads it) naming 2026-07-28 as the one revision served, a
// request without _meta gets the 2026-07-28 rules, and there are no
// sessions to GET or DELETE.
func TestOmit2025OverHTTP(t *testing.T) {
	reg := registry.New(nil)
	registry.MustRegister(reg, "echo", "Echoes", func(_ context.Context, in struct {
		Message string `json:"message"`
	}) (string, error) {
		return in.Message, nil
	}, nil)
	srv := mcp.NewServer(&mcp.ServerOptions{Tools: reg, Logger: slog.New(slog.DiscardHandler)})
	for _, stateless := range []bool{false, true} {
		h := streamhttp.NewServerHandler(srv, &streamhttp.Options{Stateless: stateless, Logger: quiet})
		ts := httptest.NewServer(h)
		t.Cleanup(ts.Close)
		tests := []struct {
			name   string
			r      request
			status int
			code   int64 // 0: a result
		}{
			{"2026-07-28 tools/call", request{body: modernRequest(`1`, "tools/call", `"name":"echo","arguments":{"message":"hi"}`, ""), version: modern,
				header: modernHeaders("tools/call", "echo", nil)}, http.StatusOK, 0},
			{"2025 initialize", request{body: initBody}, http.StatusOK, mcp.CodeUnsupportedProtocolVersion},
			{"a request without _meta", request{body: `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, version: "2025-11-25"}, http.StatusBadRequest, mcp.CodeInvalidParams},
			{"a notification without _meta", request{body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`}, http.StatusAccepted, 0},
			{"GET", request{method: http.MethodGet, version: "2025-11-25"}, http.StatusMethodNotAllowed, 0},
			{"DELETE", request{method: http.MethodDelete, version: "2025-11-25", session: "x"}, http.StatusMethodNotAllowed, 0},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				resp := do(t, ts, tt.r)
				body := readBody(t, resp)
				require.Equal(t, tt.status, resp.StatusCode, body)
				assert.Empty(t, resp.Header.Get("Mcp-Session-Id"), "no sessions")
				switch {
				case tt.status == http.StatusMethodNotAllowed:
					assert.Equal(t, "POST", resp.Header.Get("Allow"))
					assert.Contains(t, body, "Method Not Allowed")
				case tt.status == http.StatusAccepted:
				case tt.code == 0:
					a := decodeAnswer(t, body)
					require.Nil(t, a.Error, body)
					assert.Contains(t, string(a.Result), `"text":"hi"`)
				default:
					a := decodeAnswer(t, body)
					require.NotNil(t, a.Error, body)
					assert.Equal(t, tt.code, a.Error.Code, body)
				}
				if tt.code == mcp.CodeUnsupportedProtocolVersion {
					assert.Contains(t, body, `"supported":["2026-07-28"]`)
					assert.Contains(t, body, `"requested":"2025-11-25"`)
				}
			})
		}
		assert.Zero(t, h.SessionCount())
	}
}

// buildErrorPaths are the error paths only this build has: GET and DELETE
// (no sessions), and a request naming no revision, which gets the
// 2026-07-28 rules.
func buildErrorPaths(t *testing.T) []errorPath {
	srv, _, _ := startHTTP(t, nil)
	return []errorPath{
		{name: "GET (no sessions)", status: http.StatusMethodNotAllowed, code: -32000, send: plainSend(srv, request{method: http.MethodGet}, nil)},
		{name: "DELETE (no sessions)", status: http.StatusMethodNotAllowed, code: -32000, send: plainSend(srv, request{method: http.MethodDelete, session: "x"}, nil)},
		{name: "request naming no revision", status: http.StatusBadRequest, code: -32602, parsed: true, modern: true, send: plainSend(srv, request{}, func(cid string) string {
			return `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"correlationId":"` + cid + `"}}}`
		})},
	}
}
