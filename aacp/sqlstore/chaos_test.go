package sqlstore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/aacp/sqlstore"
	"github.com/keelmcp/keel/agents"
	"github.com/keelmcp/keel/internal/pgtest"
)

// envChaosLong selects the long variant of TestChaos (the sizes of the
// original reports: bursts of 20,000, 3,000 requests at a kill -9).
const envChaosLong = "AACP_CHAOS_LONG"

// chaosSize returns long under AACP_CHAOS_LONG=1, short otherwise.
func chaosSize(short, long int) int {
	if os.Getenv(envChaosLong) == "1" {
		return long
	}
	return short
}

// TestChaos checks, on every store, that every message ends completed
// exactly once or failed with a recorded reason, across bursts beyond the
// receiver's capacity, duplicate sends of one id at once on the hosting
// Node, a kill -9 of the owner mid-backlog with two Node processes (SQLite
// and PostgreSQL), a stale owner whose clock is more than a lease behind,
// and oversized and corrupted messages. Each scenario logs its counts.
func TestChaos(t *testing.T) {
	stores := []struct {
		name string
		spec func(t *testing.T) string // "" for memory
	}{
		{"memory", func(*testing.T) string { return "" }},
		{"sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "ledger.db") }},
		{"postgres", func(t *testing.T) string { return "postgres:" + pgtest.Schema(t) }},
	}
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			if sc.name == "postgres" {
				pgtest.DSN(t)
			}
			open := func(t *testing.T) (aacp.Store, string) {
				spec := sc.spec(t)
				if spec == "" {
					return aacp.NewMemoryStore(), ""
				}
				st, err := openStore(spec)
				require.NoError(t, err)
				t.Cleanup(func() { st.Close() })
				return st, spec
			}
			burst := chaosSize(2000, 20000)
			if sc.name != "memory" {
				burst = chaosSize(500, 20000)
			}
			t.Run("burst", func(t *testing.T) { st, _ := open(t); chaosBurst(t, st, burst) })
			if sc.name == "memory" {
				t.Run("coordinator-burst", func(t *testing.T) { st, _ := open(t); chaosCoordinatorBurst(t, st, chaosSize(2000, 10000)) })
			}
			t.Run("duplicates", func(t *testing.T) { st, _ := open(t); chaosDuplicates(t, st, 300) })
			t.Run("stale-owner", func(t *testing.T) { st, _ := open(t); chaosStaleOwner(t, st) })
			t.Run("bad-input", func(t *testing.T) { st, _ := open(t); chaosBadInput(t, st) })
			if sc.name != "memory" {
				t.Run("kill-owner", func(t *testing.T) {
					st, spec := open(t)
					chaosKillOwner(t, st, spec, chaosSize(300, 3000))
				})
			}
		})
	}
}

// runs counts handler executions per request id, and those that started
// while the ledger recorded the request final already.
type runs struct {
	mu         sync.Mutex
	n          map[string]int
	afterFinal map[string]bool
}

// record counts one execution of env's request, reading the ledger first.
func (r *runs) record(st aacp.Store, env *aacp.Envelope) {
	rec, err := st.GetRequestRecord(context.Background(), env.RequestID)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n, r.afterFinal = map[string]int{}, map[string]bool{}
	}
	r.n[env.RequestID]++
	if err == nil && rec.Status.Final() {
		r.afterFinal[env.RequestID] = true
	}
}

func (r *runs) get(id string) (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[id], r.afterFinal[id]
}

// tally is the outcome of a scenario.
type tally struct {
	sent, completedOnce, failedWithReason, runTwice, lost int
}

