//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
)

// recordingStore is a TaskStore plugged into a Server: a MemoryTaskStore
// that remembers the owners it saw, can fail reads, and refuses the first
// update of each task with ErrTaskConflict (as when another process wrote
// it first).
type recordingStore struct {
	*mcp.MemoryTaskStore
	failGet   atomic.Bool
	conflicts atomic.Int64

	mu       sync.Mutex
	owners   map[string]string // task id → owner
	conflict map[string]bool   // task ids whose first update was refused
}

var errDown = errors.New("database is down")

func newRecordingStore(now func() time.Time) *recordingStore {
	return &recordingStore{MemoryTaskStore: mcp.NewMemoryTaskStore(now), owners: map[string]string{}, conflict: map[string]bool{}}
}

func (s *recordingStore) Create(ctx context.Context, rec *mcp.TaskRecord, lim mcp.TaskLimits) error {
	s.mu.Lock()
	s.owners[rec.ID] = rec.Owner
	s.mu.Unlock()
	return s.MemoryTaskStore.Create(ctx, rec, lim)
}

func (s *recordingStore) Get(ctx context.Context, owner, id string) (*mcp.TaskRecord, error) {
	if s.failGet.Load() {
		return nil, errDown
	}
	return s.MemoryTaskStore.Get(ctx, owner, id)
}

func (s *recordingStore) Update(ctx context.Context, rec *mcp.TaskRecord, lim mcp.TaskLimits) error {
	s.mu.Lock()
	first := !s.conflict[rec.ID]
	s.conflict[rec.ID] = true
	s.mu.Unlock()
	if first {
		s.conflicts.Add(1)
		return mcp.ErrTaskConflict
	}
	return s.MemoryTaskStore.Update(ctx, rec, lim)
}

// record reads the record of task id as the server stored it.
func (s *recordingStore) record(t *testing.T, id string) *mcp.TaskRecord {
	t.Helper()
	s.mu.Lock()
	owner := s.owners[id]
	s.mu.Unlock()
	rec, err := s.MemoryTaskStore.Get(context.Background(), owner, id)
	require.NoError(t, err)
	return rec
}

// The Server keeps its task records in TaskOptions.Store: the record of a
// finished task holds its state and result as plain data, and a write that
// finds the record changed (ErrTaskConflict) is read again and retried.
func TestServerUsesThePluggedTaskStore(t *testing.T) {
	ctx := context.Background()
	opts := taskServerOptions(mcptest.NewTools(mcptest.TaskTools...), &mcp.TaskOptions{})
	store := newRecordingStore(opts.Now) // the store's clock is the server's
	opts.Tasks.Store = store
	c, _ := connect(t, opts, nil)

	created, err := c.CallToolAsTask(ctx, mcptest.ToolTaskEcho, map[string]string{"message": "hi"}, time.Minute)
	require.NoError(t, err)
	id := created.Task.TaskID
	res, err := c.TaskResult(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, "hi", textOf(t, res))
	assert.Positive(t, store.conflicts.Load(), "the store refused a write")

	rec := store.record(t, id)
	assert.Equal(t, mcp.TaskStatusCompleted, rec.State.Status, "the retried write is stored")
	assert.Equal(t, mcp.Version20251125, rec.Revision)
	assert.Equal(t, id, rec.State.TaskID)
	require.NotNil(t, rec.Result)
	assert.Equal(t, "hi", textOf(t, rec.Result))
	assert.Positive(t, rec.Size, "the result's JSON size, for MaxFinishedBytes")
	assert.Greater(t, rec.Version, uint64(1))

	got, err := c.GetTask(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, rec.State, *got, "tasks/get answers the stored state")
}

// A store that fails is an internal error of the request that met it,
// with no detail of the failure; the server goes on serving.
func TestTaskStoreFailureIsAnInternalError(t *testing.T) {
	ctx := context.Background()
	opts := taskServerOptions(mcptest.NewTools(mcptest.TaskTools...), &mcp.TaskOptions{})
	store := newRecordingStore(opts.Now)
	opts.Tasks.Store = store
	c, _ := connect(t, opts, nil)
	created, err := c.CallToolAsTask(ctx, mcptest.ToolTaskEcho, map[string]string{"message": "hi"}, time.Minute)
	require.NoError(t, err)
	_, err = c.TaskResult(ctx, created.Task.TaskID)
	require.NoError(t, err)

	store.failGet.Store(true)
	_, err = c.GetTask(ctx, created.Task.TaskID)
	var rpcErr *mcp.Error
	require.ErrorAs(t, err, &rpcErr)
	assert.EqualValues(t, mcp.CodeInternalError, rpcErr.Code)
	assert.Equal(t, "Internal error: the task store failed", rpcErr.Message)
	assert.NotContains(t, rpcErr.Error(), errDown.Error(), "the cause is logged, not sent")

	store.failGet.Store(false)
	_, err = c.GetTask(ctx, created.Task.TaskID)
	require.NoError(t, err, "the server goes on")
}
