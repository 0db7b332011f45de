package sqlstore_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/internal/pgtest"
)

// runLog counts the executions of each request per node.
type runLog struct {
	mu   sync.Mutex
	runs map[string][]string // requestId → nodes that ran it
}

func (l *runLog) add(id, node string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs == nil {
		l.runs = map[string][]string{}
	}
	l.runs[id] = append(l.runs[id], node)
}

func (l *runLog) get(id string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.runs[id]...)
}

// slowWorker hosts "worker", whose handler takes longer than the nodes'
// retransmission timeout (so that a second node claiming the request
// would find it still pending) and logs who ran it.
func slowWorker(log *runLog, node string, d time.Duration) *aacp.Mux {
	m := aacp.NewMux()
	m.HandleFunc("worker", func(_ context.Context, env *aacp.Envelope) (any, error) {
		log.add(env.RequestID, node)
		time.Sleep(d)
		return node, nil
	})
	return m
}

func leaseOptions(id string) *aacp.Options {
	return &aacp.Options{ID: id, PollInterval: 5 * time.Millisecond, RetransmitTimeout: 20 * time.Millisecond,
		LeaseTTL: 800 * time.Millisecond, LeaseRenewInterval: 50 * time.Millisecond, Logger: quiet,
		Retry: &aacp.RetryPolicy{MaxAttempts: 100, BaseDelay: 10 * time.Millisecond, MaxDelay: 50 * time.Millisecond}}
}

// Two Nodes on one ledger host the same agent: the first to start owns it
// and runs every request, whichever node it was sent through, exactly
// once; the other waits. When the owner stops cleanly it releases the
// lease and the other takes over at once (well before the lease's TTL),
// and runs what is sent next, exactly once too.
func testTwoNodesOneAgent(t *testing.T, open func(t *testing.T) aacp.Store) {
	var log runLog
	a := aacp.New(open(t), slowWorker(&log, "a", 40*time.Millisecond), leaseOptions("node-a"))
	require.NoError(t, a.Start(bg))
	defer a.Close(bg)
	b := aacp.New(open(t), slowWorker(&log, "b", 40*time.Millisecond), leaseOptions("node-b"))
	require.NoError(t, b.Start(bg))
	defer b.Close(bg)
	require.True(t, a.Owns("worker"))
	require.False(t, b.Owns("worker"))

	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	send := func(n *aacp.Node, source string, count int) []string {
		ids := make([]string, count)
		for i := range ids {
			id, err := n.Submit(ctx, source, "worker", i)
			require.NoError(t, err)
			ids[i] = id
		}
		return ids
	}
	await := func(n *aacp.Node, ids []string, want string) {
		for _, id := range ids {
			res, err := n.Await(ctx, id)
			require.NoError(t, err)
			require.Equal(t, aacp.OutcomeCompleted, res.Outcome)
			assert.JSONEq(t, strconv.Quote(want), string(res.Result))
			assert.Equal(t, []string{want}, log.get(id), "request %s: nodes that ran it", id)
		}
	}
	var viaA, viaB []string
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); viaA = send(a, "client-a", 10) }()
	go func() { defer wg.Done(); viaB = send(b, "client-b", 10) }()
	wg.Wait()
	await(a, viaA, "a")
	await(b, viaB, "a")
	assert.False(t, b.Owns("worker"), "b waited all along")

	start := time.Now()
	require.NoError(t, a.Close(ctx))
	require.Eventually(t, func() bool { return b.Owns("worker") }, 5*time.Second, time.Millisecond)
	assert.Less(t, time.Since(start), leaseOptions("").LeaseTTL, "a released the lease: no wait for its expiry")
	await(b, send(b, "client-b", 5), "b")
}

func TestTwoNodesOneAgentMemory(t *testing.T) {
	st := aacp.NewMemoryStore()
	testTwoNodesOneAgent(t, func(*testing.T) aacp.Store { return st })
}

func TestTwoNodesOneAgentPostgres(t *testing.T) {
	dsn := pgtest.Schema(t)
	testTwoNodesOneAgent(t, func(t *testing.T) aacp.Store {
		st, err := openStore("postgres:" + dsn) // a handle per node, as two processes would hold
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		return st
	})
}

func TestTwoNodesOneAgentSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	testTwoNodesOneAgent(t, func(t *testing.T) aacp.Store {
		st, err := openStore("sqlite:" + path)
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		return st
	})
}

var bg = context.Background()

const takeoverRequests = 120

// TestTakeoverAfterKillPostgres: a process owning an agent is killed with
// SIGKILL while it works through its requests; another Node hosting the
// same agent, started meanwhile, runs nothing while the owner lives, takes
// the agent over once the lease expires and finishes the work. Every
// request completes; none that the dead owner completed runs again; none
// runs twice on one node.
func TestTakeoverAfterKillPostgres(t *testing.T) {
	runTakeoverAfterKill(t, "postgres:"+pgtest.Schema(t))
}

// TestTakeoverAfterKillSQLite: the same on one SQLite file.
func TestTakeoverAfterKillSQLite(t *testing.T) {
	runTakeoverAfterKill(t, "sqlite:"+filepath.Join(t.TempDir(), "ledger.db"))
}

