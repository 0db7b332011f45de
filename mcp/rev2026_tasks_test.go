package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// extTaskTools is a ToolSource for the tests of the tasks extension:
//
//	plain    no task support: answers at once
//	quick    optional: answers at once (the immediate-result shortcut)
//	slow     optional: runs until cancelled (becomes a task by waiting)
//	required required: becomes a task, answers "done"
//	toolerr  optional: becomes a task, ends with an isError result
//	rpcerr   optional: becomes a task, ends with a JSON-RPC error
//	ask      optional: becomes a task that asks two questions, then answers
//	mrtr     required: asks directly (input_required), then becomes a task
type extTaskTools struct {
	cancelled atomic.Int32 // slow calls that saw their context end
}

func (*extTaskTools) ListTools(context.Context) ([]*mcp.Tool, error) {
	schema := jsontext.Value(`{"type":"object"}`)
	tool := func(name, support string) *mcp.Tool {
		t := &mcp.Tool{Name: name, InputSchema: json.RawMessage(schema)}
		if support != "" {
			t.Execution = &mcp.ToolExecution{TaskSupport: support}
		}
		return t
	}
	return []*mcp.Tool{tool("ask", mcp.TaskOptional), tool("mrtr", mcp.TaskRequired), tool("plain", ""),
		tool("quick", mcp.TaskOptional), tool("required", mcp.TaskRequired), tool("rpcerr", mcp.TaskOptional),
		tool("slow", mcp.TaskOptional), tool("toolerr", mcp.TaskOptional)}, nil
}

func (tt *extTaskTools) CallTool(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	in := mcp.InputFromContext(ctx)
	switch call.Name {
	case "plain", "quick":
		return mcp.TextResult(call.Name + " answered"), nil
	case "slow":
		<-ctx.Done()
		tt.cancelled.Add(1)
		return nil, ctx.Err()
	case "required":
		mcp.StartTask(ctx)
		return mcp.TextResult("done"), nil
	case "toolerr":
		mcp.StartTask(ctx)
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{mcp.Text("it went wrong")}}, nil
	case "rpcerr":
		mcp.StartTask(ctx)
		return nil, &mcp.Error{Code: mcp.CodeInternalError, Message: "Internal error: broken",
			Data: map[string]any{"code": "INTERNAL", "message": "broken"}}
	case "ask":
		mcp.StartTask(ctx)
		if !in.Has("a") || !in.Has("b") {
			return nil, mcp.InputRequired(map[string]mcp.InputRequest{"a": askName, "b": askName}, []byte("st"))
		}
		a, _ := in.Elicit("a")
		b, _ := in.Elicit("b")
		return mcp.TextResult(fmt.Sprintf("a=%v b=%v state=%s round=%d", a.Content["name"], b.Content["name"], in.State, in.Round)), nil
	case "mrtr":
		er, ok := in.Elicit("name")
		if !ok {
			return nil, mcp.InputRequired(map[string]mcp.InputRequest{"name": askName}, nil)
		}
		mcp.StartTask(ctx)
		return mcp.TextResult(fmt.Sprintf("Hello, %v!", er.Content["name"])), nil
	}
	return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: "unknown tool"}
}

const (
	taskCaps   = `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	noTaskCaps = `{"elicitation":{}}`
)

// extTaskConn speaks raw JSON lines to a server with tasks over a pipe.
type extTaskConn struct {
	*rawConn
	srv   *mcp.Server
	tools *extTaskTools
	next  int
}

func startTaskServer(t *testing.T, tasks *mcp.TaskOptions) *extTaskConn {
	t.Helper()
	return startTaskServerWith(t, tasks, nil)
}

// startTaskServerWith is startTaskServer with its options changed by
// edit first (when not nil).
func startTaskServerWith(t *testing.T, tasks *mcp.TaskOptions, edit func(*mcp.ServerOptions)) *extTaskConn {
	t.Helper()
	tools := &extTaskTools{}
	o := mcptest.ServerOptions(tools)
	o.StateKey = []byte("0123456789abcdef0123456789abcdef")
	o.Tasks = tasks
	if edit != nil {
		edit(o)
	}
	srv := mcp.NewServer(o)
	ct, st := transport.NewPipe(nil)
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), st) }()
	t.Cleanup(func() {
		ct.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		assert.NoError(t, srv.StopTasks(ctx), "every task handler returns")
		<-done
	})
	return &extTaskConn{rawConn: &rawConn{t: t, tr: ct}, srv: srv, tools: tools}
}

// call sends a modern request with the client capabilities caps and
// returns its response (notifications are skipped).
func (c *extTaskConn) call(method, params, caps string) map[string]any {
	c.t.Helper()
	c.next++
	id := float64(c.next)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
	if params != "" {
		meta = params + "," + meta
	}
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s}}`, c.next, method, meta))
	for {
		m := c.recv()
		if m["id"] == id {
			return m
		}
	}
}

