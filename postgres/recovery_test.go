package postgres_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/pgtest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/postgres"
	"github.com/keelmcp/keel/transport"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// After one failed Append (seq 3 lost), later appends are taken and a
// resumption from before the gap reports the events lost; a repeat is refused.
func TestEventStoreAppendAfterALostOneDropsTheEarlierEvents(t *testing.T) {
	e := postgres.NewEventStore(open(t, pgtest.Schema(t)), nil)
	ctx := context.Background()
	require.NoError(t, e.Append(ctx, "s", "st", 1, []byte("a")))
	require.NoError(t, e.Append(ctx, "s", "st", 2, []byte("b")))
	// seq 3's Append failed (timeout, connection reset...): the handler goes on with 4, 5, ...
	for seq := uint64(4); seq <= 6; seq++ {
		err := e.Append(ctx, "s", "st", seq, []byte("x"))
		t.Logf("Append seq %d: %v", seq, err)
		assert.NoError(t, err, "seq %d after one lost append", seq)
	}
	got, err := replay(t, e, "s", "st", 4)
	require.NoError(t, err)
	assert.Equal(t, []string{"5:x", "6:x"}, got)
	_, err = replay(t, e, "s", "st", 2)
	assert.ErrorIs(t, err, streamhttp.ErrEventsLost, "3 was never stored")
	_, err = replay(t, e, "s", "st", 1)
	assert.ErrorIs(t, err, streamhttp.ErrEventsLost)
	assert.Error(t, e.Append(ctx, "s", "st", 6, []byte("x")), "a seq again is refused")
	assert.Error(t, e.Append(ctx, "s", "st", 2, []byte("x")), "an older seq is refused")
}

// A replica restarted with the same ReplicaID renews only its own
// instance's tasks: its predecessor's are failed once their lease expires.
func TestTaskStoreRestartWithSameReplicaIDFailsPredecessorTasks(t *testing.T) {
	dsn := pgtest.Schema(t)
	const lease = 300 * time.Millisecond
	ctx := context.Background()
	db1, err := postgres.Open(ctx, dsn, &postgres.Options{ReplicaID: "pod-0"})
	require.NoError(t, err)
	s1 := postgres.NewTaskStore(db1, &postgres.TaskStoreOptions{LeaseTimeout: lease})
	require.NoError(t, s1.Create(ctx, working("orphan", "alice"), mcp.TaskLimits{}))
	s1.Close()
	db1.Close() // the process died
	// the pod restarts under the same name
	db2, err := postgres.Open(ctx, dsn, &postgres.Options{ReplicaID: "pod-0"})
	require.NoError(t, err)
	defer db2.Close()
	s2 := postgres.NewTaskStore(db2, &postgres.TaskStoreOptions{LeaseTimeout: lease})
	defer s2.Close()
	require.NoError(t, s2.Create(ctx, working("mine", "alice"), mcp.TaskLimits{}))
	time.Sleep(6 * lease)
	r, err := s2.Get(ctx, "alice", "orphan")
	require.NoError(t, err)
	assert.Equal(t, mcp.TaskStatusFailed, r.State.Status, "nobody runs it any more")
	r, err = s2.Get(ctx, "alice", "mine")
	require.NoError(t, err)
	assert.Equal(t, mcp.TaskStatusWorking, r.State.Status, "the new instance renews its own task")
}

// failingStore fails the first fails terminal Updates (a database blip
// when the outcome is written).
type failingStore struct {
	*postgres.TaskStore
	t      *testing.T
	fails  int32
	failed atomic.Int32
}

func (f *failingStore) Update(ctx context.Context, rec *mcp.TaskRecord, lim mcp.TaskLimits) error {
	if rec.Terminal() && f.failed.Add(1) <= f.fails {
		dead, cancel := context.WithCancel(ctx) // the store's own write fails
		cancel()
		err := f.TaskStore.Update(dead, rec, lim)
		require.Error(f.t, err)
		return err
	}
	return f.TaskStore.Update(ctx, rec, lim)
}

type quickTools struct{}

func (quickTools) ListTools(context.Context) ([]*mcp.Tool, error) {
	return []*mcp.Tool{{Name: "quick", InputSchema: []byte(`{"type":"object"}`), Execution: &mcp.ToolExecution{TaskSupport: mcp.TaskRequired}}}, nil
}

func (quickTools) CallTool(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	mcp.StartTask(ctx)
	time.Sleep(50 * time.Millisecond)
	return mcp.TextResult("done"), nil
}

