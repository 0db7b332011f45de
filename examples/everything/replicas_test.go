package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/exampletest"
	"github.com/keelmcp/keel/internal/pgtest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// The replica test starts three everything replicas sharing PostgreSQL
// behind haproxy (round-robin, 2025 sessions stuck to their replica by
// Mcp-Session-Id) and checks what a deployment on a balancer needs. It
// runs when KEEL_HAPROXY names the haproxy binary (.ci/haproxy.sh prints
// it) and KEEL_TEST_POSTGRES_DSN is set; with KEEL_CONFORMANCE naming the
// conformance suite's run-conformance.sh, the 2026-07-28 suite and the
// 2025 one run through the balancer too.

// replicaLease is the task lease timeout of the replicas.
const replicaLease = 2 * time.Second

// haproxyConfig is the balancer's configuration: round-robin, and a
// 2025 session stuck to the replica that created it (the response header
// Mcp-Session-Id is stored, the request header matched). A replica that
// fails its health check is left out, and a request whose replica is down
// is sent to another (which answers 404 for an unknown session: the
// client starts a new one). X-Replica names the replica that answered.
const haproxyConfig = `global
	maxconn 2000
defaults
	mode http
	timeout connect 2s
	timeout client 5m
	timeout server 5m
	option redispatch
	retries 2
frontend mcp
	bind 127.0.0.1:%d
	default_backend replicas
backend replicas
	balance roundrobin
	stick-table type string len 128 size 100k expire 30m
	stick on req.hdr(mcp-session-id)
	stick store-response res.hdr(mcp-session-id)
	http-response set-header X-Replica %%s
%s`

type replicaSet struct {
	t     *testing.T
	bin   string
	dsn   string
	key   string
	ports []int
	procs []*exec.Cmd
	logs  []*exampletest.SafeBuffer
	lb    string // the balancer's URL
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func waitPort(t *testing.T, port int) {
	t.Helper()
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "port %d", port)
}

// start starts replica i (again, after a kill) on its port.
func (rs *replicaSet) start(i int) {
	t := rs.t
	cmd := exec.Command(rs.bin, "-http", fmt.Sprintf("127.0.0.1:%d", rs.ports[i]), "-postgres", rs.dsn, "-lease", replicaLease.String(), "-v")
	cmd.Env = append(os.Environ(), "KEEL_SERVER_STATE_KEY="+rs.key)
	rs.logs[i] = &exampletest.SafeBuffer{}
	cmd.Stderr = rs.logs[i]
	dieWithTest(cmd)
	require.NoError(t, cmd.Start())
	rs.procs[i] = cmd
	waitPort(t, rs.ports[i])
}

// kill ends replica i with SIGKILL, as a crash would.
func (rs *replicaSet) kill(i int) {
	_ = rs.procs[i].Process.Signal(syscall.SIGKILL)
	_ = rs.procs[i].Wait()
	rs.procs[i] = nil
}

func (rs *replicaSet) url(i int) string { return fmt.Sprintf("http://127.0.0.1:%d/mcp", rs.ports[i]) }

func startReplicas(t *testing.T, haproxy string) *replicaSet {
	dir := t.TempDir()
	bin := filepath.Join(dir, "everything")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	rs := &replicaSet{t: t, bin: bin, dsn: pgtest.Schema(t), key: base64.StdEncoding.EncodeToString(secret),
		procs: make([]*exec.Cmd, 3), logs: make([]*exampletest.SafeBuffer, 3)}
	var servers strings.Builder
	for i := range 3 {
		rs.ports = append(rs.ports, freePort(t))
		fmt.Fprintf(&servers, "\tserver r%d 127.0.0.1:%d check inter 200ms fall 1 rise 1\n", i, rs.ports[i])
	}
	t.Cleanup(func() {
		for i, p := range rs.procs {
			if p != nil {
				_ = p.Process.Signal(syscall.SIGTERM)
				_ = p.Wait()
			}
			if t.Failed() {
				t.Logf("replica %d log:\n%s", i, lastLines(rs.logs[i].String(), 15))
			}
		}
	})
	rs.start(0) // the first migrates the schema; the others find it
	rs.start(1)
	rs.start(2)
	lbPort := freePort(t)
	cfg := filepath.Join(dir, "haproxy.cfg")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, haproxyConfig, lbPort, servers.String()), 0o600))
	lb := exec.Command(haproxy, "-db", "-f", cfg)
	lbLog := &exampletest.SafeBuffer{}
	lb.Stdout, lb.Stderr = lbLog, lbLog
	dieWithTest(lb)
	require.NoError(t, lb.Start())
	t.Cleanup(func() {
		_ = lb.Process.Signal(syscall.SIGTERM)
		_ = lb.Wait()
		if t.Failed() {
			t.Logf("haproxy log:\n%s", lastLines(lbLog.String(), 20))
		}
	})
	waitPort(t, lbPort)
	rs.lb = fmt.Sprintf("http://127.0.0.1:%d/mcp", lbPort)
	return rs
}