func (c *extTaskConn) result(method, params, caps string) map[string]any {
	c.t.Helper()
	m := c.call(method, params, caps)
	res, ok := m["result"].(map[string]any)
	require.True(c.t, ok, "want a result, got %v", m)
	return res
}

// get returns tasks/get of id.
func (c *extTaskConn) get(id string) map[string]any {
	c.t.Helper()
	return c.result("tasks/get", `"taskId":"`+id+`"`, taskCaps)
}

// await polls task id until its status is want.
func (c *extTaskConn) await(id string, want mcp.TaskStatus) map[string]any {
	c.t.Helper()
	var d map[string]any
	require.Eventually(c.t, func() bool {
		d = c.get(id)
		return d["status"] == string(want)
	}, 5*time.Second, 5*time.Millisecond, "task %s never became %s", id, want)
	return d
}

func firstText(res map[string]any) string {
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	s, _ := content[0].(map[string]any)["text"].(string)
	return s
}

func TestModernTaskOutcomes(t *testing.T) {
	c := startTaskServer(t, &mcp.TaskOptions{})
	tests := []struct {
		name, tool, extra string
		task              bool           // answered with a task
		status            mcp.TaskStatus // its final status
		text              string         // the result's first text
		isError           bool
		code              float64 // the failed task's error code
	}{
		{name: "no task support", tool: "plain", text: "plain answered"},
		{name: "legacy task param ignored", tool: "plain", extra: `"task":{"ttl":60000},`, text: "plain answered"},
		{name: "immediate result shortcut", tool: "quick", text: "quick answered"},
		{name: "completed", tool: "required", task: true, status: mcp.TaskStatusCompleted, text: "done"},
		{name: "tool error is completed", tool: "toolerr", task: true, status: mcp.TaskStatusCompleted, text: "it went wrong", isError: true},
		{name: "JSON-RPC error is failed", tool: "rpcerr", task: true, status: mcp.TaskStatusFailed, code: -32603},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := c.result("tools/call", tt.extra+`"name":"`+tt.tool+`"`, taskCaps)
			if !tt.task {
				assert.Equal(t, "complete", res["resultType"])
				assert.NotContains(t, res, "taskId")
				assert.Equal(t, tt.text, firstText(res))
				return
			}
			assert.Equal(t, "task", res["resultType"])
			id, _ := res["taskId"].(string)
			require.Len(t, id, 36, "a random UUID")
			for _, k := range []string{"status", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"} {
				assert.Contains(t, res, k)
			}
			for _, k := range []string{"task", "ttl", "pollInterval", "result", "error", "inputRequests", "requestState"} {
				assert.NotContains(t, res, k)
			}
			d := c.await(id, tt.status)
			assert.Equal(t, "complete", d["resultType"])
			assert.Equal(t, id, d["taskId"])
			if tt.status == mcp.TaskStatusFailed {
				assert.NotContains(t, d, "result")
				e := d["error"].(map[string]any)
				assert.Equal(t, tt.code, e["code"])
				assert.IsType(t, "", e["message"])
				return
			}
			assert.NotContains(t, d, "error")
			r := d["result"].(map[string]any)
			assert.Equal(t, tt.text, firstText(r))
			assert.Equal(t, tt.isError, r["isError"] == true)
			if meta, ok := r["_meta"].(map[string]any); ok {
				assert.NotContains(t, meta, mcp.MetaRelatedTask)
			}
		})
	}
}

