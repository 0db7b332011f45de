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
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/internal/pgtest"
)

const peerRequests = 40

// TestTwoProcessesPostgres: two processes, each hosting one agent, exchange
// requests and responses through one PostgreSQL ledger (skipped unless
// KEEL_TEST_POSTGRES_DSN is set).
func TestTwoProcessesPostgres(t *testing.T) {
	runTwoProcesses(t, "postgres:"+pgtest.Schema(t))
}

// TestTwoProcessesSQLite: the same through one SQLite file, which two
// processes on one machine can share too.
func TestTwoProcessesSQLite(t *testing.T) {
	runTwoProcesses(t, "sqlite:"+filepath.Join(t.TempDir(), "ledger.db"))
}

type peerResult struct {
	By string `json:"by"`
	N  int    `json:"n"`
}

// peerMux hosts agent, which answers {"by": agent, "n": payload}.
func peerMux(agent string) *aacp.Mux {
	m := aacp.NewMux()
	m.HandleFunc(agent, func(_ context.Context, env *aacp.Envelope) (any, error) {
		var n int
		if err := env.Decode(&n); err != nil {
			return nil, err
		}
		return peerResult{By: agent, N: n}, nil
	})
	return m
}

// exchange sends peerRequests requests from → to concurrently and checks
// every answer.
func exchange(ctx context.Context, node *aacp.Node, from, to string) error {
	var wg sync.WaitGroup
	errs := make(chan error, peerRequests)
	for i := 0; i < peerRequests; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			res, err := node.SendRequest(ctx, from, to, i)
			if err != nil {
				errs <- fmt.Errorf("request %d %s→%s: %w", i, from, to, err)
				return
			}
			var r peerResult
			if err := json.Unmarshal(res, &r); err != nil || r != (peerResult{By: to, N: i}) {
				errs <- fmt.Errorf("request %d %s→%s: answer %s", i, from, to, res)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func peerOptions(id string) *aacp.Options {
	// The peer's agent may not have been hosted yet when the first
	// requests leave: they wait in the ledger for it.
	return &aacp.Options{ID: id, PollInterval: 5 * time.Millisecond, RetransmitTimeout: 500 * time.Millisecond, Logger: quiet,
		AllowUnknownTargets: true}
}

func runTwoProcesses(t *testing.T, spec string) {
	st, err := openStore(spec) // also migrates, before the child starts
	require.NoError(t, err)
	defer st.Close()
	node := aacp.New(st, peerMux("alpha"), peerOptions("node-alpha"))
	ctx, cancel := timeout(60 * time.Second)
	defer cancel()
	require.NoError(t, node.Start(ctx))

	child := helper(t, "peer", envStore+"="+spec, envCount+"="+strconv.Itoa(peerRequests))
	stdin, err := child.StdinPipe()
	require.NoError(t, err)
	stdout, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	defer child.Process.Kill() //nolint:errcheck // in case of failure

	// Both directions at once: alpha → beta from here, beta → alpha in the
	// child.
	require.NoError(t, exchange(ctx, node, "alpha", "beta"))
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("exchanged %d\n", peerRequests), line)
	require.NoError(t, stdin.Close()) // the child may stop
	require.NoError(t, child.Wait())
	require.NoError(t, node.Close(ctx))

	// The ledger: every request COMPLETED, seqs 1..2n on each pair (n
	// requests and n responses each way), everything acknowledged.
	pending, err := st.ListPendingRequests(ctx, time.Time{})
	require.NoError(t, err)
	assert.Empty(t, pending)
	for _, p := range [][2]string{{"alpha", "beta"}, {"beta", "alpha"}} {
		last, err := st.GetLastSequence(ctx, p[0], p[1])
		require.NoError(t, err)
		assert.Equal(t, uint64(2*peerRequests), last, "%v", p)
		ack, err := st.GetAck(ctx, p[0], p[1])
		require.NoError(t, err)
		assert.Equal(t, uint64(2*peerRequests), ack, "%v", p)
		un, err := st.GetUnacknowledgedMessages(ctx, p[0], p[1])
		require.NoError(t, err)
		assert.Empty(t, un)
	}
}

// peerChild is the child of runTwoProcesses: it hosts beta, sends its
// requests to alpha, reports, and serves until its stdin closes.
func peerChild() error {
	st, err := openStore(os.Getenv(envStore))
	if err != nil {
		return err
	}
	defer st.Close()
	node := aacp.New(st, peerMux("beta"), peerOptions("node-beta"))
	ctx, cancel := timeout(60 * time.Second)
	defer cancel()
	if err := node.Start(ctx); err != nil {
		return err
	}
	if err := exchange(ctx, node, "beta", "alpha"); err != nil {
		return err
	}
	fmt.Printf("exchanged %d\n", peerRequests)
	io.Copy(io.Discard, os.Stdin) //nolint:errcheck // EOF is the signal
	return node.Close(ctx)
}
