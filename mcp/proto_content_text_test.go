package mcp

import (
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// A text block with neither annotations nor _meta is written token by
// token (writeTextBlock): the bytes textWire's arshaler writes, whatever
// the text holds. Invalid UTF-8, annotations or _meta take the arshaler.
func TestTextBlockWrittenAsTheArshalerWritesIt(t *testing.T) {
	texts := []string{"", "hi", `quote " backslash \ slash /`, "<tag> & 'amp'", "line\nbreak\ttab\x00\x1f",
		"é ü 中文 🙂", "\u2028\u2029", "\x7f"}
	for _, text := range texts {
		got, err := jsonrpc.Marshal(Content{Type: ContentText, Text: text})
		require.NoError(t, err)
		want, err := json.Marshal(&textWire{Type: ContentText, Text: text}, jsonrpc.Options())
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "%q", text)
	}
	for name, c := range map[string]Content{
		"invalid UTF-8": {Type: ContentText, Text: "a\xffb"},
		"annotations":   {Type: ContentText, Text: "a", Annotations: &Annotations{Audience: []string{"user"}}},
		"_meta":         {Type: ContentText, Text: "a", Meta: Meta{"k": "v"}},
		"empty _meta":   {Type: ContentText, Text: "a", Meta: Meta{}},
	} {
		got, gerr := jsonrpc.Marshal(c)
		want, werr := json.Marshal(&textWire{c.Type, c.Text, c.Annotations, c.Meta}, jsonrpc.Options())
		assert.Equal(t, werr == nil, gerr == nil, name)
		assert.Equal(t, string(want), string(got), name)
	}
}