func runTakeoverAfterKill(t *testing.T, spec string) {
	dir := t.TempDir()
	st, err := openStore(spec) // also migrates, before the child starts
	require.NoError(t, err)
	defer st.Close()

	child := helper(t, "lease-owner", envStore+"="+spec, envDir+"="+dir, envCount+"="+strconv.Itoa(takeoverRequests))
	stdout, err := child.StdoutPipe()
	require.NoError(t, err)
	_, err = child.StdinPipe() // never closed: the child serves until killed
	require.NoError(t, err)
	require.NoError(t, child.Start())
	killed := false
	defer func() {
		if !killed {
			child.Process.Kill() //nolint:errcheck // the test failed
			child.Wait()         //nolint:errcheck
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	ids, err := readLines(filepath.Join(dir, "ids.log"))
	require.NoError(t, err)
	require.Len(t, ids, takeoverRequests)

	// Once the owner completed a third of its requests, a second node
	// hosting the agent starts: it waits.
	doneLog := filepath.Join(dir, "done-a.log")
	deadline := time.Now().Add(20 * time.Second)
	for {
		done, err := readLines(doneLog)
		require.NoError(t, err)
		if len(done) >= takeoverRequests/3 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the owner made no progress (%d completed)", len(done))
		time.Sleep(2 * time.Millisecond)
	}
	var log runLog
	b := aacp.New(st, slowWorker(&log, "b", 5*time.Millisecond), leaseOptions("node-b"))
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	require.NoError(t, b.Start(ctx))
	defer b.Close(bg)
	time.Sleep(50 * time.Millisecond)
	assert.False(t, b.Owns("worker"), "the child owns the agent")
	log.mu.Lock()
	assert.Empty(t, log.runs, "b ran requests while their agent's owner was alive")
	log.mu.Unlock()

	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()
	killed = true
	killedAt := time.Now()
	completedByA, err := readLines(doneLog)
	require.NoError(t, err)
	runsA, err := readLines(filepath.Join(dir, "exec-a.log"))
	require.NoError(t, err)
	require.Less(t, len(completedByA), takeoverRequests, "killed mid-stream")

	for _, id := range ids {
		res, err := b.Await(ctx, id)
		require.NoError(t, err, "request %s", id)
		require.Equal(t, aacp.OutcomeCompleted, res.Outcome, "request %s", id)
	}
	assert.True(t, b.Owns("worker"), "b took the agent over")
	t.Logf("killed after %d completions (%d executions); b took over and finished in %v",
		len(completedByA), len(runsA), time.Since(killedAt).Round(time.Millisecond))

	byA := count(runsA)
	doneA := map[string]bool{}
	for _, id := range completedByA {
		doneA[id] = true
	}
	ranOnB := 0
	for _, id := range ids {
		onB := len(log.get(id))
		ranOnB += onB
		assert.LessOrEqual(t, byA[id], 1, "request %s ran twice on the killed owner", id)
		assert.LessOrEqual(t, onB, 1, "request %s ran twice on b", id)
		assert.GreaterOrEqual(t, byA[id]+onB, 1, "request %s never ran", id)
		if doneA[id] {
			assert.Zero(t, onB, "request %s was completed by the killed owner and ran again", id)
		}
	}
	assert.Positive(t, ranOnB, "b finished the work")
	pending, err := st.ListPendingRequests(bg, time.Time{})
	require.NoError(t, err)
	assert.Empty(t, pending)
}

// leaseOwnerChild is the child of runTakeoverAfterKill: it owns "worker"
// and submits requests to it, which its handler runs a few at a time,
// logging each execution before it and each durable completion after it,
// until the process is killed.
func leaseOwnerChild() error {
	dir := os.Getenv(envDir)
	total, err := strconv.Atoi(os.Getenv(envCount))
	if err != nil {
		return err
	}
	st, err := openStore(os.Getenv(envStore))
	if err != nil {
		return err
	}
	defer st.Close()
	open := func(name string) (*os.File, error) {
		return os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	}
	execLog, err := open("exec-a.log")
	if err != nil {
		return err
	}
	doneLog, err := open("done-a.log")
	if err != nil {
		return err
	}
	idLog, err := open("ids.log")
	if err != nil {
		return err
	}
	m := aacp.NewMux()
	m.HandleFunc("worker", func(_ context.Context, env *aacp.Envelope) (any, error) {
		if err := appendLine(execLog, "%s", env.RequestID); err != nil {
			return nil, err
		}
		time.Sleep(40 * time.Millisecond) // slow: a loaded machine still kills it mid-stream
		return "a", nil
	})
	opts := leaseOptions("node-a")
	opts.MaxBackground = 2 // slow enough to be killed mid-stream
	opts.OnMessageCompleted = func(env *aacp.Envelope, res *aacp.Resolution) {
		_ = appendLine(doneLog, "%s", res.RequestID) // durable already
	}
	node := aacp.New(st, m, opts)
	ctx := context.Background()
	if err := node.Start(ctx); err != nil {
		return err
	}
	if !node.Owns("worker") {
		return fmt.Errorf("the child does not own the agent")
	}
	for i := 0; i < total; i++ {
		id, err := node.Submit(ctx, "client", "worker", i)
		if err != nil {
			return err
		}
		if err := appendLine(idLog, "%s", id); err != nil {
			return err
		}
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin) //nolint:errcheck // the parent kills the child first
	return node.Close(ctx)
}
