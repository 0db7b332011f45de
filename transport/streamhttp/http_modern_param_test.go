package streamhttp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// deployHeaders are the x-mcp-header annotations of the tool "deploy" in
// the Mcp-Param tests.
func deployHeaders(_ context.Context, tool string) []streamhttp.ParamHeader {
	if tool != "deploy" {
		return nil
	}
	return []streamhttp.ParamHeader{
		{Name: "Region", Path: []string{"region"}},
		{Name: "Count", Path: []string{"count"}},
		{Name: "Dry", Path: []string{"dry"}},
		{Name: "Zone", Path: []string{"target", "zone"}},
	}
}

// The Mcp-Param-* headers of a modern tools/call are checked against the
// annotated arguments (SEP-2243, as the conformance suite probes them).
func TestHTTPModernParamHeaders(t *testing.T) {
	call := func(args string) string {
		return modernRequest(`9`, "tools/call", `"name":"deploy","arguments":`+args, "")
	}
	hdr := func(extra map[string]string) map[string]string { return modernHeaders("tools/call", "deploy", extra) }
	cases := []struct {
		name   string
		body   string
		header map[string]string
		reject bool
	}{
		{name: "no annotated argument, no header", body: call(`{"other":1}`), header: hdr(nil)},
		{name: "literal match", body: call(`{"region":"eu-west"}`), header: hdr(map[string]string{"Mcp-Param-Region": "eu-west"})},
		{name: "header name case-insensitive", body: call(`{"region":"eu-west"}`), header: hdr(map[string]string{"mcp-param-region": " eu-west "})},
		{name: "valid base64", body: call(`{"region":"Hello"}`), header: hdr(map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8=?="})},
		{name: "base64 padding missing", body: call(`{"region":"Hello"}`), header: hdr(map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8?="}), reject: true},
		{name: "base64 bad characters", body: call(`{"region":"Hello"}`), header: hdr(map[string]string{"Mcp-Param-Region": "=?base64?SGVs!!!bG8=?="}), reject: true},
		{name: "no prefix is literal", body: call(`{"region":"SGVsbG8="}`), header: hdr(map[string]string{"Mcp-Param-Region": "SGVsbG8="})},
		{name: "no suffix is literal", body: call(`{"region":"=?base64?SGVsbG8="}`), header: hdr(map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8="})},
		{name: "header missing", body: call(`{"region":"test-value"}`), header: hdr(nil), reject: true},
		{name: "header differs", body: call(`{"region":"eu-west"}`), header: hdr(map[string]string{"Mcp-Param-Region": "us-east"}), reject: true},
		{name: "header without argument", body: call(`{}`), header: hdr(map[string]string{"Mcp-Param-Region": "eu-west"}), reject: true},
		{name: "null argument counts as absent", body: call(`{"region":null}`), header: hdr(nil)},
		{name: "integer compares numerically", body: call(`{"count":10}`), header: hdr(map[string]string{"Mcp-Param-Count": "010"})},
		{name: "integer differs", body: call(`{"count":10}`), header: hdr(map[string]string{"Mcp-Param-Count": "11"}), reject: true},
		{name: "boolean", body: call(`{"dry":true}`), header: hdr(map[string]string{"Mcp-Param-Dry": "true"})},
		{name: "boolean differs", body: call(`{"dry":false}`), header: hdr(map[string]string{"Mcp-Param-Dry": "true"}), reject: true},
		{name: "nested property", body: call(`{"target":{"zone":"b"}}`), header: hdr(map[string]string{"Mcp-Param-Zone": "b"})},
		{name: "nested property missing header", body: call(`{"target":{"zone":"b"}}`), header: hdr(nil), reject: true},
		{name: "another tool is not checked", body: modernRequest(`9`, "tools/call", `"name":"other","arguments":{"region":"x"}`, ""),
			header: modernHeaders("tools/call", "other", nil)},
	}
	srv, _, _ := startHTTP(t, &streamhttp.Options{SupportedVersions: modernVersions, ToolParamHeaders: deployHeaders})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := do(t, srv, request{body: tc.body, version: modern, header: tc.header})
			body := readBody(t, resp)
			a := decodeAnswer(t, body)
			assert.Equal(t, "9", string(a.ID))
			if !tc.reject {
				assert.Equal(t, http.StatusOK, resp.StatusCode, body)
				assert.Nil(t, a.Error, body)
				return
			}
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
			require.NotNil(t, a.Error, body)
			assert.Equal(t, int64(-32020), a.Error.Code, body)
		})
	}
}

// toolList is a ToolSource with fixed tools that answers every call with
// an empty result.
type toolList []*mcp.Tool

func (l toolList) ListTools(context.Context) ([]*mcp.Tool, error) { return l, nil }

func (l toolList) CallTool(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{}}, nil
}

// NewServerHandler reads the annotations from the tools' input schemas
// and supports every revision of package mcp.
func TestNewServerHandlerModern(t *testing.T) {
	tools := toolList{{Name: "deploy", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"target":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}}}}`)}}
	srv := newServer(t, streamhttp.NewServerHandler(mcp.NewServer(&mcp.ServerOptions{Name: "t", Version: "1", Tools: tools, Logger: quiet}), nil))
	cases := []struct {
		name   string
		args   string
		header map[string]string
		code   int64
	}{
		{name: "missing header", args: `{"region":"eu"}`, code: -32020},
		{name: "nested header differs", args: `{"target":{"zone":"a"}}`, header: map[string]string{"Mcp-Param-Zone": "b"}, code: -32020},
		{name: "unsupported version lists mcp.AllVersions"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.code == 0 {
				body := modernRequest(`3`, "tools/call", `"name":"deploy"`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"v9","io.modelcontextprotocol/clientCapabilities":{}}`)
				resp := do(t, srv, request{body: body, version: "v9", header: modernHeaders("tools/call", "deploy", nil)})
				a := decodeAnswer(t, readBody(t, resp))
				require.NotNil(t, a.Error)
				assert.Equal(t, int64(mcp.CodeUnsupportedProtocolVersion), a.Error.Code)
				for _, v := range mcp.AllVersions() {
					assert.Contains(t, string(a.Error.Data), `"`+v+`"`)
				}
				return
			}
			resp := do(t, srv, request{body: modernRequest(`3`, "tools/call", `"name":"deploy","arguments":`+tc.args, ""), version: modern,
				header: modernHeaders("tools/call", "deploy", tc.header)})
			body := readBody(t, resp)
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
			a := decodeAnswer(t, body)
			require.NotNil(t, a.Error, body)
			assert.Equal(t, tc.code, a.Error.Code, body)
			assert.Equal(t, "3", string(a.ID))
		})
	}
	assert.True(t, slices.Contains(mcp.AllVersions(), modern))
}