func lastLines(s string, n int) string {
	l := strings.Split(s, "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// replicaTracker records which replica answered (X-Replica).
type replicaTracker struct {
	mu   sync.Mutex
	last string
}

func (rt *replicaTracker) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && resp.Header.Get("X-Replica") != "" {
		rt.mu.Lock()
		rt.last = resp.Header.Get("X-Replica")
		rt.mu.Unlock()
	}
	return resp, err
}

func (rt *replicaTracker) replica() string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.last
}

// client connects a keel Client at revision rev to url.
func client(t *testing.T, url, rev string, rt *replicaTracker, notes func(string, json.RawMessage)) *mcp.Client {
	t.Helper()
	hc := &http.Client{}
	if rt != nil {
		hc.Transport = rt
	}
	o := &mcp.ClientOptions{ProtocolVersion: rev, Logger: slog.New(slog.DiscardHandler), OnNotification: notes}
	if rev == mcp.Version20260728 {
		o.Capabilities.Extensions = map[string]any{mcp.ExtensionTasks: map[string]any{}}
	}
	o.OnElicitation = func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"confirm": true}}, nil
	}
	c := mcp.NewClient(o)
	require.NoError(t, c.Connect(context.Background(), streamhttp.NewClientTransport(url, &streamhttp.ClientOptions{HTTPClient: hc})))
	t.Cleanup(func() { c.Close() })
	return c
}

func startedTask(t *testing.T, c *mcp.Client, tool string, args map[string]any) string {
	t.Helper()
	_, err := c.CallTool(context.Background(), tool, args)
	var ts *mcp.TaskStartedError
	require.ErrorAs(t, err, &ts, "tool %s", tool)
	return ts.Task.TaskID
}

