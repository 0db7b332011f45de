package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/exampletest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// jsonArray returns a JSON array of n copies of item.
func jsonArray(n int, item string) string {
	return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
}

func TestResponseLimit(t *testing.T) {
	blocks := func(n int) *mcp.CallToolResult {
		r := &mcp.CallToolResult{}
		for range n {
			r.Content = append(r.Content, mcp.Text("x"))
		}
		return r
	}
	structured := func(sc string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.Text("s")}, StructuredContent: json.RawMessage(sc)}
	}
	sized := structured(`{"text":"` + strings.Repeat("a", 100) + `"}`)
	size := len(must(jsonv2.Marshal(sized)))
	for _, tc := range []struct {
		name  string
		opts  *ResponseLimitOptions
		res   *mcp.CallToolResult
		limit string // "" = passes
		path  string
	}{
		{"1000 blocks pass", nil, blocks(1000), "", ""},
		{"1001 blocks", nil, blocks(1001), "maxArrayItems", "/content"},
		{"array at the root", nil, structured(jsonArray(1001, "1")), "maxArrayItems", "/structuredContent"},
		{"array in an object", nil, structured(`{"rows":` + jsonArray(1001, `"r"`) + `}`), "maxArrayItems", "/structuredContent/rows"},
		{"array of objects", nil, structured(`{"rows":` + jsonArray(1001, `{"a":[1]}`) + `}`), "maxArrayItems", "/structuredContent/rows"},
		{"nested arrays", nil, structured(`{"a":{"b":[[1,2],` + jsonArray(1001, "[]") + `]}}`), "maxArrayItems", "/structuredContent/a/b/1"},
		{"many small arrays pass", nil, structured(jsonArray(1000, jsonArray(1000, "0"))), "", ""},
		{"object members are not items", nil, structured(manyMembers(2000)), "", ""},
		{"custom item limit", &ResponseLimitOptions{MaxArrayItems: 2}, structured(`{"a":[1,2,3]}`), "maxArrayItems", "/structuredContent/a"},
		{"shortest array over the limit", &ResponseLimitOptions{MaxArrayItems: 2}, structured(`[1,1,1]`), "maxArrayItems", "/structuredContent"},
		{"shortest array at the limit", &ResponseLimitOptions{MaxArrayItems: 2}, structured(`[1,1]`), "", ""},
		{"no item limit", &ResponseLimitOptions{MaxArrayItems: -1}, blocks(5000), "", ""},
		{"exactly the byte limit", &ResponseLimitOptions{MaxBytes: size}, sized, "", ""},
		{"one byte over", &ResponseLimitOptions{MaxBytes: size - 1}, sized, "maxResponseBytes", ""},
		{"default byte limit", nil, mcp.TextResult(strings.Repeat("z", DefaultMaxResponseBytes)), "maxResponseBytes", ""},
		{"no byte limit", &ResponseLimitOptions{MaxBytes: -1}, mcp.TextResult(strings.Repeat("z", DefaultMaxResponseBytes)), "", ""},
		{"invalid structured content is left to the Server", nil, structured(`{"a":`), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs exampletest.SafeBuffer
			ch := New(registry.New(nil), ResponseLimit(tc.opts), func(Handler) Handler {
				return func(context.Context, *Call) (*mcp.CallToolResult, error) { return tc.res, nil }
			})
			res, err := ch.CallTool(context.Background(), call("big", `{}`, &logs))
			if tc.limit == "" {
				require.NoError(t, err)
				assert.Same(t, tc.res, res, "passed on untouched")
				return
			}
			assert.Nil(t, res, "no result, truncated or not")
			se := structuredErr(t, err)
			assert.Equal(t, mcp.ErrResourceExhausted, se.Code)
			assert.False(t, se.Retryable)
			assert.Equal(t, tc.limit, se.Details["limit"])
			assert.Equal(t, "big", se.Details["tool"])
			assert.Contains(t, se.Message, tc.limit)
			assert.Equal(t, "corr-1", se.CorrelationID)
			if tc.path != "" {
				assert.Equal(t, tc.path, se.Details["path"])
			}
			assert.Contains(t, logs.String(), "over a response limit")
			assert.NotContains(t, logs.String(), "zzzz", "the dropped result is not logged")
		})
	}
}

// manyMembers returns a JSON object of n members.
func manyMembers(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"k` + strconv.Itoa(i) + `":1`)
	}
	return b.String() + "}"
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Errors from inside pass through unchecked.
func TestResponseLimitPassesErrors(t *testing.T) {
	want := errors.New("boom")
	ch := New(registry.New(nil), ResponseLimit(&ResponseLimitOptions{MaxBytes: 1, MaxArrayItems: 1}), func(Handler) Handler {
		return func(context.Context, *Call) (*mcp.CallToolResult, error) { return nil, want }
	})
	_, err := ch.CallTool(context.Background(), call("x", `{}`, nil))
	assert.Same(t, want, err)
}

// The shortcut that spares small results an encoding never lets a result
// over the limit through: its bound is at least the real size.
func TestFitsSurelyIsAnUpperBound(t *testing.T) {
	text := func(s string) *mcp.CallToolResult { return mcp.TextResult(s) }
	blob := "\x01\"\\<>&\u2028" + strings.Repeat("\x00", 100)
	for _, res := range []*mcp.CallToolResult{
		text(""),
		text(strings.Repeat("\x01", 1000)),
		text(strings.Repeat("é", 500)),
		{Content: []mcp.Content{{Type: "resource", Resource: &mcp.ResourceContents{URI: "x:" + blob, Text: &blob, Blob: &blob}}}},
		{Content: []mcp.Content{mcp.Text(blob), mcp.Text(blob)}, StructuredContent: json.RawMessage(`{"a":"\u0001\u0001"}`), IsError: true},
		{Content: []mcp.Content{{Type: "image", Data: blob, MimeType: blob}}},
	} {
		size := len(must(jsonv2.Marshal(res)))
		for _, limit := range []int{size - 1, size / 2, 1} {
			assert.False(t, fitsSurely(res, limit), "size %d, limit %d", size, limit)
		}
		assert.True(t, fitsSurely(res, 10*size+1024), "a generous limit needs no encoding")
	}
	assert.False(t, fitsSurely(&mcp.CallToolResult{Meta: mcp.Meta{"k": "v"}}, 1<<20), "_meta: cannot tell")
}
