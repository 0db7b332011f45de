//go:build !keel_omit2025

package streamhttp_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/handoff"
	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/transport"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// A legacy session and modern requests share one stateful endpoint.
func TestHTTPModernBesideLegacySession(t *testing.T) {
	srv, h, _ := startHTTP(t, &streamhttp.Options{SupportedVersions: modernVersions})
	sid := initialize(t, srv, "2025-11-25")
	resp := do(t, srv, request{body: modernRequest(`2`, "stateless", "", ""), version: modern, header: modernHeaders("stateless", "", nil)})
	assert.JSONEq(t, `{"stateless":true,"version":"2026-07-28"}`, string(decodeAnswer(t, readBody(t, resp)).Result))
	resp = do(t, srv, request{body: `{"jsonrpc":"2.0","id":3,"method":"stateless"}`, session: sid, version: "2025-11-25"})
	body := readBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.JSONEq(t, `{"stateless":false,"version":""}`, string(decodeAnswer(t, body).Result))
	assert.Equal(t, 1, h.SessionCount())
}

// GET and DELETE of a modern revision get 405; DNS rebinding checks come
// first; legacy GET and DELETE are unchanged.
func TestHTTPModernMethodsAndOrigin(t *testing.T) {
	cases := []struct {
		name      string
		stateless bool
		r         request
		status    int
	}{
		{name: "GET", r: request{method: http.MethodGet, version: modern}, status: http.StatusMethodNotAllowed},
		{name: "GET with a session", r: request{method: http.MethodGet, version: modern, session: "x"}, status: http.StatusMethodNotAllowed},
		{name: "DELETE", r: request{method: http.MethodDelete, version: modern, session: "x"}, status: http.StatusMethodNotAllowed},
		{name: "stateless GET", stateless: true, r: request{method: http.MethodGet, version: modern}, status: http.StatusMethodNotAllowed},
		{name: "legacy GET without session", r: request{method: http.MethodGet, version: "2025-11-25"}, status: http.StatusBadRequest},
		{name: "legacy DELETE of an unknown session", r: request{method: http.MethodDelete, version: "2025-11-25", session: "x"}, status: http.StatusNotFound},
		{name: "Origin first", r: request{body: modernRequest(`1`, "echo", "", ""), version: modern,
			header: modernHeaders("echo", "", map[string]string{"Origin": "http://evil.example.com"})}, status: http.StatusForbidden},
		{name: "Host first", r: request{body: modernRequest(`1`, "echo", "", ""), version: modern,
			header: modernHeaders("echo", "", map[string]string{"Host": "evil.example.com"})}, status: http.StatusForbidden},
		{name: "Host first on GET", r: request{method: http.MethodGet, version: modern,
			header: map[string]string{"Host": "evil.example.com"}}, status: http.StatusForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, _, _ := startHTTP(t, &streamhttp.Options{Stateless: tc.stateless, SupportedVersions: modernVersions})
			resp := do(t, srv, tc.r)
			body := readBody(t, resp)
			assert.Equal(t, tc.status, resp.StatusCode, body)
			if tc.status == http.StatusMethodNotAllowed {
				assert.Equal(t, "POST", resp.Header.Get("Allow"))
			}
		})
	}
}

// A handler whose SupportedVersions lack 2026-07-28 refuses modern
// requests with -32022.
func TestHTTPModernNotSupportedByDefault(t *testing.T) {
	srv, _, f := startHTTP(t, nil)
	resp := do(t, srv, request{body: modernRequest(`1`, "echo", "", ""), version: modern, header: modernHeaders("echo", "", nil)})
	body := readBody(t, resp)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	a := decodeAnswer(t, body)
	require.NotNil(t, a.Error)
	assert.Equal(t, int64(-32022), a.Error.Code)
	sessions, _ := f.counts()
	assert.Zero(t, sessions)
}

// A session reading a POSTed message gets the transport's reading of it
// too (its Handoff after Read), for a 2025 message as for a modern one;
// a batch has none.
func TestHTTPSessionHandsItsReadingAfterRead(t *testing.T) {
	type reading struct {
		id string
		ok bool
	}
	got := make(chan reading, 1)
	h := streamhttp.NewHandler(&streamhttp.Options{
		Stateless:         true,
		SupportedVersions: modernVersions,
		Serve: func(ctx context.Context, t transport.Transport) error {
			msg, err := t.Read(ctx)
			if err != nil {
				return err
			}
			var r reading
			x := t.(handoff.Carrier).Handoff()
			if r.ok = x != nil; r.ok {
				r.id = string(x.Msg.ID)
			}
			got <- r
			if jsonrpc.IsBatch(msg) {
				return t.Write(ctx, []byte(`[{"jsonrpc":"2.0","id":4,"result":{}}]`))
			}
			return t.Write(ctx, []byte(`{"jsonrpc":"2.0","id":3,"result":{}}`))
		},
	})
	srv := newServer(t, h)
	resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, version: "2025-06-18"})
	assert.Equal(t, http.StatusOK, resp.StatusCode, readBody(t, resp))
	assert.Equal(t, reading{id: "3", ok: true}, <-got)
	resp = do(t, srv, request{body: `[{"jsonrpc":"2.0","id":4,"method":"tools/list"}]`, version: "2025-03-26"})
	assert.Equal(t, http.StatusOK, resp.StatusCode, readBody(t, resp))
	assert.Equal(t, reading{}, <-got)
}