// runQuick runs the quick tool as a task on a Server whose store fails
// the first fails writes of an outcome, and returns the task's status
// after 8 leases.
func runQuick(t *testing.T, fails int32) (mcp.TaskStatus, *failingStore) {
	dsn := pgtest.Schema(t)
	const lease = 300 * time.Millisecond
	fs := &failingStore{TaskStore: newStore(t, open(t, dsn), &postgres.TaskStoreOptions{LeaseTimeout: lease}), t: t, fails: fails}
	srv := mcp.NewServer(&mcp.ServerOptions{Name: "r", Version: "1", Tools: quickTools{},
		Tasks: &mcp.TaskOptions{Store: fs, Owner: func(context.Context) string { return "alice" }}})
	ct, st := transport.NewPipe(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = srv.Run(ctx, st) }()
	c := mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: mcp.Version20260728,
		Capabilities: mcp.ClientCapabilities{Extensions: map[string]any{mcp.ExtensionTasks: map[string]any{}}}})
	require.NoError(t, c.Connect(ctx, ct))
	defer c.Close()
	id := startTask(t, c, "quick")
	time.Sleep(8 * lease)
	require.GreaterOrEqual(t, fs.failed.Load(), int32(1), "the outcome's write failed")
	r, err := c.PollTask(context.Background(), id)
	require.NoError(t, err)
	return r.Status, fs
}

// The host writes a task's outcome again after a transient store failure.
func TestTaskOutcomeWriteIsRetried(t *testing.T) {
	status, _ := runQuick(t, 1)
	assert.Equal(t, mcp.TaskStatusCompleted, status)
}

// A task whose outcome could never be written does not stay working: its
// instance stops renewing its lease and the sweeper fails it.
func TestTaskOutcomeNeverWrittenIsSweptFailed(t *testing.T) {
	status, _ := runQuick(t, 1000)
	assert.Equal(t, mcp.TaskStatusFailed, status)
}

// A change made while a replica's LISTEN connection is down is reported
// to it once it reconnects: it re-reads the tasks it runs.
func TestTaskStoreReportsChangesMadeWhileListenWasDown(t *testing.T) {
	dsn := pgtest.Schema(t)
	ctx := context.Background()
	admin := open(t, dsn)
	var t0 time.Time
	require.NoError(t, admin.Pool().QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&t0))
	dbA := open(t, dsn)
	pidA := listenPID(t, admin, t0)
	a := newStore(t, dbA, nil)
	b := newStore(t, open(t, dsn), nil)
	seen := make(chan string, 4)
	defer a.WatchTaskChanges(func(id string) { seen <- id })()
	require.NoError(t, a.Create(ctx, working("t1", "alice"), mcp.TaskLimits{}))
	_, err := admin.Pool().Exec(ctx, `SELECT pg_terminate_backend($1)`, pidA)
	require.NoError(t, err)
	rec, err := b.Get(ctx, "alice", "t1")
	require.NoError(t, err)
	rec.State.Status = mcp.TaskStatusCancelled
	require.NoError(t, b.Update(ctx, rec, mcp.TaskLimits{})) // the cancel, during the gap
	select {
	case id := <-seen:
		assert.Equal(t, "t1", id)
	case <-time.After(3 * time.Second):
		t.Fatal("replica A was never told of the cancel made during its LISTEN reconnect")
	}
}

// listenPID is the backend of the first LISTEN connection made after t0.
func listenPID(t *testing.T, admin *postgres.DB, t0 time.Time) int32 {
	var pid int32
	require.NoError(t, admin.Pool().QueryRow(context.Background(), `SELECT pid FROM pg_stat_activity
		WHERE query LIKE 'LISTEN keel_%' AND backend_start > $1 ORDER BY backend_start LIMIT 1`, t0).Scan(&pid))
	return pid
}

// Once its LISTEN connection is back, a FanOut delivers the tools,
// resources and prompts list changes (any may have been missed meanwhile).
func TestFanOutDeliversListChangesAfterReconnect(t *testing.T) {
	dsn := pgtest.Schema(t)
	ctx := context.Background()
	admin := open(t, dsn)
	var t0 time.Time
	require.NoError(t, admin.Pool().QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&t0))
	f := postgres.NewFanOut(open(t, dsn))
	got := make(chan string, 8)
	defer f.Subscribe(func(c mcp.Change) { got <- c.Kind })()
	_, err := admin.Pool().Exec(ctx, `SELECT pg_terminate_backend($1)`, listenPID(t, admin, t0))
	require.NoError(t, err)
	var kinds []string
	for range 3 {
		select {
		case k := <-got:
			kinds = append(kinds, k)
		case <-time.After(5 * time.Second):
			t.Fatalf("after the reconnect only %v were delivered", kinds)
		}
	}
	assert.ElementsMatch(t, []string{"tools", "resources", "prompts"}, kinds)
}