func TestModernTaskErrors(t *testing.T) {
	c := startTaskServer(t, &mcp.TaskOptions{})
	missing := map[string]any{"extensions": map[string]any{mcp.ExtensionTasks: map[string]any{}}}
	tests := []struct {
		name, method, params, caps string
		code                       float64
	}{
		{"tasks/get without the extension", "tasks/get", `"taskId":"x"`, noTaskCaps, -32021},
		{"tasks/update without the extension", "tasks/update", `"taskId":"x","inputResponses":{}`, noTaskCaps, -32021},
		{"tasks/cancel without the extension", "tasks/cancel", `"taskId":"x"`, noTaskCaps, -32021},
		{"required tool without the extension", "tools/call", `"name":"required"`, noTaskCaps, -32021},
		{"tasks/get of an unknown task", "tasks/get", `"taskId":"nope"`, taskCaps, -32602},
		{"tasks/update of an unknown task", "tasks/update", `"taskId":"nope","inputResponses":{}`, taskCaps, -32602},
		{"tasks/cancel of an unknown task", "tasks/cancel", `"taskId":"nope"`, taskCaps, -32602},
		{"tasks/get without taskId", "tasks/get", `"x":1`, taskCaps, -32602},
		{"tasks/result is legacy only", "tasks/result", `"taskId":"x"`, taskCaps, -32601},
		{"tasks/list is legacy only", "tasks/list", "", taskCaps, -32601},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := c.call(tt.method, tt.params, tt.caps)
			e, ok := m["error"].(map[string]any)
			require.True(t, ok, "want an error, got %v", m)
			assert.Equal(t, tt.code, e["code"])
			if tt.code == -32021 {
				assert.Equal(t, missing, e["data"].(map[string]any)["requiredCapabilities"])
			}
		})
	}

	t.Run("a task-supporting tool without the extension answers directly", func(t *testing.T) {
		res := c.result("tools/call", `"name":"toolerr"`, noTaskCaps)
		assert.Equal(t, "complete", res["resultType"])
		assert.Equal(t, true, res["isError"])
	})
	t.Run("no tasks configured: the methods do not exist", func(t *testing.T) {
		c := startRaw(t, mcptest.ServerOptions(&extTaskTools{}))
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + taskCaps + `}}}`)
		assert.Equal(t, float64(-32601), c.recv()["error"].(map[string]any)["code"])
	})
}

func TestModernTaskInputAndResume(t *testing.T) {
	c := startTaskServer(t, &mcp.TaskOptions{})
	res := c.result("tools/call", `"name":"ask"`, taskCaps)
	require.Equal(t, "task", res["resultType"])
	id := res["taskId"].(string)

	d := c.await(id, mcp.TaskStatusInputRequired)
	reqs := d["inputRequests"].(map[string]any)
	require.Len(t, reqs, 2)
	assert.NotContains(t, d, "requestState")
	var keys []string
	for k, v := range reqs {
		assert.Equal(t, "elicitation/create", v.(map[string]any)["method"])
		keys = append(keys, k)
	}
	answer := func(k, name string) string {
		return `"` + k + `":{"action":"accept","content":{"name":"` + name + `"}}`
	}

	steps := []struct {
		name, responses string
		code            float64        // an error, or 0 for the empty ack
		status          mcp.TaskStatus // after the step
		pending         int
	}{
		{"unknown keys are ignored", `"unknown-key":{"ignored":true}`, 0, mcp.TaskStatusInputRequired, 2},
		{"a malformed answer is refused", `"` + keys[0] + `":{"roots":[]}`, -32602, mcp.TaskStatusInputRequired, 2},
		{"partial fulfilment", answer(keys[0], "one"), 0, mcp.TaskStatusInputRequired, 1},
		{"the last answer resumes the task", answer(keys[1], "two"), 0, "", 0},
	}
	for _, s := range steps {
		m := c.call("tasks/update", `"taskId":"`+id+`","inputResponses":{`+s.responses+`}`, taskCaps)
		if s.code != 0 {
			assert.Equal(t, s.code, m["error"].(map[string]any)["code"], s.name)
		} else {
			ack := m["result"].(map[string]any)
			assert.Equal(t, "complete", ack["resultType"], s.name)
			for _, k := range []string{"taskId", "status", "result", "error", "inputRequests"} {
				assert.NotContains(t, ack, k, s.name)
			}
		}
		if s.status == "" {
			continue
		}
		d := c.get(id)
		assert.Equal(t, string(s.status), d["status"], s.name)
		assert.Len(t, d["inputRequests"], s.pending, s.name)
		if s.pending == 1 {
			assert.NotContains(t, d["inputRequests"], keys[0], "an answered key disappears")
			assert.Contains(t, d["inputRequests"], keys[1])
		}
	}
	d = c.await(id, mcp.TaskStatusCompleted)
	assert.Regexp(t, `^a=(one|two) b=(one|two) state=st round=1$`, firstText(d["result"].(map[string]any)))
	assert.NotContains(t, d, "inputRequests")

	// An update of a task that waits for nothing is acknowledged and ignored.
	ack := c.result("tasks/update", `"taskId":"`+id+`","inputResponses":{}`, taskCaps)
	assert.Equal(t, "complete", ack["resultType"])
}

