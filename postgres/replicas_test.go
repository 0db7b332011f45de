package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/pgtest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// replicaTools: "slow" runs until its context ends (and says so on
// cancelled); "ask" asks for a name, then answers with it.
type replicaTools struct{ cancelled chan string }

func (*replicaTools) ListTools(context.Context) ([]*mcp.Tool, error) {
	schema := json.RawMessage(`{"type":"object"}`)
	return []*mcp.Tool{
		{Name: "slow", InputSchema: schema, Execution: &mcp.ToolExecution{TaskSupport: mcp.TaskRequired}},
		{Name: "ask", InputSchema: schema, Execution: &mcp.ToolExecution{TaskSupport: mcp.TaskRequired}},
	}, nil
}

var askName = mcp.ElicitInput(mcp.ElicitParams{Message: "Your name?", RequestedSchema: json.RawMessage(`{"type":"object"}`)})

func (tt *replicaTools) CallTool(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	mcp.StartTask(ctx)
	switch call.Name {
	case "slow":
		<-ctx.Done()
		tt.cancelled <- call.Name
		return nil, ctx.Err()
	case "ask":
		in := mcp.InputFromContext(ctx)
		er, ok := in.Elicit("name")
		if !ok {
			return nil, mcp.InputRequired(map[string]mcp.InputRequest{"name": askName}, []byte("st"))
		}
		return mcp.TextResult(fmt.Sprintf("Hello, %v (round %d)", er.Content["name"], in.Round)), nil
	}
	return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: "unknown tool"}
}

// replica starts a Server on its own connection to dsn, as one process of
// a deployment would, and returns a 2026-07-28 client of it.
func replica(t *testing.T, dsn string, tools *replicaTools) *mcp.Client {
	t.Helper()
	store := newStore(t, open(t, dsn), nil)
	srv := mcp.NewServer(&mcp.ServerOptions{
		Name: "replica", Version: "1", Tools: tools, Logger: slog.New(slog.DiscardHandler),
		Tasks: &mcp.TaskOptions{Store: store, Owner: func(context.Context) string { return "alice" }},
	})
	ct, st := transport.NewPipe(nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Run(ctx, st) }()
	c := mcp.NewClient(&mcp.ClientOptions{
		ProtocolVersion: mcp.Version20260728, Logger: slog.New(slog.DiscardHandler),
		Capabilities: mcp.ClientCapabilities{Extensions: map[string]any{mcp.ExtensionTasks: map[string]any{}}},
		OnElicitation: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Kim"}}, nil
		},
	})
	require.NoError(t, c.Connect(ctx, ct))
	t.Cleanup(func() {
		c.Close()
		cancel()
		<-done
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = srv.StopTasks(sctx)
	})
	return c
}

func startTask(t *testing.T, c *mcp.Client, tool string) string {
	t.Helper()
	_, err := c.CallTool(context.Background(), tool, nil)
	var ts *mcp.TaskStartedError
	require.ErrorAs(t, err, &ts)
	return ts.Task.TaskID
}

// A task started through replica A is followed, answered and cancelled
// through replica B: the cancel reaches A's handler, and the answers run
// A's handler again.
func TestTaskAcrossReplicas(t *testing.T) {
	dsn := pgtest.Schema(t)
	tools := &replicaTools{cancelled: make(chan string, 1)}
	a, b := replica(t, dsn, tools), replica(t, dsn, &replicaTools{cancelled: make(chan string, 1)})
	ctx := context.Background()

	id := startTask(t, a, "slow")
	got, err := b.PollTask(ctx, id)
	require.NoError(t, err, "replica B follows a task of replica A")
	assert.Equal(t, mcp.TaskStatusWorking, got.Status)
	_, err = b.CancelTask(ctx, id)
	require.NoError(t, err)
	select {
	case <-tools.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the cancel through B did not reach the handler on A")
	}
	got, err = a.PollTask(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, mcp.TaskStatusCancelled, got.Status)

	id = startTask(t, a, "ask")
	require.Eventually(t, func() bool {
		got, err = b.PollTask(ctx, id)
		return err == nil && got.Status == mcp.TaskStatusInputRequired
	}, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, b.AnswerTask(ctx, got), "answered through B")
	res, err := b.WaitTask(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, "Hello, Kim (round 1)", res.Content[0].Text, "A's handler ran again with the answers given through B")

	var e *mcp.Error
	_, err = b.PollTask(ctx, "no-such-task")
	require.True(t, errors.As(err, &e))
	assert.EqualValues(t, mcp.CodeInvalidParams, e.Code)
}
