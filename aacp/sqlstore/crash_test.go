package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/aacp/sqlstore"
)

const crashRequests = 150

// TestCrashRecoverySQLite kills a process holding a SQLite ledger with
// SIGKILL in the middle of a stream of requests and restarts it on the same
// file. The caller writes each request's id down before sending it (an
// intent) and, after the restart, sends every intent again with the same
// id, then the rest of the stream. Checked: no request is lost (every intent gets its result), none that
// the ledger recorded COMPLETED runs again, and every request ran at least
// once and at most once per process lifetime.
func TestCrashRecoverySQLite(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "ledger.db")
	env := []string{envStore + "=sqlite:" + db, envDir + "=" + dir, envCount + "=" + strconv.Itoa(crashRequests)}

	run := helper(t, "crash-run", env...)
	require.NoError(t, run.Start())
	execLog := filepath.Join(dir, "exec.log")
	deadline := time.Now().Add(30 * time.Second)
	for {
		lines, err := readLines(execLog)
		require.NoError(t, err)
		if len(lines) >= crashRequests/3 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the child made no progress (%d executions)", len(lines))
		time.Sleep(2 * time.Millisecond)
	}
	require.NoError(t, run.Process.Signal(syscall.SIGKILL))
	_ = run.Wait() // killed

	execBefore, err := readLines(execLog)
	require.NoError(t, err)
	intents, err := readLines(filepath.Join(dir, "intents.log"))
	require.NoError(t, err)
	resultsBefore, err := readLines(filepath.Join(dir, "results-run.log"))
	require.NoError(t, err)
	require.Less(t, len(resultsBefore), crashRequests, "killed mid-stream")

	// The ledger as the crash left it.
	st, err := sqlstore.OpenSQLite(db)
	require.NoError(t, err)
	completedAtCrash := map[string]bool{}
	recorded := 0
	for _, line := range intents {
		_, id := parseIntent(t, line)
		rec, err := st.GetRequestRecord(context.Background(), id)
		if err == nil {
			recorded++
			if rec.Status == aacp.OutcomeCompleted {
				completedAtCrash[id] = true
			}
		}
	}
	require.NoError(t, st.Close())
	t.Logf("at the crash: %d intents, %d in the ledger, %d completed, %d executions, %d results delivered",
		len(intents), recorded, len(completedAtCrash), len(execBefore), len(resultsBefore))
	require.NotEmpty(t, completedAtCrash)

	restart := helper(t, "crash-restart", env...)
	require.NoError(t, restart.Run())

	execAll, err := readLines(execLog)
	require.NoError(t, err)
	execAfter := execAll[len(execBefore):]
	intents, err = readLines(filepath.Join(dir, "intents.log"))
	require.NoError(t, err)
	require.Len(t, intents, crashRequests, "the restart finished the stream")
	results, err := readLines(filepath.Join(dir, "results-restart.log"))
	require.NoError(t, err)

	// Every intent has its result.
	got := map[string]string{}
	for _, line := range results {
		f := strings.SplitN(line, " ", 3)
		require.Len(t, f, 3, line)
		got[f[1]] = f[0] + " " + f[2]
	}
	for _, line := range intents {
		i, id := parseIntent(t, line)
		assert.Equal(t, fmt.Sprintf(`%d {"double":%d}`, i, 2*i), got[id], "request %d", i)
	}
	assert.Len(t, got, len(intents))

	// Executions: none for what was COMPLETED at the crash, at least one
	// per request, at most one per process lifetime.
	before, after := count(execBefore), count(execAfter)
	for _, line := range intents {
		_, id := parseIntent(t, line)
		if completedAtCrash[id] {
			assert.Zero(t, after[id], "request %s was COMPLETED at the crash and ran again", id)
		}
		assert.GreaterOrEqual(t, before[id]+after[id], 1, "request %s never ran", id)
		assert.LessOrEqual(t, before[id], 1)
		assert.LessOrEqual(t, after[id], 1)
	}
	t.Logf("after the restart: %d executions (re-runs of requests interrupted by the crash and the requests not sent before it)", len(execAfter))

	st, err = sqlstore.OpenSQLite(db)
	require.NoError(t, err)
	defer st.Close()
	pending, err := st.ListPendingRequests(context.Background(), time.Time{})
	require.NoError(t, err)
	assert.Empty(t, pending)
}

