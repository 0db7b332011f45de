package otel

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/keelmcp/keel/transport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestScanHead(t *testing.T) {
	for _, tc := range []struct {
		msg    string
		id     string
		method string
		ok     bool
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`, `7`, "tools/call", true},
		{` { "id" : "a\"b" , "method" : "ping" } `, `"a\"b"`, "ping", true},
		{`{"params":{"method":"inner","id":9},"method":"tools/list"}`, ``, "tools/list", true},
		{`{"id":1,"result":{"method":"not me","x":[1,{"y":"}"}]}}`, `1`, "", true},
		{`{"method":"a\u002fb"}`, ``, "a/b", true},
		{`{"method":5}`, ``, "", true},
		{`{}`, ``, "", true},
		{`[{"method":"ping"}]`, ``, "", false},
		{`{"method":"ping"`, ``, "", false},
		{`{"method" "ping"}`, ``, "", false},
		{`{"id":{"a":[1,2}`, ``, "", false},
		{`{"method":"pi`, ``, "", false},
		{``, ``, "", false},
	} {
		id, method, ok := scanHead([]byte(tc.msg))
		assert.Equal(t, tc.ok, ok, tc.msg)
		if tc.ok {
			assert.Equal(t, tc.id, string(id), tc.msg)
			assert.Equal(t, tc.method, method, tc.msg)
		}
	}
}

// The trace context goes into params._meta beside the members already
// there (a 2026-07-28 request's revision and capabilities), and params
// are created when absent.
func TestInjectKeepsMeta(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter()))
	tm, err := New(&Options{TracerProvider: tp, Propagator: propagation.TraceContext{}})
	require.NoError(t, err)
	ce, se := transport.NewPipe(nil)
	defer se.Close()
	ct := tm.ClientTransport(ce)
	defer ct.Close()
	ctx := context.Background()
	for _, tc := range []struct{ in, keep string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a<b","arguments":{"q":"<&>"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":3}}}`, "progressToken"},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, ""},
	} {
		require.NoError(t, ct.Write(ctx, []byte(tc.in)))
		out, err := se.Read(ctx)
		require.NoError(t, err)
		var m struct {
			Params struct {
				Name string            `json:"name"`
				Args map[string]string `json:"arguments"`
				Meta map[string]any    `json:"_meta"`
			} `json:"params"`
		}
		require.NoError(t, json.Unmarshal(out, &m), string(out))
		assert.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`, m.Params.Meta["traceparent"])
		if tc.keep != "" {
			assert.Equal(t, "a<b", m.Params.Name)
			assert.Equal(t, "<&>", m.Params.Args["q"])
			assert.Equal(t, "2026-07-28", m.Params.Meta["io.modelcontextprotocol/protocolVersion"])
			assert.EqualValues(t, 3, m.Params.Meta[tc.keep])
			assert.NotContains(t, string(out), `\u003c`, "no HTML escaping")
		}
	}
}

func TestRoundLinksBound(t *testing.T) {
	l := newRoundLinks()
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}})
	n := MaxLinkedRounds + 5
	for i := range n {
		l.put(LinkKindTask, "t"+strconv.Itoa(i), sc)
	}
	l.put(LinkKindTask, "t9", sc) // again: no second entry
	assert.Len(t, l.byKey, MaxLinkedRounds)
	assert.Len(t, l.order, MaxLinkedRounds)
	for i := range 5 {
		_, ok := l.get(LinkKindTask, "t"+strconv.Itoa(i))
		assert.False(t, ok, "the oldest are forgotten")
	}
	_, ok := l.get(LinkKindTask, "t"+strconv.Itoa(n-1))
	assert.True(t, ok)
	_, ok = l.get(LinkKindInputRound, "t"+strconv.Itoa(n-1))
	assert.False(t, ok, "kinds are apart")
	l.put(LinkKindTask, "", sc)
	l.put(LinkKindTask, "x", trace.SpanContext{})
	assert.Len(t, l.byKey, MaxLinkedRounds, "empty keys and invalid spans are not kept")
}