func TestModernTaskCancel(t *testing.T) {
	c := startTaskServer(t, &mcp.TaskOptions{ImmediateWait: 10 * time.Millisecond})
	res := c.result("tools/call", `"name":"slow"`, taskCaps)
	require.Equal(t, "task", res["resultType"], "a call still running after ImmediateWait becomes a task")
	id := res["taskId"].(string)
	assert.Equal(t, "working", c.get(id)["status"], "durably created: found at once")

	for i := range 2 { // the second cancel finds a terminal task: the same ack
		ack := c.result("tasks/cancel", `"taskId":"`+id+`"`, taskCaps)
		assert.Equal(t, map[string]any{"resultType": "complete"}, withoutMeta(ack), "cancel %d", i)
	}
	d := c.get(id)
	assert.Equal(t, "cancelled", d["status"])
	assert.NotContains(t, d, "result")
	assert.NotContains(t, d, "error")
	require.Eventually(t, func() bool { return c.tools.cancelled.Load() == 1 }, 5*time.Second, 5*time.Millisecond,
		"cancellation reaches the handler")
	assert.Equal(t, "cancelled", c.get(id)["status"], "the handler's late outcome does not change it")
}

func TestModernTaskImmediate(t *testing.T) {
	c := startTaskServer(t, &mcp.TaskOptions{ImmediateWait: -1})
	res := c.result("tools/call", `"name":"quick"`, taskCaps)
	assert.Equal(t, "task", res["resultType"], "no immediate wait: every call that may be a task is one")
	d := c.await(res["taskId"].(string), mcp.TaskStatusCompleted)
	assert.Equal(t, "quick answered", firstText(d["result"].(map[string]any)))
}

// An input_required round answered directly, then a task (the MRTR phase
// precedes the task).
func TestModernTaskAfterInputRound(t *testing.T) {
	c := startTaskServer(t, &mcp.TaskOptions{})
	r1 := c.result("tools/call", `"name":"mrtr"`, taskCaps)
	require.Equal(t, "input_required", r1["resultType"])
	assert.NotContains(t, r1, "taskId")
	state := r1["requestState"].(string)
	r2 := c.result("tools/call", `"name":"mrtr","inputResponses":{"name":{"action":"accept","content":{"name":"Alice"}}},"requestState":"`+state+`"`, taskCaps)
	require.Equal(t, "task", r2["resultType"])
	assert.NotContains(t, r2, "requestState")
	assert.NotContains(t, r2, "inputRequests")
	d := c.await(r2["taskId"].(string), mcp.TaskStatusCompleted)
	assert.Equal(t, "Hello, Alice!", firstText(d["result"].(map[string]any)))
}