func parseIntent(t *testing.T, line string) (int, string) {
	t.Helper()
	f := strings.Fields(line)
	require.Len(t, f, 2, line)
	i, err := strconv.Atoi(f[0])
	require.NoError(t, err)
	return i, f[1]
}

func count(lines []string) map[string]int {
	m := map[string]int{}
	for _, l := range lines {
		m[l]++
	}
	return m
}

// crashChild is the process of TestCrashRecoverySQLite. The first run sends
// crashRequests requests from 4 goroutines, writing each one's id down
// before sending it; the restart sends every intent again with its id.
func crashChild(restart bool) error {
	dir := os.Getenv(envDir)
	n, err := strconv.Atoi(os.Getenv(envCount))
	if err != nil {
		return err
	}
	st, err := openStore(os.Getenv(envStore))
	if err != nil {
		return err
	}
	defer st.Close()
	openAppend := func(name string) (*os.File, error) {
		return os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	}
	execLog, err := openAppend("exec.log")
	if err != nil {
		return err
	}
	intents, err := openAppend("intents.log")
	if err != nil {
		return err
	}
	phase := "run"
	if restart {
		phase = "restart"
	}
	results, err := openAppend("results-" + phase + ".log")
	if err != nil {
		return err
	}

	mux := aacp.NewMux()
	mux.HandleFunc("worker", func(ctx context.Context, env *aacp.Envelope) (any, error) {
		if err := appendLine(execLog, "%s", env.RequestID); err != nil {
			return nil, err
		}
		time.Sleep(time.Millisecond)
		var i int
		if err := env.Decode(&i); err != nil {
			return nil, err
		}
		return map[string]int{"double": 2 * i}, nil
	})
	// The restart waits for the killed process's lease to expire (LeaseTTL).
	node := aacp.New(st, mux, &aacp.Options{ID: "crash-node", PollInterval: 5 * time.Millisecond, LeaseTTL: time.Second,
		RetransmitTimeout: 100 * time.Millisecond, Logger: quiet})
	ctx, cancel := timeout(60 * time.Second)
	defer cancel()
	if err := node.Start(ctx); err != nil { // recovery on the restart
		return err
	}
	defer node.Close(context.Background())

	type job struct {
		i  int
		id string
	}
	var jobs []job
	sentBefore := map[string]bool{}
	if !restart {
		for i := 0; i < n; i++ {
			jobs = append(jobs, job{i, uuid.NewString()})
		}
	} else {
		lines, err := readLines(filepath.Join(dir, "intents.log"))
		if err != nil {
			return err
		}
		sent := map[int]bool{}
		for _, line := range lines {
			var j job
			if _, err := fmt.Sscan(line, &j.i, &j.id); err != nil {
				return err
			}
			jobs = append(jobs, j)
			sent[j.i] = true
			sentBefore[j.id] = true
		}
		// Then the rest of the stream, as new requests.
		for i := 0; i < n; i++ {
			if !sent[i] {
				jobs = append(jobs, job{i, uuid.NewString()})
			}
		}
	}
	work := make(chan job)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				if !sentBefore[j.id] {
					if err := appendLine(intents, "%d %s", j.i, j.id); err != nil {
						errs <- err
						return
					}
				}
				res, err := node.SendRequest(ctx, "client", "worker", j.i, aacp.WithRequestID(j.id))
				if err != nil {
					errs <- fmt.Errorf("request %d: %w", j.i, err)
					return
				}
				if err := appendLine(results, "%d %s %s", j.i, j.id, res); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for _, j := range jobs {
		select {
		case work <- j:
		case err := <-errs:
			return err
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	return nil
}
