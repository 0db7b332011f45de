package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/pgtest"
)

// TestReplicaLoad measures calls/s and latency through haproxy in front
// of one replica and in front of three (all sharing PostgreSQL), in one
// run, alternating: a plain tool call (test_simple_text) and a task-backed
// one (protocol_error_job: a task at once, followed with tasks/get until
// it ends). It runs when KEEL_REPLICA_LOAD=1 and KEEL_HAPROXY are set; it
// is a measurement (logged), not a check.
func TestReplicaLoad(t *testing.T) {
	haproxy := os.Getenv("KEEL_HAPROXY")
	if haproxy == "" || os.Getenv("KEEL_REPLICA_LOAD") != "1" {
		t.Skip("set KEEL_REPLICA_LOAD=1 and KEEL_HAPROXY to measure the replicas' load")
	}
	pgtest.DSN(t)
	rs := startReplicas(t, haproxy)
	// A second balancer in front of replica 0 alone.
	one := freePort(t)
	cfg := filepath.Join(t.TempDir(), "one.cfg")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, haproxyConfig, one,
		fmt.Sprintf("\tserver r0 127.0.0.1:%d check inter 200ms fall 1 rise 1\n", rs.ports[0])), 0o600))
	lb := exec.Command(haproxy, "-db", "-f", cfg)
	require.NoError(t, lb.Start())
	t.Cleanup(func() { _ = lb.Process.Signal(syscall.SIGTERM); _ = lb.Wait() })
	waitPort(t, one)
	urls := map[int]string{1: fmt.Sprintf("http://127.0.0.1:%d/mcp", one), 3: rs.lb}

	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	const workers, dur = 16, 4 * time.Second
	caps := `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	plain := func(ctx context.Context, url string) error {
		m, err := modernPostCaps(ctx, hc, url, "load", caps, "tools/call", "test_simple_text", `"name":"test_simple_text","arguments":{}`)
		if err == nil && m["result"] == nil {
			err = fmt.Errorf("no result: %v", m)
		}
		return err
	}
	task := func(ctx context.Context, url string) error {
		m, err := modernPostCaps(ctx, hc, url, "load", caps, "tools/call", "protocol_error_job", `"name":"protocol_error_job","arguments":{}`)
		if err != nil {
			return err
		}
		res, _ := m["result"].(map[string]any)
		id, _ := res["taskId"].(string)
		if id == "" {
			return fmt.Errorf("no task: %v", m)
		}
		for {
			g, err := modernPostCaps(ctx, hc, url, "load", caps, "tasks/get", id, `"taskId":"`+id+`"`)
			if err != nil {
				return err
			}
			r, _ := g["result"].(map[string]any)
			switch r["status"] {
			case "failed", "completed", "cancelled":
				return nil
			case nil:
				return fmt.Errorf("tasks/get: %v", g)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	run := func(name string, n int, op func(context.Context, string) error) {
		var mu sync.Mutex
		var lat []time.Duration
		var errs int
		var first error
		ctx, cancel := context.WithTimeout(context.Background(), dur)
		defer cancel()
		var wg sync.WaitGroup
		start := time.Now()
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					t0 := time.Now()
					err := op(context.Background(), urls[n])
					d := time.Since(t0)
					mu.Lock()
					if err != nil {
						errs++
						if first == nil {
							first = err
						}
					} else {
						lat = append(lat, d)
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		el := time.Since(start)
		slices.Sort(lat)
		p := func(q float64) time.Duration {
			if len(lat) == 0 {
				return 0
			}
			return lat[min(len(lat)-1, int(q*float64(len(lat))))]
		}
		t.Logf("%-6s %d replica(s): %7.0f calls/s  p50 %6.2f ms  p99 %6.2f ms  (%d ok, %d errors, %d workers, %v)",
			name, n, float64(len(lat))/el.Seconds(), ms(p(0.50)), ms(p(0.99)), len(lat), errs, workers, el.Round(time.Millisecond))
		if first != nil {
			t.Logf("first error: %v", first)
		}
	}
	for rep := range 2 {
		order := []int{1, 3}
		if rep == 1 {
			order = []int{3, 1}
		}
		for _, n := range order {
			run("plain", n, plain)
			run("task", n, task)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