func TestModernTaskDiscoverAndList(t *testing.T) {
	c := startTaskServer(t, &mcp.TaskOptions{})
	caps := c.result("server/discover", "", noTaskCaps)["capabilities"].(map[string]any)
	assert.Equal(t, map[string]any{mcp.ExtensionTasks: map[string]any{}}, caps["extensions"])
	assert.NotContains(t, caps, "tasks", "no legacy tasks capability")
	for _, tool := range c.result("tools/list", "", taskCaps)["tools"].([]any) {
		assert.NotContains(t, tool, "execution", "execution is not on the 2026 wire")
	}

	plain := startRaw(t, mcptest.ServerOptions(&extTaskTools{}))
	plain.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`)
	assert.NotContains(t, plain.recv()["result"].(map[string]any)["capabilities"], "extensions", "no tasks, no extension")
}

// Tasks belong to their caller (TaskOptions.Owner, by default the bearer
// token's subject), not to a connection: another caller's task is unknown.
func TestModernTaskOwners(t *testing.T) {
	c := startTaskServer(t, &mcp.TaskOptions{Owner: func(ctx context.Context) string {
		who, _ := mcp.RequestFromContext(ctx).ClientCapabilities().Experimental["who"].(string) // a stand-in for a token subject
		return who
	}})
	as := func(who string) string {
		if who == "" {
			return taskCaps
		}
		return `{"experimental":{"who":"` + who + `"},"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	}
	id := c.result("tools/call", `"name":"required"`, as("alice"))["taskId"].(string)
	tests := []struct {
		who  string
		code float64 // 0: found
	}{
		{"alice", 0},
		{"bob", -32602},
		{"", -32602},
	}
	for _, tt := range tests {
		t.Run("as "+tt.who, func(t *testing.T) {
			m := c.call("tasks/get", `"taskId":"`+id+`"`, as(tt.who))
			if tt.code == 0 {
				assert.Equal(t, id, m["result"].(map[string]any)["taskId"])
				return
			}
			assert.Equal(t, tt.code, m["error"].(map[string]any)["code"])
			m = c.call("tasks/cancel", `"taskId":"`+id+`"`, as(tt.who))
			assert.Equal(t, tt.code, m["error"].(map[string]any)["code"], "nor can it be cancelled")
		})
	}
}

func TestStopTasks(t *testing.T) {
	c := startTaskServer(t, &mcp.TaskOptions{ImmediateWait: 10 * time.Millisecond})
	res := c.result("tools/call", `"name":"slow"`, taskCaps)
	require.Equal(t, "task", res["resultType"])
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.srv.StopTasks(ctx))
	assert.Equal(t, int32(1), c.tools.cancelled.Load(), "StopTasks waits for the handlers")
	d := c.await(res["taskId"].(string), mcp.TaskStatusCompleted)
	assert.Equal(t, true, d["result"].(map[string]any)["isError"], "a handler ended by its context reports an error")
}

func withoutMeta(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if k != "_meta" {
			out[k] = v
		}
	}
	return out
}

