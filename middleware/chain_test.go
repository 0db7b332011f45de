package middleware

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

var _ mcp.ToolSource = (*Chain)(nil)

func TestChainOrderFirstListedIsOutermost(t *testing.T) {
	tt := newTestTools(t)
	var rec recorder
	handler := func(next Handler) Handler {
		return func(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
			rec.add("handler")
			return next(ctx, c)
		}
	}
	ch := New(tt.reg, rec.stage("A"), rec.stage("B")).Use(rec.stage("C"), handler)
	res, err := ch.CallTool(context.Background(), call("echo", `{"message":"hi"}`, nil))
	require.NoError(t, err)
	assert.Equal(t, "hi", res.Content[0].Text)
	assert.Equal(t, "A> B> C> handler <C <B <A", rec.String())
}

func TestUseAppends(t *testing.T) {
	tt := newTestTools(t)
	var r1, r2 recorder
	a := New(tt.reg)
	a.Use(r1.stage("A"))
	a.Use(r1.stage("B"), r1.stage("C"))
	b := New(tt.reg, r2.stage("A"), r2.stage("B"), r2.stage("C"))
	assert.Equal(t, 3, a.Len())
	for _, ch := range []*Chain{a, b} {
		_, err := ch.CallTool(context.Background(), call("echo", `{"message":"x"}`, nil))
		require.NoError(t, err)
	}
	assert.Equal(t, r2.String(), r1.String())
	assert.Equal(t, "A> B> C> <C <B <A", r1.String())
}

func TestChainBuiltOnce(t *testing.T) {
	tt := newTestTools(t)
	var builds atomic.Int32
	counting := func(next Handler) Handler {
		builds.Add(1)
		return next
	}
	ch := New(tt.reg, counting, Recover()).Use(counting)
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := ch.CallTool(context.Background(), call("echo", `{"message":"x"}`, nil))
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(2), builds.Load(), "each middleware is called once, at build time")
	assert.PanicsWithValue(t, "middleware: Chain.Use called after the chain was built (it has served a call); add every middleware before serving",
		func() { ch.Use(Recover()) })
}

func TestUseRejectsNil(t *testing.T) {
	tt := newTestTools(t)
	assert.Panics(t, func() { New(tt.reg, nil) })
	assert.Panics(t, func() { New(nil) })
	ch := New(tt.reg, func(Handler) Handler { return nil })
	assert.Panics(t, func() { ch.Handler() })
}

func TestChainListToolsDelegates(t *testing.T) {
	tt := newTestTools(t)
	got, err := Standard(tt.reg, nil).ListTools(context.Background())
	require.NoError(t, err)
	want, err := tt.reg.ListTools(context.Background())
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Same(t, tt.reg, Standard(tt.reg, nil).Registry())
}

func TestNilResultBecomesInternal(t *testing.T) {
	tt := newTestTools(t)
	_, err := New(tt.reg).CallTool(context.Background(), call("nilres", `{}`, nil))
	se := structuredErr(t, err)
	assert.Equal(t, mcp.ErrInternal, se.Code)
	assert.Equal(t, "run-1", se.RunID)
	_, err = New(tt.reg).CallTool(context.Background(), nil)
	assert.ErrorIs(t, err, &mcp.Error{Code: mcp.CodeInvalidParams})
}

func TestCallToolMemoized(t *testing.T) {
	tt := newTestTools(t)
	c := NewCall(tt.reg, call("echo", `{}`, nil))
	t1, err := c.Tool()
	require.NoError(t, err)
	tt.reg.Remove("echo")
	t2, err := c.Tool()
	require.NoError(t, err)
	assert.Same(t, t1, t2)
	assert.Same(t, tt.reg, c.Registry())

	u := NewCall(tt.reg, call("nope", `{}`, nil))
	_, err1 := u.Tool()
	_, err2 := u.Tool()
	assert.Same(t, err1, err2)
}

func TestStandardHappyPathAndErrors(t *testing.T) {
	tt := newTestTools(t)
	ch := Standard(tt.reg, nil)
	assert.Equal(t, 11, ch.Len())
	ctx := context.Background()

	res, err := ch.CallTool(ctx, call("echo", `{"message":"hello"}`, nil))
	require.NoError(t, err)
	assert.Equal(t, "hello", res.Content[0].Text)

	_, err = ch.CallTool(ctx, call("nope", `{}`, nil))
	var rpc *mcp.Error
	require.ErrorAs(t, err, &rpc)
	assert.EqualValues(t, mcp.CodeInvalidParams, rpc.Code)
	se := structuredErr(t, err)
	assert.Equal(t, mcp.ErrNotFound, se.Code)
	assert.Equal(t, "corr-1", se.CorrelationID)
	assert.Equal(t, "run-1", se.RunID)

	_, err = ch.CallTool(ctx, call("echo", `{"message":1}`, nil))
	se = structuredErr(t, err)
	assert.Equal(t, mcp.ErrInvalidArgument, se.Code)
	assert.Equal(t, "run-1", se.RunID)
	assert.NotEmpty(t, se.Details["violations"])
}