func TestReplicasBehindHAProxy(t *testing.T) {
	haproxy := os.Getenv("KEEL_HAPROXY")
	if haproxy == "" {
		t.Skip("set KEEL_HAPROXY to the haproxy binary (haproxy=$(.ci/haproxy.sh)) to run the replica test")
	}
	pgtest.DSN(t)
	rs := startReplicas(t, haproxy)
	ctx := context.Background()
	direct := make([]*mcp.Client, 3)
	for i := range direct {
		direct[i] = client(t, rs.url(i), mcp.Version20260728, nil, nil)
	}

	t.Run("TaskFollowedAnsweredCancelledThroughOthers", func(t *testing.T) {
		id := startedTask(t, direct[0], "confirm_delete", map[string]any{"filename": "a.txt"})
		var task *mcp.DetailedTask
		require.Eventually(t, func() bool {
			var err error
			task, err = direct[1].PollTask(ctx, id)
			return err == nil && task.Status == mcp.TaskStatusInputRequired
		}, 10*time.Second, 20*time.Millisecond, "followed through replica 1")
		require.NoError(t, direct[2].AnswerTask(ctx, task), "answered through replica 2")
		res, err := direct[1].WaitTask(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, "Deleted a.txt (not really)", res.Content[0].Text, "replica 0 ran the handler again with the answer")

		id = startedTask(t, direct[0], "slow_compute", map[string]any{"seconds": 60})
		_, err = direct[1].CancelTask(ctx, id)
		require.NoError(t, err, "cancelled through replica 1")
		task, err = direct[2].PollTask(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, mcp.TaskStatusCancelled, task.Status)
		require.Eventually(t, func() bool {
			return strings.Contains(rs.logs[0].String(), "task ended by another process")
		}, 5*time.Second, 20*time.Millisecond, "the handler on replica 0 was cancelled")

		lb := client(t, rs.lb, mcp.Version20260728, nil, nil)
		id = startedTask(t, lb, "confirm_delete", map[string]any{"filename": "b.txt"})
		res, err = lb.WaitTask(ctx, id) // polls and answers round-robin
		require.NoError(t, err)
		assert.Equal(t, "Deleted b.txt (not really)", res.Content[0].Text)
	})

	t.Run("ListenOnOneReplicaSeesChangeThroughAnother", func(t *testing.T) {
		got := make(chan string, 16)
		a := client(t, rs.url(0), mcp.Version20260728, nil, func(m string, _ json.RawMessage) { got <- m })
		sub, err := a.Listen(ctx, mcp.SubscriptionFilter{ToolsListChanged: true})
		require.NoError(t, err)
		defer sub.Close()
		_, err = direct[1].CallTool(ctx, "test_trigger_tool_change", nil)
		require.NoError(t, err)
		deadline := time.After(10 * time.Second)
		for seen := false; !seen; {
			select {
			case m := <-got:
				seen = m == "notifications/tools/list_changed"
			case <-deadline:
				t.Fatal("the listen stream on replica 0 did not see the change made through replica 1")
			}
		}
		_, err = direct[1].CallTool(ctx, "test_trigger_tool_change", nil) // and back
		require.NoError(t, err)

		// A task's status: started on replica 1, followed by a listen
		// stream on replica 0, cancelled through replica 2.
		id := startedTask(t, direct[1], "slow_compute", map[string]any{"seconds": 60})
		status := make(chan string, 16)
		a2 := client(t, rs.url(0), mcp.Version20260728, nil, func(m string, p json.RawMessage) {
			if m == "notifications/tasks" {
				status <- string(p)
			}
		})
		tsub, err := a2.Listen(ctx, mcp.SubscriptionFilter{TaskIDs: []string{id}})
		require.NoError(t, err)
		defer tsub.Close()
		_, err = direct[2].CancelTask(ctx, id)
		require.NoError(t, err)
		select {
		case p := <-status:
			assert.Contains(t, p, `"status":"cancelled"`)
			assert.Contains(t, p, id)
		case <-time.After(10 * time.Second):
			t.Fatal("the listen stream on replica 0 did not see the task cancelled through replica 2")
		}
	})

	t.Run("SingleUseStateRefusedThroughAnother", func(t *testing.T) {
		hc := &http.Client{Timeout: 10 * time.Second}
		caps := `{"elicitation":{}}`
		const tool = "test_input_required_result_request_state"
		first, err := modernPostCaps(ctx, hc, rs.url(0), "single-use", caps, "tools/call", tool, `"name":"`+tool+`","arguments":{}`)
		require.NoError(t, err)
		res := first["result"].(map[string]any)
		require.Equal(t, "input_required", res["resultType"])
		state := res["requestState"].(string)
		retry := `"name":"` + tool + `","arguments":{},"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":"` + state + `"`
		second, err := modernPostCaps(ctx, hc, rs.url(1), "single-use", caps, "tools/call", tool, retry)
		require.NoError(t, err)
		require.NotNil(t, second["result"], "accepted once, through replica 1: %v", second)
		third, err := modernPostCaps(ctx, hc, rs.url(2), "single-use", caps, "tools/call", tool, retry)
		require.NoError(t, err)
		e, _ := third["error"].(map[string]any)
		require.NotNil(t, e, "refused on its second use, through replica 2: %v", third)
		assert.EqualValues(t, mcp.CodeInvalidParams, e["code"])
		assert.Contains(t, e["message"], "used already")
	})

	t.Run("Session2025StickyAndRecoversWhenItsReplicaDies", func(t *testing.T) {
		rt := &replicaTracker{}
		c := client(t, rs.lb, mcp.Version20251125, rt, nil)
		for range 6 { // round-robin would send these to every replica: affinity keeps them on one
			_, err := c.CallTool(ctx, "greet", map[string]any{"name": "Kim"})
			require.NoError(t, err)
		}
		r := rt.replica()
		require.NotEmpty(t, r)
		i := int(r[1] - '0')
		rs.kill(i)
		defer rs.start(i)
		res, err := c.CallTool(ctx, "greet", map[string]any{"name": "Kim"})
		require.NoError(t, err, "the Client starts a new session on another replica")
		assert.Equal(t, "Hello, Kim!", res.Content[0].Text)
		assert.NotEqual(t, r, rt.replica())
	})

	t.Run("KilledRunnerFailsWithinTheLease", func(t *testing.T) {
		id := startedTask(t, direct[2], "slow_compute", map[string]any{"seconds": 60})
		rs.kill(2)
		killed := time.Now()
		defer rs.start(2)
		lb := client(t, rs.lb, mcp.Version20260728, nil, nil)
		var task *mcp.DetailedTask
		require.Eventually(t, func() bool {
			var err error
			task, err = lb.PollTask(ctx, id)
			return err == nil && task.Status == mcp.TaskStatusFailed
		}, 4*replicaLease, 50*time.Millisecond, "failed within the lease timeout, as seen through the others")
		elapsed := time.Since(killed)
		t.Logf("failed %v after the kill (lease %v)", elapsed.Round(time.Millisecond), replicaLease)
		assert.Less(t, elapsed, replicaLease+replicaLease/2+time.Second)
		require.NotNil(t, task.Error)
		assert.Contains(t, task.Error.Message, "lease expired")
	})

	t.Run("ConformanceThroughTheBalancer", func(t *testing.T) {
		suite := os.Getenv("KEEL_CONFORMANCE")
		if suite == "" {
			t.Skip("set KEEL_CONFORMANCE to run-conformance.sh to run the 2026-07-28 suite through the balancer")
		}
		for i := range rs.procs {
			if rs.procs[i] == nil {
				rs.start(i)
			}
		}
		for _, args := range [][]string{
			{"--alpha", "--requirements", "2026-07-28"}, // the stateless revision: any replica serves any request
			{"--suite", "all"},                          // 2025 sessions: each stuck to its replica
		} {
			cmd := exec.Command(suite, append(args, rs.lb)...)
			cmd.Env = os.Environ()
			out, err := cmd.CombinedOutput()
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			last := lines[len(lines)-1]
			t.Logf("conformance %s through haproxy: %s", strings.Join(args, " "), last)
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				require.NoError(t, err)
			}
			if !assert.Regexp(t, `^[0-9]+ passed, 0 failed$`, last) {
				t.Log(lastLines(string(out), 60))
			}
		}
	})
}
