package registry

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

func TestParamHeaderAnnotations(t *testing.T) {
	tests := []struct {
		name, schema, err string
	}{
		{"none", `{"type":"object","properties":{"a":{"type":"string"}}}`, ""},
		{"string, integer, boolean", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"integer","x-mcp-header":"Priority"},"c":{"type":"boolean","x-mcp-header":"Verbose"}}}`, ""},
		{"nested through properties", `{"type":"object","properties":{"o":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Deep"}}}}}`, ""},
		{"empty", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}`, "non-empty string"},
		{"not a string", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":7}}}`, "non-empty string"},
		{"not a token", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"a b"}}}`, "not an HTTP header token"},
		{"duplicate, other case", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"region"}}}`, "already used"},
		{"array property", `{"type":"object","properties":{"a":{"type":"array","x-mcp-header":"List"}}}`, "string, integer or boolean"},
		{"no type", `{"type":"object","properties":{"a":{"x-mcp-header":"Any"}}}`, "string, integer or boolean"},
		{"under items", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"Item"}}}}`, "only a property reached through"},
		{"under anyOf", `{"type":"object","anyOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}`, "only a property reached through"},
		{"at the root", `{"type":"object","x-mcp-header":"Root"}`, "only a property reached through"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := New(nil).AddTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(tt.schema)},
				func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) { return nil, nil }, nil)
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			var re *RegistrationError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, "t", re.Tool)
			assert.ErrorContains(t, err, tt.err)
		})
	}
}
