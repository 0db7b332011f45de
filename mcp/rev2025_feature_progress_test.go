//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
)

// progressLog collects the progress notifications a client receives.
type progressLog struct {
	mu   sync.Mutex
	seen []mcp.ProgressParams
}

func (l *progressLog) add(p *mcp.ProgressParams) {
	l.mu.Lock()
	l.seen = append(l.seen, *p)
	l.mu.Unlock()
}

func (l *progressLog) values() []float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var v []float64
	for _, p := range l.seen {
		v = append(v, p.Progress)
	}
	return v
}

// Progress must increase; every notification precedes the response, and
// nothing is sent after it: a report after completion is refused.
func TestProgressMonotonicAndNothingAfterCompletion(t *testing.T) {
	leaked := make(chan *mcp.Progress, 1)
	var errs []error
	opts := mcptest.ServerOptions(handlerTools{"work": func(ctx context.Context, _ *mcp.ToolCall) (*mcp.CallToolResult, error) {
		p := mcp.ProgressFromContext(ctx)
		for _, v := range []float64{1, 2, 2, 1, 2.5} {
			errs = append(errs, p.Report(ctx, v, 3, "step"))
		}
		errs = append(errs, p.Report(ctx, math.NaN(), 0, ""), p.Report(ctx, 4, math.Inf(1), ""))
		leaked <- p
		return mcp.TextResult("done"), nil
	}})
	var log progressLog
	copts := *quietClient
	copts.OnProgress = log.add
	c, rec := connectRecorded(t, opts, &copts)
	ctx := context.Background()
	res, err := c.CallToolWithParams(ctx, &mcp.CallToolParams{Name: "work", Meta: mcp.Meta{mcp.MetaProgressToken: "tok"}})
	require.NoError(t, err)
	assert.Equal(t, "done", textOf(t, res))
	assert.Equal(t, []float64{1, 2, 2.5}, log.values(), "delivered before the response")

	p := <-leaked // also orders the handler's writes to errs before the reads below
	require.Len(t, errs, 7)
	for i, want := range []error{nil, nil, mcp.ErrProgressNotIncreasing, mcp.ErrProgressNotIncreasing, nil} {
		if want == nil {
			assert.NoError(t, errs[i], "step %d", i)
		} else {
			assert.ErrorIs(t, errs[i], want, "step %d", i)
		}
	}
	assert.Error(t, errs[5], "NaN")
	assert.Error(t, errs[6], "infinite total")

	assert.True(t, p.Enabled())
	assert.Equal(t, `"tok"`, string(p.Token()))
	require.ErrorIs(t, p.Report(ctx, 10, 10, "late"), mcp.ErrRequestCompleted)
	require.NoError(t, c.Ping(ctx))
	assert.Equal(t, []float64{1, 2, 2.5}, log.values(), "nothing after the response")
	assert.Equal(t, []string{"notifications/progress", "notifications/progress", "notifications/progress"}, rec.seen())

	log.mu.Lock()
	first := log.seen[0]
	log.mu.Unlock()
	require.NotNil(t, first.Total)
	assert.Equal(t, 3.0, *first.Total)
	assert.Equal(t, "step", first.Message)
	assert.Equal(t, `"tok"`, string(first.ProgressToken))
}

// Without a token, or outside a request, reporting is a no-op.
func TestProgressWithoutToken(t *testing.T) {
	assert.Nil(t, mcp.ProgressFromContext(context.Background()))
	require.NoError(t, mcp.ReportProgress(context.Background(), 1, 2, "x"))
	var nilProgress *mcp.Progress
	assert.False(t, nilProgress.Enabled())
	assert.Nil(t, nilProgress.Token())

	out := make(chan bool, 1)
	opts := mcptest.ServerOptions(handlerTools{"work": func(ctx context.Context, _ *mcp.ToolCall) (*mcp.CallToolResult, error) {
		out <- mcp.ProgressFromContext(ctx).Enabled()
		return mcp.TextResult("done"), mcp.ReportProgress(ctx, 1, 1, "")
	}})
	c, rec := connectRecorded(t, opts, nil)
	_, err := c.CallTool(context.Background(), "work", nil)
	require.NoError(t, err)
	assert.False(t, <-out)
	assert.Empty(t, rec.seen())
}

// slowResources is a ResourceSource whose reads report progress and then
// wait for block (when not nil) or their context.
type slowResources struct {
	block  chan struct{}
	leaked chan *mcp.Progress
	ended  chan error
}

func (*slowResources) ListResources(context.Context) ([]*mcp.Resource, error) { return nil, nil }

func (*slowResources) ListResourceTemplates(context.Context) ([]*mcp.ResourceTemplate, error) {
	return nil, nil
}

func (s *slowResources) ReadResource(ctx context.Context, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	if err := mcp.ReportProgress(ctx, 1, 2, "half"); err != nil {
		return nil, err
	}
	if err := mcp.ReportProgress(ctx, 2, 2, "all"); err != nil {
		return nil, err
	}
	s.leaked <- mcp.ProgressFromContext(ctx)
	if s.block != nil {
		<-ctx.Done()
		s.ended <- ctx.Err()
		return nil, ctx.Err()
	}
	text := "ok"
	return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: p.URI, Text: &text}}}, nil
}

// Requests other than tools/call that run user code get the same progress
// and cancellation behaviour (resources/read shown): progress against the
// request's token, nothing after the response, and notifications/cancelled
// (sent by the Client when its ctx ends) cancels the handler's context.
func TestProgressAndCancellationOfOtherRequests(t *testing.T) {
	src := &slowResources{leaked: make(chan *mcp.Progress, 2), ended: make(chan error, 1)}
	opts := mcptest.ServerOptions(nil)
	opts.Resources = src
	var log progressLog
	copts := *quietClient
	copts.OnProgress = log.add
	c, rec := connectRecorded(t, opts, &copts)
	ctx := context.Background()

	var res mcp.ReadResourceResult
	require.NoError(t, c.Call(ctx, "resources/read", &mcp.ReadResourceParams{URI: "file:///a", Meta: mcp.Meta{mcp.MetaProgressToken: 9}}, &res))
	require.Len(t, res.Contents, 1)
	assert.Equal(t, []float64{1, 2}, log.values())
	p := <-src.leaked
	assert.Equal(t, "9", string(p.Token()))
	require.ErrorIs(t, p.Report(ctx, 3, 3, ""), mcp.ErrRequestCompleted)

	src.block = make(chan struct{})
	cctx, cancel := context.WithCancel(ctx)
	go func() { <-src.leaked; cancel() }()
	err := c.Call(cctx, "resources/read", &mcp.ReadResourceParams{URI: "file:///b", Meta: mcp.Meta{mcp.MetaProgressToken: "t"}}, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, <-src.ended, context.Canceled)
	require.NoError(t, c.Ping(ctx))
	assert.Equal(t, []string{"notifications/progress", "notifications/progress", "notifications/progress", "notifications/progress"}, rec.seen(),
		"two progress notifications per read, no response to the cancelled one")
}