// orphans creates n working tasks of quota "q" through a replica that then
// stops, with a lease of 50ms, and waits for the lease to expire.
func orphans(t *testing.T, dsn string, n int) {
	t.Helper()
	ctx := context.Background()
	s := postgres.NewTaskStore(open(t, dsn), &postgres.TaskStoreOptions{LeaseTimeout: 50 * time.Millisecond})
	for i := range n {
		rec := working(fmt.Sprintf("t%03d", i), "alice")
		rec.Quota = "q"
		require.NoError(t, s.Create(ctx, rec, mcp.TaskLimits{}))
	}
	require.NoError(t, s.Close())
	time.Sleep(100 * time.Millisecond)
}

// One Sweep fails every expired task, however many batches they take.
func TestSweepFailsEveryExpiredTask(t *testing.T) {
	dsn := pgtest.Schema(t)
	orphans(t, dsn, 250)
	s := newStore(t, open(t, dsn), &postgres.TaskStoreOptions{LeaseTimeout: time.Hour})
	n, err := s.Sweep(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 250, n)
	n, err = s.Sweep(context.Background())
	require.NoError(t, err)
	assert.Zero(t, n, "none left")
}

// A fresh replica's sweeper counts the bounds of TaskStoreOptions.Limits:
// the finished tasks of a quota beyond MaxFinishedTasks are evicted.
func TestSweepCountsLimitsOfOptions(t *testing.T) {
	dsn := pgtest.Schema(t)
	orphans(t, dsn, 3)
	s := newStore(t, open(t, dsn), &postgres.TaskStoreOptions{LeaseTimeout: time.Hour, Limits: mcp.TaskLimits{MaxFinishedTasks: 1}})
	n, err := s.Sweep(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	recs, err := s.List(context.Background(), "alice")
	require.NoError(t, err)
	require.Len(t, recs, 1, "MaxFinishedTasks 1 holds")
	assert.Equal(t, mcp.TaskStatusFailed, recs[0].State.Status)
}

// The list changes a FanOut delivers after a reconnect are kinds a Server
// acts on: its clients are told the lists changed.
func TestFanOutReconnectReachesClients(t *testing.T) {
	dsn := pgtest.Schema(t)
	ctx := context.Background()
	admin := open(t, dsn)
	var t0 time.Time
	require.NoError(t, admin.Pool().QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&t0))
	var cat changingCatalog
	srv := mcp.NewServer(&mcp.ServerOptions{Name: "r", Version: "1", Logger: slog.New(slog.DiscardHandler),
		Tools: cat, Resources: cat, Prompts: cat, FanOut: postgres.NewFanOut(open(t, dsn))})
	ct, st := transport.NewPipe(nil)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = srv.Run(rctx, st) }()
	n := &notes{}
	c := mcp.NewClient(&mcp.ClientOptions{Logger: slog.New(slog.DiscardHandler), OnNotification: n.add})
	require.NoError(t, c.Connect(ctx, ct))
	defer c.Close()
	require.NoError(t, c.Ping(ctx)) // the session is initialized
	_, err := admin.Pool().Exec(ctx, `SELECT pg_terminate_backend($1)`, listenPID(t, admin, t0))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return n.count("notifications/tools/list_changed") > 0 && n.count("notifications/resources/list_changed") > 0 &&
			n.count("notifications/prompts/list_changed") > 0
	}, 5*time.Second, 10*time.Millisecond)
}

// changingCatalog is an empty catalog whose lists may change: a Server
// declares listChanged for its tools, resources and prompts.
type changingCatalog struct{ quickTools }

func (changingCatalog) OnChange(func())          {}
func (changingCatalog) OnResourcesChange(func()) {}
func (changingCatalog) OnPromptsChange(func())   {}
func (changingCatalog) ListResources(context.Context) ([]*mcp.Resource, error) {
	return nil, nil
}
func (changingCatalog) ListResourceTemplates(context.Context) ([]*mcp.ResourceTemplate, error) {
	return nil, nil
}
func (changingCatalog) ReadResource(context.Context, *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	return nil, fmt.Errorf("the catalog is empty")
}
func (changingCatalog) ListPrompts(context.Context) ([]*mcp.Prompt, error) { return nil, nil }
func (changingCatalog) GetPrompt(context.Context, *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	return nil, fmt.Errorf("the catalog is empty")
}