// settle waits up to wait for ids to be final in the ledger and counts
// them: runTwice when a request ran after it was recorded final, or more
// than maxRuns(id) times.
func (c *tally) settle(t *testing.T, st aacp.Store, ids []string, r *runs, maxRuns func(string) int, wait time.Duration) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for _, id := range ids {
		c.sent++
		var rec *aacp.RequestRecord
		for {
			got, err := st.GetRequestRecord(context.Background(), id)
			if err == nil && got.Status.Final() || time.Now().After(deadline) {
				rec = got
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		n, afterFinal := r.get(id)
		switch {
		case afterFinal || n > maxRuns(id):
			c.runTwice++
		case rec == nil || !rec.Status.Final():
			c.lost++
		case rec.Status == aacp.OutcomeCompleted && n >= 1:
			c.completedOnce++
		case rec.Status == aacp.OutcomeFailed && rec.Error != nil && rec.Error.Message != "":
			c.failedWithReason++
		default:
			c.lost++ // completed without running, or failed without a reason
		}
	}
}

func once(string) int { return 1 }

func (c *tally) report(t *testing.T, scenario string) {
	t.Helper()
	t.Logf("%s: sent %d, completed once %d, failed with reason %d, run twice %d, lost %d",
		scenario, c.sent, c.completedOnce, c.failedWithReason, c.runTwice, c.lost)
	assert.Zero(t, c.runTwice, "%s: run twice", scenario)
	assert.Zero(t, c.lost, "%s: lost", scenario)
	assert.Equal(t, c.sent, c.completedOnce+c.failedWithReason, scenario)
}

// chaosBurst sends n events at once, from 16 senders, to a receiver on
// default options (64 background slots).
func chaosBurst(t *testing.T, st aacp.Store, n int) {
	var r runs
	mux := aacp.NewMux()
	mux.HandleFunc("sink", func(_ context.Context, env *aacp.Envelope) (any, error) {
		r.record(st, env)
		return nil, nil
	})
	node := aacp.New(st, mux, &aacp.Options{Logger: quiet})
	ctx := context.Background()
	require.NoError(t, node.Start(ctx))
	defer node.Close(ctx)
	ids := sendAll(t, n, func(i int, id string) error {
		_, err := node.SendReliable(ctx, "burster", "sink", i, aacp.WithRequestID(id))
		return err
	})
	var c tally
	c.settle(t, st, ids, &r, once, 120*time.Second)
	c.report(t, "burst")
}

// sendAll sends n messages from 16 goroutines and returns their request
// ids.
func sendAll(t *testing.T, n int, send func(i int, id string) error) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				assert.NoError(t, send(i, ids[i]))
			}
		}(w)
	}
	wg.Wait()
	return ids
}

// chaosCoordinatorBurst sends n events at once to an agent of an
// agents.Coordinator, whose queue and background slots are smaller than
// the burst.
func chaosCoordinatorBurst(t *testing.T, st aacp.Store, n int) {
	var r runs
	c := aacp.NewCoordinator(agents.NewCoordinator(&agents.Options{Logger: quiet, QueueSize: 16}), st, &aacp.Options{Logger: quiet})
	require.NoError(t, c.Register("sink", func(_ context.Context, msg agents.Message, _ *agents.AgentContext) (any, error) {
		r.record(st, &aacp.Envelope{RequestID: msg.Meta[aacp.MetaRequestID]})
		return nil, nil
	}, nil))
	ctx := context.Background()
	require.NoError(t, c.Start(ctx))
	defer c.Shutdown(ctx, agents.ShutdownReject)
	defer c.Close(ctx)
	ids := sendAll(t, n, func(i int, id string) error {
		_, err := c.SendReliable(ctx, "sink", i, aacp.WithRequestID(id))
		return err
	})
	var tl tally
	tl.settle(t, st, ids, &r, once, 120*time.Second)
	tl.report(t, "coordinator burst")
}

// chaosDuplicates sends every request id twice at once on the node that
// hosts the target, then once more after it completed.
func chaosDuplicates(t *testing.T, st aacp.Store, n int) {
	var r runs
	mux := aacp.NewMux()
	mux.HandleFunc("worker", func(_ context.Context, env *aacp.Envelope) (any, error) {
		r.record(st, env)
		return "ok", nil
	})
	node := aacp.New(st, mux, &aacp.Options{Logger: quiet})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, node.Start(ctx))
	defer node.Close(ctx)
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range ids {
		ids[i] = uuid.NewString()
		for k := 0; k < 2; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := node.SendRequest(ctx, "client", "worker", i, aacp.WithRequestID(ids[i]))
				if assert.NoError(t, err) {
					assert.JSONEq(t, `"ok"`, string(res))
				}
			}()
		}
	}
	wg.Wait()
	for _, id := range ids[:min(n, 20)] {
		_, err := node.SendRequest(ctx, "client", "worker", 0, aacp.WithRequestID(id))
		require.NoError(t, err)
	}
	var c tally
	c.settle(t, st, ids, &r, once, 30*time.Second)
	c.report(t, "duplicates")
}

// offsetClock is a clock behind the system clock by d.
type offsetClock struct{ d time.Duration }

