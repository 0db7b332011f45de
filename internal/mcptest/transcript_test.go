package mcptest

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// recorder is a testing.TB that records failures instead of failing, so
// that the runner's own failure detection can be tested.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs) > 0
}

func (r *recorder) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.errs, "\n")
}

// play runs one session script against a server with cfg and returns the
// failures the runner reported and, in update mode, the rewritten script.
func play(t *testing.T, cfg *ServerConfig, script string, opts *TranscriptOptions) (string, string) {
	rec := &recorder{TB: t}
	if cfg == nil {
		cfg = &ServerConfig{}
	}
	o := TranscriptOptions{Timeout: 2 * time.Second}
	if opts != nil {
		o = *opts
	}
	var out []byte
	done := make(chan struct{})
	go func() {
		defer close(done)
		s := &session{t: rec, cfg: cfg, opts: &o, file: "test"}
		out = s.run([]byte(script))
	}()
	<-done
	return rec.all(), string(out)
}

func TestSessionDetectsFailures(t *testing.T) {
	tests := []struct {
		name, script, want string
	}{
		{"an unexpected response", `> {"jsonrpc":"2.0","id":1,"method":"ping"}`, "unexpected extra message after line 1"},
		{"a wrong response", "> {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n< {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":1}}", "unexpected message after line 1"},
		{"a missing response", "> {\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n< {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", "missing messages"},
		{"bad syntax", "hello", `want "> "`},
		{"an expectation first", `< {}`, "before anything was sent"},
		{"a bad quoted line", `>q "unterminated`, "bad quoted line"},
		{"an expectation that is not JSON", "> {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n< {", "not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs, _ := play(t, nil, tt.script, &TranscriptOptions{Timeout: 300 * time.Millisecond})
			assert.Contains(t, errs, tt.want)
		})
	}
}

func TestCanonical(t *testing.T) {
	a, err := canonical([]byte(`{"b":1,"a":[2,1]}`))
	require.NoError(t, err)
	assert.Equal(t, `{"a":[2,1],"b":1}`, a, "nested arrays keep their order")
	b1, _ := canonical([]byte(`[{"id":2},{"id":1}]`))
	b2, _ := canonical([]byte(`[{"id":1},{"id":2}]`))
	assert.Equal(t, b1, b2, "batch elements compare as a set")
	_, err = canonical([]byte(`{"a":1,"a":2}`))
	require.Error(t, err, "duplicate names are not canonicalized away")
}

func TestValidateTransportReportsViolations(t *testing.T) {
	rec := &recorder{TB: t}
	a, b := transport.NewPipe(nil)
	defer a.Close()
	v := ValidateTransport(rec, a)
	ctx := context.Background()
	require.NoError(t, v.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)))
	_, err := b.Read(ctx)
	require.NoError(t, err)
	require.NoError(t, b.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)))
	_, err = v.Read(ctx)
	require.NoError(t, err)
	assert.Empty(t, rec.all())
	require.NoError(t, b.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"result":[]}`)))
	_, err = v.Read(ctx)
	require.NoError(t, err)
	assert.Contains(t, rec.all(), "violates revision 2025-11-25")
}

func TestServerConfigOptions(t *testing.T) {
	o := (&ServerConfig{}).Options()
	require.NotNil(t, o.Tools)
	tools, _ := o.Tools.ListTools(context.Background())
	assert.Len(t, tools, len(AllTools))
	assert.Equal(t, "id-1", o.NewID())
	assert.Equal(t, "id-2", o.NewID())
	assert.Equal(t, FixedTime, o.Now())

	o = (&ServerConfig{Tools: []string{}}).Options()
	tools, _ = o.Tools.ListTools(context.Background())
	assert.Empty(t, tools)
	assert.Nil(t, (&ServerConfig{NoTools: true}).Options().Tools)

	o = (&ServerConfig{Name: "n", Version: "v", PageSize: 3}).Options()
	assert.Equal(t, "n", o.Name)
	assert.Equal(t, "v", o.Version)
	assert.Equal(t, 3, o.PageSize)
}

func TestTools(t *testing.T) {
	assert.IsNonDecreasing(t, AllTools)
	assert.Panics(t, func() { NewTools("nope") })
	tools := NewTools(ToolSlow, ToolEcho, ToolEcho)
	defs, err := tools.ListTools(context.Background())
	require.NoError(t, err)
	require.Len(t, defs, 2)
	assert.Equal(t, ToolEcho, defs[0].Name)
	_, err = tools.CallTool(context.Background(), &mcp.ToolCall{Name: ToolFail, Arguments: []byte(`{}`)})
	var rpcErr *mcp.Error
	require.ErrorAs(t, err, &rpcErr, "a tool not served is unknown")
	assert.EqualValues(t, mcp.CodeInvalidParams, rpcErr.Code)
	se, ok := rpcErr.StructuredError()
	require.True(t, ok)
	assert.Equal(t, mcp.ErrNotFound, se.Code)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = tools.CallTool(ctx, &mcp.ToolCall{Name: ToolSlow, Arguments: []byte(`{}`)})
	require.ErrorIs(t, err, context.Canceled)
}
