package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport/streamhttp"
)

// statelessPost sends one 2026-07-28 request over stateless HTTP, as its
// own POST, and returns the JSON-RPC response.
func statelessPost(t *testing.T, url, method, name, params string) map[string]any {
	t.Helper()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{%s,%s}}`, method, params, meta)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var msg []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok && bytes.Contains(d, []byte(`"id":1`)) {
				msg = append([]byte(nil), d...)
			}
		}
	} else {
		var buf bytes.Buffer
		_, err = buf.ReadFrom(resp.Body)
		require.NoError(t, err)
		msg = buf.Bytes()
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal(msg, &m), string(msg))
	return m
}

// A task outlives the POST that created it: later POSTs (fresh stateless
// sessions) poll, answer and cancel it.
func TestTasksOverStatelessHTTP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := newServer(newRegistry(quiet), quiet)
	served := make(chan error, 1)
	go func() { served <- serveHTTP(ctx, srv, ln, &streamhttp.Options{Stateless: true}) }()
	url := "http://" + ln.Addr().String() + "/mcp"
	result := func(m map[string]any) map[string]any {
		res, ok := m["result"].(map[string]any)
		require.True(t, ok, "want a result, got %v", m)
		return res
	}
	poll := func(id string, want ...string) map[string]any {
		var d map[string]any
		require.Eventually(t, func() bool {
			d = result(statelessPost(t, url, "tasks/get", id, `"taskId":"`+id+`"`))
			for _, w := range want {
				if d["status"] == w {
					return true
				}
			}
			return false
		}, 10*time.Second, 20*time.Millisecond)
		return d
	}

	tests := []struct {
		name, tool, args string
		status           string
	}{
		{"completed", "slow_compute", `{"seconds":0.2,"label":"x"}`, "completed"},
		{"tool error", "failing_job", `{}`, "completed"},
		{"protocol error", "protocol_error_job", `{}`, "failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := result(statelessPost(t, url, "tools/call", tt.tool, `"name":"`+tt.tool+`","arguments":`+tt.args))
			require.Equal(t, "task", res["resultType"])
			id := res["taskId"].(string)
			assert.Equal(t, tt.status, poll(id, tt.status)["status"])
		})
	}

	t.Run("input and cancel", func(t *testing.T) {
		res := result(statelessPost(t, url, "tools/call", "confirm_delete", `"name":"confirm_delete","arguments":{"filename":"a.txt"}`))
		id := res["taskId"].(string)
		d := poll(id, "input_required")
		var key string
		for k := range d["inputRequests"].(map[string]any) {
			key = k
		}
		ack := result(statelessPost(t, url, "tasks/update", id, `"taskId":"`+id+`","inputResponses":{"`+key+`":{"action":"accept","content":{"confirm":true}}}`))
		assert.Equal(t, "complete", ack["resultType"])
		d = poll(id, "completed")
		assert.Contains(t, d["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"], "Deleted a.txt")

		res = result(statelessPost(t, url, "tools/call", "slow_compute", `"name":"slow_compute","arguments":{"seconds":60}`))
		id = res["taskId"].(string)
		result(statelessPost(t, url, "tasks/cancel", id, `"taskId":"`+id+`"`))
		assert.Equal(t, "cancelled", poll(id, "cancelled")["status"])
	})

	cancel()
	require.NoError(t, <-served)
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	require.NoError(t, srv.StopTasks(sctx))
}