func (c offsetClock) Now() time.Time { return time.Now().Add(-c.d) }

// chaosStaleOwner runs two Nodes hosting one agent, the first with a clock
// more than a lease behind: its lease is expired for the second as soon as
// it is written, so the second takes the agent over while the first still
// believes it owns it. Both send requests to the agent meanwhile. The
// stale node commits nothing; every request completes once.
func chaosStaleOwner(t *testing.T, st aacp.Store) {
	const ttl = 500 * time.Millisecond
	var r runs
	var staleCommits, staleRuns sync.Map
	mk := func(id string, clock aacp.Clock, onDone func(*aacp.Envelope)) *aacp.Node {
		mux := aacp.NewMux()
		mux.HandleFunc("worker", func(_ context.Context, env *aacp.Envelope) (any, error) {
			if id == "stale" {
				staleRuns.Store(env.RequestID, true)
			}
			r.record(st, env)
			return "ok", nil
		})
		return aacp.New(st, mux, &aacp.Options{ID: id, Clock: clock, LeaseTTL: ttl, LeaseRenewInterval: ttl / 2,
			PollInterval: 5 * time.Millisecond, RetransmitTimeout: 100 * time.Millisecond, Logger: quiet,
			OnMessageCompleted: func(env *aacp.Envelope, _ *aacp.Resolution) { onDone(env) }})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stale := mk("stale", offsetClock{3 * ttl}, func(env *aacp.Envelope) { staleCommits.Store(env.RequestID, true) })
	require.NoError(t, stale.Start(ctx))
	defer stale.Close(ctx)
	require.True(t, stale.Owns("worker"))
	fresh := mk("fresh", aacp.SystemClock, func(*aacp.Envelope) {})
	require.NoError(t, fresh.Start(ctx))
	defer fresh.Close(ctx)
	require.True(t, fresh.Owns("worker"), "the stale node's lease is expired by the fresh clock")

	// While the stale node still believes it owns the agent (until its
	// renewal is refused), both send.
	var ids []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for k, node := range []*aacp.Node{stale, fresh} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				id := uuid.NewString()
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
				_, err := node.Submit(ctx, fmt.Sprintf("client%d", k), "worker", i, aacp.WithRequestID(id))
				assert.NoError(t, err)
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	var c tally
	// A request the stale node ran (its result refused) runs again on the
	// owner: at least once, never after it was recorded final.
	c.settle(t, st, ids, &r, func(id string) int {
		if _, ok := staleRuns.Load(id); ok {
			return 2
		}
		return 1
	}, 30*time.Second)
	commits, ranStale := 0, 0
	staleCommits.Range(func(any, any) bool { commits++; return true })
	staleRuns.Range(func(any, any) bool { ranStale++; return true })
	t.Logf("stale owner: %d handler runs on the stale node (results refused), %d commits by it", ranStale, commits)
	assert.Zero(t, commits, "a node whose lease was taken over commits nothing")
	assert.False(t, stale.Owns("worker"))
	c.report(t, "stale owner")
}

// chaosBadInput sends oversized payloads (refused at once), a request
// whose result is too large (fails with its reason), and on SQL stores
// corrupts stored messages (quarantined; their requests still run from the
// ledger record) and pending request rows (failed with the reason, by the
// recovery of a restarted node), then checks that everything else goes
// through and that the restarted node starts.
func chaosBadInput(t *testing.T, st aacp.Store) {
	var r runs
	mux := aacp.NewMux()
	mux.HandleFunc("worker", func(_ context.Context, env *aacp.Envelope) (any, error) {
		r.record(st, env)
		if string(env.Payload) == `"huge"` {
			return jsontext.Value(`"` + strings.Repeat("x", aacp.MaxPayloadBytes) + `"`), nil
		}
		return "ok", nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts := &aacp.Options{ID: "receiver", PollInterval: -1, Logger: quiet}
	recv := aacp.New(st, mux, opts)
	require.NoError(t, recv.Start(ctx))
	sender := aacp.New(st, aacp.NewMux(), &aacp.Options{ID: "sender", PollInterval: -1, Logger: quiet})
	require.NoError(t, sender.Start(ctx))
	defer sender.Close(ctx)

	// Oversized: refused at send, on the hosting node and elsewhere.
	big := jsontext.Value(`"` + strings.Repeat("y", aacp.MaxPayloadBytes) + `"`)
	refused := 0
	for _, n := range []*aacp.Node{recv, sender} {
		_, err := n.Submit(ctx, "client", "worker", big)
		require.ErrorIs(t, err, aacp.ErrPayloadTooLarge)
		refused++
	}
	_, err := sender.Submit(ctx, "client", "nobody", 1)
	require.ErrorIs(t, err, aacp.ErrUnknownAgent)

	var ids []string
	for i := 0; i < 20; i++ {
		p := any(i)
		if i == 0 {
			p = "huge"
		}
		id, err := sender.Submit(ctx, "client", "worker", p)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	corrupted := 0
	var badRows []string
	if s, ok := st.(*sqlstore.Store); ok {
		for _, id := range ids[1:3] {
			q := `UPDATE aacp_messages SET envelope = '{"corrupt' WHERE request_id = ?`
			if s.Dialect() == "postgres" {
				q = strings.Replace(q, "?", "$1", 1)
			}
			_, err := s.DB().ExecContext(ctx, q, id)
			require.NoError(t, err)
			corrupted++
		}
	}
	for i := 0; i < 50; i++ {
		_, err := recv.Poll(ctx)
		require.NoError(t, err, "a bad row never fails a poll")
		if pending, _ := st.ListPendingRequests(ctx, time.Time{}); len(pending) == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	dead, err := recv.DeadLetters(ctx, 0)
	require.NoError(t, err)
	assert.Len(t, dead, corrupted)
	for _, d := range dead {
		assert.Contains(t, d.Reason, "invalid envelope")
		require.NoError(t, recv.DropDeadLetter(ctx, d.MessageID))
	}
	require.NoError(t, recv.Close(ctx))
	// A pending request whose row cannot be decoded neither stops a
	// restarted node's recovery nor stays pending: it fails with the
	// reason.
	if s, ok := st.(*sqlstore.Store); ok {
		for i := 0; i < 2; i++ {
			id, err := sender.Submit(ctx, "client", "worker", 100+i)
			require.NoError(t, err)
			q := `UPDATE aacp_requests SET error = '{"corrupt' WHERE request_id = ?`
			if s.Dialect() == "postgres" {
				q = strings.Replace(q, "?", "$1", 1)
			}
			_, err = s.DB().ExecContext(ctx, q, id)
			require.NoError(t, err)
			badRows = append(badRows, id)
		}
	}
	// A restarted node starts on the same ledger.
	again := aacp.New(st, mux, &aacp.Options{ID: "receiver-2", PollInterval: -1, Logger: quiet})
	require.NoError(t, again.Start(ctx))
	defer again.Close(ctx)
	res, err := again.SendRequest(ctx, "client", "worker", 99)
	require.NoError(t, err)
	assert.JSONEq(t, `"ok"`, string(res))

	var c tally
	c.settle(t, st, append(ids, badRows...), &r, once, 10*time.Second)
	for _, id := range badRows {
		rec, err := st.GetRequestRecord(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, aacp.OutcomeFailed, rec.Status)
		assert.Equal(t, aacp.CompletionProtocolError, rec.Completion)
		assert.Contains(t, rec.Error.Message, "cannot be decoded")
	}
	huge, err := st.GetRequestRecord(ctx, ids[0])
	require.NoError(t, err)
	assert.Equal(t, aacp.OutcomeFailed, huge.Status)
	assert.Contains(t, huge.Error.Message, "larger than")
	t.Logf("bad input: %d oversized sends refused at once with ErrPayloadTooLarge, %d corrupted messages quarantined, %d corrupted request rows failed with their reason",
		refused, corrupted, len(badRows))
	c.report(t, "bad input")
}

// chaosKillOwner: a child process owns the agent and works through a
// backlog of n requests sent by this process, which hosts the agent too
// (a standby); the child is killed with SIGKILL a third of the way, and
// this process takes the agent over and runs the rest.
func chaosKillOwner(t *testing.T, st aacp.Store, spec string, n int) {
	dir := t.TempDir()
	execLog := filepath.Join(dir, "exec.log")
	child := helper(t, "chaos-owner", envStore+"="+spec, envDir+"="+dir)
	stdout, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	defer child.Process.Kill() //nolint:errcheck // in case of failure
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)

	f, err := os.OpenFile(execLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	require.NoError(t, err)
	defer f.Close()
	node := aacp.New(st, chaosWorker(st, f, "b", func() {}), chaosOwnerOptions("standby"))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	require.NoError(t, node.Start(ctx))
	defer node.Close(ctx)
	require.False(t, node.Owns("worker"))
	// The whole backlog is in the ledger before the owner runs anything
	// (its handlers wait for the gate file).
	ids := sendAll(t, n, func(i int, id string) error {
		_, err := node.Submit(ctx, "client", "worker", i, aacp.WithRequestID(id))
		return err
	})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644))
	for {
		lines, err := readLines(execLog)
		require.NoError(t, err)
		if len(lines) >= n/3 {
			break
		}
		require.NoError(t, ctx.Err(), "the owner made no progress")
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()

	var c tally
	var r runs // filled from the log after the backlog settled
	deadline := time.Now().Add(90 * time.Second)
	for _, id := range ids {
		for time.Now().Before(deadline) {
			if rec, err := st.GetRequestRecord(ctx, id); err == nil && rec.Status.Final() {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	lines, err := readLines(execLog)
	require.NoError(t, err)
	perNode := map[string]int{}
	reruns := 0
	for _, l := range lines {
		var who, id, final string
		_, err := fmt.Sscan(l, &who, &id, &final)
		require.NoError(t, err, l)
		perNode[who+" "+id]++
		if who == "b" && perNode["a "+id] > 0 && perNode["b "+id] == 1 {
			reruns++ // interrupted by the kill, run again by the new owner
		}
		r.mu.Lock()
		if r.n == nil {
			r.n, r.afterFinal = map[string]int{}, map[string]bool{}
		}
		r.n[id]++
		if final == "final" {
			r.afterFinal[id] = true
		}
		r.mu.Unlock()
	}
	c.settle(t, st, ids, &r, func(id string) int {
		if perNode["a "+id] > 1 || perNode["b "+id] > 1 {
			return 0 // twice on one node: counted as run twice
		}
		return 2
	}, time.Second)
	t.Logf("kill -9 of the owner: %d requests in the backlog, %d executions, %d by the killed owner, %d re-runs of requests it was running (not final yet)",
		n, len(lines), countPrefix(lines, "a "), reruns)
	c.report(t, "kill -9 of the owner")
}

func countPrefix(lines []string, p string) int {
	k := 0
	for _, l := range lines {
		if strings.HasPrefix(l, p) {
			k++
		}
	}
	return k
}

// chaosWorker hosts "worker", which reads the ledger's state of the request
// it is offered, waits for gate, appends "<who> <requestId> final|pending"
// to f and takes a millisecond.
func chaosWorker(st aacp.Store, f *os.File, who string, gate func()) *aacp.Mux {
	mux := aacp.NewMux()
	mux.HandleFunc("worker", func(ctx context.Context, env *aacp.Envelope) (any, error) {
		state := "pending" // when the handler is offered the request
		if rec, err := st.GetRequestRecord(ctx, env.RequestID); err == nil && rec.Status.Final() {
			state = "final"
		}
		gate()
		if err := appendLine(f, "%s %s %s", who, env.RequestID, state); err != nil {
			return nil, err
		}
		time.Sleep(time.Millisecond)
		return "ok", nil
	})
	return mux
}

func chaosOwnerOptions(id string) *aacp.Options {
	// A lease long enough for a loaded SQLite file to renew it in time.
	return &aacp.Options{ID: id, LeaseTTL: 3 * time.Second, PollInterval: 5 * time.Millisecond,
		RetransmitTimeout: 200 * time.Millisecond, Logger: quiet}
}

// chaosOwnerChild is the owner process of chaosKillOwner: it takes the
// agent's lease, says "ready", and works until it is killed.
func chaosOwnerChild() error {
	st, err := openStore(os.Getenv(envStore))
	if err != nil {
		return err
	}
	dir := os.Getenv(envDir)
	f, err := os.OpenFile(filepath.Join(dir, "exec.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	gate := filepath.Join(dir, "gate")
	node := aacp.New(st, chaosWorker(st, f, "a", func() {
		for {
			if _, err := os.Stat(gate); err == nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}), chaosOwnerOptions("owner"))
	ctx := context.Background()
	if err := node.Start(ctx); err != nil {
		return err
	}
	if !node.Owns("worker") {
		return errors.New("the owner did not get the lease")
	}
	fmt.Println("ready")
	select {} // until SIGKILL
}