// notifications/tasks: a subscription that lists a task id (of the
// caller's) gets the task's state on every status change; an unknown id
// is not honoured.
func TestModernTaskNotificationsOnListen(t *testing.T) {
	c := startTaskServer(t, &mcp.TaskOptions{})
	res := c.result("tools/call", `"name":"slow"`, taskCaps)
	require.Equal(t, "task", res["resultType"])
	id := res["taskId"].(string)

	c.send(`{"jsonrpc":"2.0","id":"sub","method":"subscriptions/listen","params":{"notifications":{"taskIds":["` + id + `","no-such-task"]},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + taskCaps + `}}}`)
	ack := c.recv()
	require.Equal(t, "notifications/subscriptions/acknowledged", ack["method"])
	assert.Equal(t, map[string]any{"taskIds": []any{id}}, ack["params"].(map[string]any)["notifications"])

	c.send(`{"jsonrpc":"2.0","id":"cancel","method":"tasks/cancel","params":{"taskId":"` + id + `",` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + taskCaps + `}}}`)
	var note map[string]any
	for note == nil {
		m := c.recv()
		if m["method"] == "notifications/tasks" {
			note = m
		}
	}
	p := note["params"].(map[string]any)
	assert.Equal(t, id, p["taskId"])
	assert.Equal(t, "cancelled", p["status"])
	assert.Equal(t, "sub", p["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"])
}

// The modern Client follows tasks: CallTool reports the task, WaitTask
// polls it, answers its input requests with the client's handlers, and
// returns the outcome; CancelTask ends one.
func TestModernClientFollowsTasks(t *testing.T) {
	tools := &extTaskTools{}
	o := mcptest.ServerOptions(tools)
	o.Tasks = &mcp.TaskOptions{}
	copts := *quietClient
	copts.ProtocolVersion = mcp.Version20260728
	copts.Capabilities.Extensions = map[string]any{mcp.ExtensionTasks: map[string]any{}}
	copts.OnElicitation = func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Kim"}}, nil
	}
	c, _ := connect(t, o, &copts)
	ctx := context.Background()

	started := func(name string) string {
		t.Helper()
		_, err := c.CallTool(ctx, name, nil)
		var ts *mcp.TaskStartedError
		require.ErrorAs(t, err, &ts, "tool %s", name)
		return ts.Task.TaskID
	}
	res, err := c.WaitTask(ctx, started("required"))
	require.NoError(t, err)
	assert.Equal(t, "done", res.Content[0].Text)

	res, err = c.WaitTask(ctx, started("ask"))
	require.NoError(t, err)
	assert.Equal(t, "a=Kim b=Kim state=st round=1", res.Content[0].Text)

	_, err = c.WaitTask(ctx, started("rpcerr"))
	var e *mcp.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, int64(mcp.CodeInternalError), e.Code)
	assert.IsType(t, json.RawMessage(nil), e.Data, "a failed task's error data is the raw JSON, as every error's")
	se, ok := e.StructuredError()
	require.True(t, ok, "data %v", e.Data)
	assert.Equal(t, "broken", se.Message)

	id := started("slow")
	task, err := c.CancelTask(ctx, id)
	require.NoError(t, err)
	assert.Nil(t, task, "a modern tasks/cancel is an empty ack")
	_, err = c.WaitTask(ctx, id)
	assert.ErrorContains(t, err, "cancelled")

	_, err = c.PollTask(ctx, "no-such-task")
	require.ErrorAs(t, err, &e)
	assert.Equal(t, int64(mcp.CodeInvalidParams), e.Code)

	res, err = c.CallTool(ctx, "quick", nil)
	require.NoError(t, err, "a quick call is answered inline")
	assert.Equal(t, "quick answered", res.Content[0].Text)
}

// notifications/tasks go by owner too: a subscription may name only its
// caller's tasks (TaskOptions.Owner), so another owner's listen stream is
// never told of a task's status, even on the same connection.
func TestModernTaskNotificationsGoByOwner(t *testing.T) {
	c := startTaskServer(t, &mcp.TaskOptions{Owner: func(ctx context.Context) string {
		who, _ := mcp.RequestFromContext(ctx).ClientCapabilities().Experimental["who"].(string) // a stand-in for a token subject
		return who
	}})
	as := func(who string) string {
		return `{"experimental":{"who":"` + who + `"},"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	}
	res := c.result("tools/call", `"name":"slow"`, as("alice"))
	require.Equal(t, "task", res["resultType"])
	id := res["taskId"].(string)
	listen := func(who string) map[string]any {
		c.send(`{"jsonrpc":"2.0","id":"sub-` + who + `","method":"subscriptions/listen","params":{"notifications":{"taskIds":["` + id + `"]},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + as(who) + `}}}`)
		ack := c.recv()
		require.Equal(t, "notifications/subscriptions/acknowledged", ack["method"])
		return ack["params"].(map[string]any)["notifications"].(map[string]any)
	}
	assert.NotContains(t, listen("bob"), "taskIds", "another owner's task is not honoured")
	assert.Equal(t, []any{id}, listen("alice")["taskIds"])

	c.send(`{"jsonrpc":"2.0","id":"cancel","method":"tasks/cancel","params":{"taskId":"` + id + `",` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + as("alice") + `}}}`)
	var notes []any
	answered := false
	for len(notes) == 0 || !answered {
		m := c.recv()
		switch {
		case m["method"] == "notifications/tasks":
			notes = append(notes, m["params"].(map[string]any)["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"])
		case m["id"] == "cancel":
			answered = true
		}
	}
	assert.Equal(t, []any{"sub-alice"}, notes, "only the owner's subscription is told")
}
