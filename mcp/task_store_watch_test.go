package mcp_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// sharedTaskStore is one MemoryTaskStore seen by several servers as if
// each were a process with its own connection to a shared store: a
// server's updates and deletes are reported to the others' watchers
// (mcp.TaskChangeSource), never to its own.
type sharedTaskStore struct {
	*mcp.MemoryTaskStore
	hub *watchHub
}

type watchHub struct {
	mu       sync.Mutex
	watchers map[*sharedTaskStore]func(string)
}

func (s *sharedTaskStore) Update(ctx context.Context, rec *mcp.TaskRecord, lim mcp.TaskLimits) error {
	if err := s.MemoryTaskStore.Update(ctx, rec, lim); err != nil {
		return err
	}
	s.report(rec.ID)
	return nil
}

func (s *sharedTaskStore) Delete(ctx context.Context, owner, id string) error {
	if err := s.MemoryTaskStore.Delete(ctx, owner, id); err != nil {
		return err
	}
	s.report(id)
	return nil
}

// report tells the other servers' watchers, on a goroutine of its own as a
// store's listener would.
func (s *sharedTaskStore) report(id string) {
	s.hub.mu.Lock()
	var fns []func(string)
	for o, fn := range s.hub.watchers {
		if o != s {
			fns = append(fns, fn)
		}
	}
	s.hub.mu.Unlock()
	for _, fn := range fns {
		go fn(id)
	}
}

func (s *sharedTaskStore) WatchTaskChanges(changed func(id string)) func() {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.hub.watchers[s] = changed
	return func() {
		s.hub.mu.Lock()
		defer s.hub.mu.Unlock()
		delete(s.hub.watchers, s)
	}
}

// A server whose store is shared applies the changes made through the
// others to the runs of its own process: a cancel made through another
// server cancels the handler here, and answers given through another
// server run the handler here again.
func TestSharedStoreChangesReachTheRun(t *testing.T) {
	mem := mcp.NewMemoryTaskStore(func() time.Time { return mcptest.FixedTime }) // the servers' clock
	hub := &watchHub{watchers: map[*sharedTaskStore]func(string){}}
	start := func(tools *extTaskTools) *mcp.Client {
		o := mcptest.ServerOptions(tools)
		o.Tasks = &mcp.TaskOptions{Store: &sharedTaskStore{MemoryTaskStore: mem, hub: hub},
			Owner: func(context.Context) string { return "alice" }}
		srv := mcp.NewServer(o)
		ct, st := transport.NewPipe(nil)
		done := make(chan error, 1)
		go func() { done <- srv.Run(context.Background(), st) }()
		c := mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: mcp.Version20260728, Logger: slog.New(slog.DiscardHandler),
			Capabilities: mcp.ClientCapabilities{Extensions: map[string]any{mcp.ExtensionTasks: map[string]any{}}},
			OnElicitation: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Kim"}}, nil
			}})
		require.NoError(t, c.Connect(context.Background(), ct))
		t.Cleanup(func() {
			c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			assert.NoError(t, srv.StopTasks(ctx))
			<-done
		})
		return c
	}
	runner := &extTaskTools{}
	a, b := start(runner), start(&extTaskTools{})
	ctx := context.Background()
	started := func(name string) string {
		t.Helper()
		_, err := a.CallTool(ctx, name, nil)
		var ts *mcp.TaskStartedError
		require.ErrorAs(t, err, &ts)
		return ts.Task.TaskID
	}

	id := started("slow")
	_, err := b.CancelTask(ctx, id)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return runner.cancelled.Load() == 1 }, 5*time.Second, 5*time.Millisecond,
		"the handler on server A sees the cancel made through server B")

	id = started("ask")
	var task *mcp.DetailedTask
	require.Eventually(t, func() bool {
		task, err = b.PollTask(ctx, id)
		return err == nil && task.Status == mcp.TaskStatusInputRequired
	}, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, b.AnswerTask(ctx, task))
	res, err := b.WaitTask(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, "a=Kim b=Kim state=st round=1", res.Content[0].Text, "A's handler ran with the answers given through B")
}
