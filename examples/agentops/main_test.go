package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/agents"
	"github.com/keelmcp/keel/internal/pgtest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

var quiet = slog.New(slog.DiscardHandler)

// eachStore runs body as parallel subtests against a fresh app on each
// store: "sqlite" (a file in a temporary directory) and "postgres" (a
// schema of its own on the server named by KEEL_TEST_POSTGRES_DSN, skipped
// when that is unset).
func eachStore(t *testing.T, body func(*testing.T, *mcp.Client)) {
	t.Parallel()
	stores := []struct {
		name string
		open func(t *testing.T) (path, dsn string)
	}{
		{"sqlite", func(t *testing.T) (string, string) { return filepath.Join(t.TempDir(), "agentops.db"), "" }},
		{"postgres", func(t *testing.T) (string, string) { return "", pgtest.Schema(t) }},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			path, dsn := st.open(t)
			body(t, connect(t, path, dsn))
		})
	}
}

// connect serves a fresh app on the given store (as run's -db and -dsn
// flags name it) over the in-memory transport and returns a connected
// Client.
func connect(t *testing.T, path, dsn string) *mcp.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := openStore(ctx, path, dsn)
	require.NoError(t, err)
	a, err := newApp(st, defaults(), quiet)
	require.NoError(t, err)
	clientEnd, serverEnd := transport.NewPipe(nil)
	done := make(chan error, 1)
	go func() { done <- a.server().Run(ctx, serverEnd) }()
	c := mcp.NewClient(nil)
	require.NoError(t, c.Connect(ctx, clientEnd))
	t.Cleanup(func() {
		c.Close()
		cancel()
		<-done
		assert.NoError(t, a.Close())
	})
	return c
}

// call calls a tool that must succeed and decodes its structuredContent
// into a value of type T.
func call[T any](t *testing.T, c *mcp.Client, name string, args any) T {
	t.Helper()
	res, err := c.CallTool(context.Background(), name, args)
	require.NoError(t, err, name)
	require.False(t, res.IsError, name)
	var out T
	require.NoError(t, json.Unmarshal(res.StructuredContent, &out), name)
	return out
}

// callErr calls a tool that must fail with a tool error and returns it.
func callErr(t *testing.T, c *mcp.Client, name string, args any) *mcp.StructuredError {
	t.Helper()
	res, err := c.CallTool(context.Background(), name, args)
	require.NotNil(t, res, name)
	assert.True(t, res.IsError, name)
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se, name)
	return se
}

type obj = map[string]any

func TestCatalogue(t *testing.T) { eachStore(t, testCatalogue) }

func testCatalogue(t *testing.T, c *mcp.Client) {
	ctx := context.Background()
	tools, err := c.ListAllTools(ctx)
	require.NoError(t, err)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	assert.ElementsMatch(t, []string{
		"memory_store", "memory_retrieve", "memory_search", "memory_list", "memory_delete",
		"session_create", "session_status", "session_complete", "session_list",
		"agent_list", "agent_get", "agent_run",
		"workflow_run", "workflow_list", "workflow_describe",
		"trace_list", "trace_get", "trace_analyze",
		"guard_check", "guard_list", "guard_apply",
		"health", "server_ping",
	}, names, "FULL mode, admin policy deny_all: no test-only tools, no shutdown, no admin tools")

	resources, err := c.ListAllResources(ctx)
	require.NoError(t, err)
	var uris []string
	for _, r := range resources {
		uris = append(uris, r.URI)
		assert.Equal(t, jsonMIME, r.MimeType)
	}
	assert.ElementsMatch(t, []string{"memory://entries", "sessions://active", "traces://recent", "agents://available"}, uris)

	prompts, err := c.ListAllPrompts(ctx)
	require.NoError(t, err)
	var pnames []string
	for _, p := range prompts {
		pnames = append(pnames, p.Name)
	}
	assert.ElementsMatch(t, []string{"run_workflow", "analyze_trace", "search_memory", "list_agents", "run_agent"}, pnames)
}

func TestMemory(t *testing.T) { eachStore(t, testMemory) }

func testMemory(t *testing.T, c *mcp.Client) {
	stored := call[MemoryStoreOutput](t, c, "memory_store", obj{"key": "user-context", "value": obj{"lang": "go", "level": 3}})
	assert.True(t, stored.Success)
	assert.Equal(t, "default", stored.Namespace)
	assert.Equal(t, len(`{"lang":"go","level":3}`), stored.Size)
	call[MemoryStoreOutput](t, c, "memory_store", obj{"key": "user-prefs", "namespace": "proj", "value": obj{"theme": "dark"}})
	call[MemoryStoreOutput](t, c, "memory_store", obj{"key": "notes", "namespace": "proj", "value": obj{"text": "user asked for go"}})

	got := call[MemoryRetrieveOutput](t, c, "memory_retrieve", obj{"key": "user-context"})
	require.True(t, got.Found)
	assert.JSONEq(t, `{"lang":"go","level":3}`, string(got.Value))
	assert.NotEmpty(t, got.StoredAt)
	missing := call[MemoryRetrieveOutput](t, c, "memory_retrieve", obj{"key": "user-context", "namespace": "proj"})
	assert.False(t, missing.Found)
	assert.Contains(t, missing.Message, "proj:user-context")

	// Keys or values containing "user", most recent first, case-sensitively.
	found := call[MemorySearchOutput](t, c, "memory_search", obj{"query": "user"})
	assert.Equal(t, "all", found.Namespace)
	require.Equal(t, 3, found.Count)
	assert.Equal(t, []string{"notes", "user-prefs", "user-context"}, []string{found.Results[0].Key, found.Results[1].Key, found.Results[2].Key})
	inProj := call[MemorySearchOutput](t, c, "memory_search", obj{"query": "user-", "namespace": "proj", "limit": 5})
	require.Equal(t, 1, inProj.Count)
	assert.Equal(t, "user-prefs", inProj.Results[0].Key)
	assert.Equal(t, 0, call[MemorySearchOutput](t, c, "memory_search", obj{"query": "USER"}).Count)

	// Overwriting moves an entry to the front.
	call[MemoryStoreOutput](t, c, "memory_store", obj{"key": "user-context", "value": obj{"lang": "rust"}})
	list := call[MemoryListOutput](t, c, "memory_list", obj{"limit": 2})
	assert.Equal(t, 3, list.Total)
	assert.True(t, list.HasMore)
	require.Len(t, list.Entries, 2)
	assert.Equal(t, "user-context", list.Entries[0].Key)
	assert.Equal(t, len(`{"lang":"rust"}`), list.Entries[0].Size)
	page2 := call[MemoryListOutput](t, c, "memory_list", obj{"limit": 2, "offset": 2})
	assert.False(t, page2.HasMore)
	require.Len(t, page2.Entries, 1)
	assert.Equal(t, "user-prefs", page2.Entries[0].Key)
	assert.Equal(t, 2, call[MemoryListOutput](t, c, "memory_list", obj{"namespace": "proj"}).Total)

	del := call[MemoryDeleteOutput](t, c, "memory_delete", obj{"key": "notes", "namespace": "proj"})
	assert.True(t, del.Deleted)
	assert.False(t, call[MemoryDeleteOutput](t, c, "memory_delete", obj{"key": "notes", "namespace": "proj"}).Deleted)
	assert.False(t, call[MemoryRetrieveOutput](t, c, "memory_retrieve", obj{"key": "notes", "namespace": "proj"}).Found)

	// Values are bounded to 100 KB.
	big := obj{"blob": strings.Repeat("x", maxValueBytes)}
	se := callErr(t, c, "memory_store", obj{"key": "big", "value": big})
	assert.Equal(t, mcp.ErrResourceExhausted, se.Code)
	assert.Contains(t, se.Message, "102400")
	assert.EqualValues(t, maxValueBytes, se.Details["limitBytes"])
	assert.False(t, call[MemoryRetrieveOutput](t, c, "memory_retrieve", obj{"key": "big"}).Found)
	// Exactly at the limit is fine.
	atLimit := obj{"b": strings.Repeat("x", maxValueBytes-len(`{"b":""}`))}
	assert.Equal(t, maxValueBytes, call[MemoryStoreOutput](t, c, "memory_store", obj{"key": "big", "value": atLimit}).Size)

	// A value must be an object.
	assert.Equal(t, mcp.ErrInvalidArgument, callErr(t, c, "memory_store", obj{"key": "k", "value": "text"}).Code)
}

func TestSessionsAgentsGuards(t *testing.T) { eachStore(t, testSessionsAgentsGuards) }

func testSessionsAgentsGuards(t *testing.T, c *mcp.Client) {
	s := call[SessionCreateOutput](t, c, "session_create", obj{"initiator": "planner", "task": "refactor the store",
		"workspace": "/src/app", "metadata": obj{"ticket": 42}})
	assert.Equal(t, "active", s.Status)
	require.NotEmpty(t, s.SessionID)
	other := call[SessionCreateOutput](t, c, "session_create", obj{"initiator": "echo", "task": "other"})

	// Agents.
	al := call[agents.AgentListOutput](t, c, "agent_list", obj{})
	assert.Equal(t, 3, al.Total)
	assert.Equal(t, []string{"echo", "planner", "summarizer"}, []string{al.Agents[0].AgentID, al.Agents[1].AgentID, al.Agents[2].AgentID})
	assert.Equal(t, 2, call[agents.AgentListOutput](t, c, "agent_list", obj{"team": "text"}).Total)
	run := call[agents.AgentRunOutput](t, c, "agent_run", obj{"agentId": "summarizer", "sessionId": s.SessionID,
		"input": obj{"text": "Keel is a Go library. It serves MCP."}})
	assert.True(t, run.Success)
	out, _ := run.Output.(map[string]any)
	assert.EqualValues(t, 8, out["words"])
	assert.EqualValues(t, 2, out["sentences"])
	assert.Equal(t, "Keel is a Go library.", out["summary"])
	ag := call[agents.AgentDetails](t, c, "agent_get", obj{"agentId": "summarizer"})
	assert.EqualValues(t, 1, ag.Processed)
	assert.Equal(t, 1, ag.StateKeys, "the summarizer counts its runs in its state")
	assert.Equal(t, "NOT_FOUND", string(callErr(t, c, "agent_get", obj{"agentId": "nobody"}).Code))

	st := call[SessionStatusOutput](t, c, "session_status", obj{"sessionId": s.SessionID})
	assert.Equal(t, "refactor the store", st.Task)
	assert.JSONEq(t, `{"ticket":42}`, string(st.Metadata))
	require.Len(t, st.Participants, 2)
	assert.Equal(t, Participant{AgentID: "planner", Role: "initiator", JoinedAt: st.Participants[0].JoinedAt}, st.Participants[0])
	assert.Equal(t, "summarizer", st.Participants[1].AgentID)
	assert.Equal(t, 1, st.Participants[1].TaskCount)

	// Guards.
	gl := call[GuardListOutput](t, c, "guard_list", obj{})
	assert.Equal(t, 3, gl.Total)
	assert.Equal(t, "default", gl.Policies[0].PolicyID)
	assert.Equal(t, []string{gatePath, gateRadius}, gl.Policies[0].Gates)
	ap := call[GuardApplyOutput](t, c, "guard_apply", obj{"sessionId": s.SessionID, "policyId": "src-only"})
	assert.True(t, ap.Applied)
	assert.Equal(t, []string{"src-only"}, ap.Policies)
	again := call[GuardApplyOutput](t, c, "guard_apply", obj{"sessionId": s.SessionID, "policyId": "src-only"})
	assert.False(t, again.Applied)
	assert.Contains(t, again.Message, "already")
	assert.Equal(t, "NOT_FOUND", string(callErr(t, c, "guard_apply", obj{"sessionId": s.SessionID, "policyId": "nope"}).Code))

	ok := call[GuardCheckOutput](t, c, "guard_check", obj{"sessionId": s.SessionID, "changedPaths": []string{"store.go", "internal/db/sql_test.go"}})
	assert.True(t, ok.Passed, ok.Summary)
	assert.Equal(t, []string{"src-only"}, ok.PolicyIDs)
	deny := call[GuardCheckOutput](t, c, "guard_check", obj{"sessionId": s.SessionID, "changedPaths": []string{"main.go", ".ci/run", "README.md", "../etc/passwd"}})
	assert.False(t, deny.Passed)
	require.Len(t, deny.GateResults, 2)
	var types []string
	for _, v := range deny.GateResults[0].Violations {
		types = append(types, v.Type+" "+v.Path)
	}
	assert.Equal(t, []string{"forbidden_path .ci/run", "not_allowed README.md", "outside_workspace ../etc/passwd"}, types)
	assert.True(t, deny.GateResults[1].Passed)
	secret := call[GuardCheckOutput](t, c, "guard_check", obj{"policyId": "default", "changedPaths": []string{"a/b/.env"}})
	assert.False(t, secret.Passed)
	assert.Contains(t, secret.GateResults[0].Violations[0].Message, `"**/.env"`)
	many := make([]string, 11)
	for i := range many {
		many[i] = "pkg/f" + string(rune('a'+i)) + ".go"
	}
	radius := call[GuardCheckOutput](t, c, "guard_check", obj{"policyId": "src-only", "changedPaths": many})
	assert.False(t, radius.Passed)
	assert.False(t, radius.GateResults[1].Passed)
	assert.Equal(t, "NOT_FOUND", string(callErr(t, c, "guard_check", obj{"policyId": "nope", "changedPaths": []string{}}).Code))

	// Listing and completing.
	sl := call[SessionListOutput](t, c, "session_list", obj{"status": "active"})
	assert.Equal(t, 2, sl.Total)
	assert.Equal(t, other.SessionID, sl.Sessions[0].SessionID, "most recent first")
	assert.Equal(t, 2, sl.Sessions[1].ParticipantCount)
	done := call[SessionCompleteOutput](t, c, "session_complete", obj{"sessionId": s.SessionID, "summary": "done"})
	assert.Equal(t, "completed", done.Status)
	assert.NotEmpty(t, done.CompletedAt)
	assert.Equal(t, 1, call[SessionListOutput](t, c, "session_list", obj{"initiator": "planner", "status": "completed"}).Total)
	se := callErr(t, c, "session_complete", obj{"sessionId": s.SessionID})
	assert.Equal(t, mcp.ErrInvalidArgument, se.Code)
	assert.Equal(t, "SESSION_ALREADY_COMPLETED", se.Details["reason"])
	assert.Equal(t, "SESSION_ALREADY_COMPLETED", callErr(t, c, "agent_run", obj{"agentId": "echo", "sessionId": s.SessionID}).Details["reason"])

	// Unknown sessions.
	for _, tc := range []struct {
		tool string
		args obj
	}{
		{"session_status", obj{"sessionId": "nope"}},
		{"session_complete", obj{"sessionId": "nope"}},
		{"agent_run", obj{"agentId": "echo", "sessionId": "nope"}},
		{"guard_apply", obj{"sessionId": "nope", "policyId": "default"}},
		{"guard_check", obj{"sessionId": "nope", "changedPaths": []string{"a.go"}}},
		{"workflow_run", obj{"workflowId": "echo", "sessionId": "nope"}},
	} {
		if tc.tool == "workflow_run" { // a failed step, reported in the result
			r := call[WorkflowRunOutput](t, c, tc.tool, tc.args)
			assert.False(t, r.Success)
			assert.Contains(t, r.Error.Message, "not found")
			continue
		}
		se := callErr(t, c, tc.tool, tc.args)
		assert.Equal(t, mcp.ErrNotFound, se.Code, tc.tool)
		assert.Equal(t, "SESSION_NOT_FOUND", se.Details["reason"], tc.tool)
	}
}

func TestWorkflowsAndTraces(t *testing.T) { eachStore(t, testWorkflowsAndTraces) }

func testWorkflowsAndTraces(t *testing.T, c *mcp.Client) {
	wl := call[WorkflowListOutput](t, c, "workflow_list", obj{"status": "active"})
	assert.Equal(t, 3, wl.Total)
	all := call[WorkflowListOutput](t, c, "workflow_list", obj{"limit": 2})
	assert.Equal(t, 4, all.Total)
	assert.Len(t, all.Workflows, 2)
	d := call[WorkflowDescribeOutput](t, c, "workflow_describe", obj{"workflowId": "plan-and-summarize"})
	require.Len(t, d.Steps, 2)
	assert.Equal(t, "planner", d.Steps[0].Agent)
	assert.Equal(t, []any{"goal"}, d.InputSchema["required"])

	run := call[WorkflowRunOutput](t, c, "workflow_run", obj{"workflowId": "plan-and-summarize",
		"input": obj{"goal": "Write the schema then add the tools; test everything."}})
	require.True(t, run.Success, run.Error)
	assert.Equal(t, []string{"plan", "summarize"}, run.StepsCompleted)
	out, _ := run.Output.(map[string]any)
	assert.Equal(t, "Write the schema.", out["summary"])
	assert.Equal(t, "Write the schema. Add the tools. Test everything.", out["text"])
	assert.EqualValues(t, 3, out["sentences"], "the planner's three steps feed the summarizer")
	require.NotEmpty(t, run.TraceID)

	failed := call[WorkflowRunOutput](t, c, "workflow_run", obj{"workflowId": "summarize", "input": obj{"text": "   "}})
	assert.False(t, failed.Success)
	assert.Equal(t, "WORKFLOW_STEP_FAILED", failed.Error.Code)
	assert.Equal(t, "summarize", failed.Error.StepID)
	assert.Equal(t, []string{"intake"}, failed.StepsCompleted)
	assert.Equal(t, "WORKFLOW_VALIDATION_ERROR", callErr(t, c, "workflow_run", obj{"workflowId": "summarize"}).Details["reason"])
	assert.Equal(t, "WORKFLOW_NOT_ACTIVE", callErr(t, c, "workflow_run", obj{"workflowId": "release-review", "input": obj{"goal": "x"}}).Details["reason"])
	assert.Equal(t, "WORKFLOW_NOT_FOUND", callErr(t, c, "workflow_run", obj{"workflowId": "nope"}).Details["reason"])
	assert.Equal(t, "WORKFLOW_NOT_FOUND", callErr(t, c, "workflow_describe", obj{"workflowId": "nope"}).Details["reason"])

	// The trace of the successful run: invocation, steps with their agent
	// runs, result.
	tr := call[TraceGetOutput](t, c, "trace_get", obj{"traceId": run.TraceID})
	assert.Equal(t, "workflow_run", tr.Tool)
	assert.Equal(t, "plan-and-summarize", tr.WorkflowID)
	assert.Equal(t, "success", tr.Status)
	var events []string
	for i, e := range tr.Events {
		assert.EqualValues(t, i+1, e.Sequence)
		events = append(events, e.Type+" "+e.Name)
	}
	assert.Equal(t, []string{"tool.invoke workflow_run", "agent.run planner", "step.execute plan",
		"agent.run summarizer", "step.execute summarize", "tool.result workflow_run"}, events)
	assert.Equal(t, len(events), tr.EventCount)
	assert.Equal(t, "NOT_FOUND", string(callErr(t, c, "trace_get", obj{"traceId": "nope"}).Code))

	tl := call[TraceListOutput](t, c, "trace_list", obj{"status": "failure"})
	require.Len(t, tl.Traces, 5) // validation, not active, two not found, and trace_get's not found
	assert.Equal(t, "trace_get", tl.Traces[0].Tool, "most recent first")
	assert.Equal(t, "NOT_FOUND", tl.Traces[0].ErrorCode)
	recent := call[TraceListOutput](t, c, "trace_list", obj{"limit": 3})
	require.Len(t, recent.Traces, 3)
	assert.Equal(t, "trace_list", recent.Traces[0].Tool)
	assert.Equal(t, "running", recent.Traces[0].Status, "the listing call itself is still running")
	assert.Len(t, call[TraceListOutput](t, c, "trace_list", obj{"tool": "workflow_describe"}).Traces, 2)

	one := call[TraceAnalyzeOutput](t, c, "trace_analyze", obj{"traceId": failed.TraceID})
	assert.Equal(t, "trace", one.Scope)
	assert.Equal(t, 4, one.Metrics.Count) // two steps, two agent runs
	assert.Equal(t, 2, one.Metrics.Errors)
	var names []string
	for _, b := range one.Breakdown {
		names = append(names, b.Name)
	}
	assert.ElementsMatch(t, []string{"agent.run:echo", "step.execute:intake", "agent.run:summarizer", "step.execute:summarize"}, names)
	assert.NotEmpty(t, one.Issues)

	agg := call[TraceAnalyzeOutput](t, c, "trace_analyze", obj{})
	assert.Equal(t, "recent", agg.Scope)
	i := slices.IndexFunc(agg.Breakdown, func(s TraceStats) bool { return s.Name == "workflow_run" })
	require.GreaterOrEqual(t, i, 0)
	wr := agg.Breakdown[i]
	assert.Equal(t, 5, wr.Count) // a failed step is a successful call
	assert.Equal(t, 3, wr.Errors)
	assert.InDelta(t, 0.6, wr.ErrorRate, 1e-9)
	assert.GreaterOrEqual(t, wr.MaxDurationMs, wr.AvgDurationMs)
	assert.Contains(t, agg.Summary, "tool calls")
	assert.Equal(t, "NOT_FOUND", string(callErr(t, c, "trace_analyze", obj{"traceId": "nope"}).Code))
}

func TestResourcesAndPrompts(t *testing.T) { eachStore(t, testResourcesAndPrompts) }

func testResourcesAndPrompts(t *testing.T, c *mcp.Client) {
	ctx := context.Background()
	call[MemoryStoreOutput](t, c, "memory_store", obj{"key": "k1", "value": obj{"a": 1}})
	s := call[SessionCreateOutput](t, c, "session_create", obj{"initiator": "echo", "task": "t"})
	run := call[WorkflowRunOutput](t, c, "workflow_run", obj{"workflowId": "echo", "input": obj{"x": 1}})
	assert.Equal(t, obj{"x": float64(1)}, run.Output)

	read := func(uri string, v any) {
		t.Helper()
		res, err := c.ReadResource(ctx, uri)
		require.NoError(t, err, uri)
		require.Len(t, res.Contents, 1)
		assert.Equal(t, jsonMIME, res.Contents[0].MimeType)
		require.NotNil(t, res.Contents[0].Text)
		require.NoError(t, json.Unmarshal([]byte(*res.Contents[0].Text), v), uri)
	}
	var mem MemoryListOutput
	read("memory://entries", &mem)
	require.Equal(t, 1, mem.Total)
	assert.Equal(t, "k1", mem.Entries[0].Key)
	var sess SessionListOutput
	read("sessions://active", &sess)
	require.Equal(t, 1, sess.Total)
	assert.Equal(t, s.SessionID, sess.Sessions[0].SessionID)
	var traces TraceListOutput
	read("traces://recent", &traces)
	require.Len(t, traces.Traces, 3)
	assert.Equal(t, "workflow_run", traces.Traces[0].Tool)
	var av agents.AgentListOutput
	read("agents://available", &av)
	assert.Equal(t, 3, av.Total)

	prompts := []struct {
		name string
		args map[string]string
		want string
	}{
		{"run_workflow", map[string]string{"workflowId": "summarize", "input": `{"text":"hi"}`}, `Please execute the 'summarize' workflow with input: {"text":"hi"}`},
		{"analyze_trace", map[string]string{"traceId": run.TraceID}, `trace_get with traceId "` + run.TraceID + `"`},
		{"search_memory", map[string]string{"query": "k1", "namespace": "default"}, `namespace default for "k1"`},
		{"list_agents", map[string]string{"team": "text", "enabled": "true"}, "team text and enabled=true"},
		{"run_agent", map[string]string{"agentId": "planner"}, `run the agent "planner"`},
	}
	for _, p := range prompts {
		res, err := c.GetPrompt(ctx, p.name, p.args)
		require.NoError(t, err, p.name)
		require.Len(t, res.Messages, 1, p.name)
		assert.Equal(t, mcp.RoleUser, res.Messages[0].Role)
		assert.Contains(t, res.Messages[0].Content.Text, p.want, p.name)
	}
	for _, bad := range []struct {
		name string
		args map[string]string
	}{
		{"run_workflow", map[string]string{"workflowId": "nope"}},
		{"run_workflow", map[string]string{"workflowId": "echo", "input": "[1]"}},
		{"run_agent", map[string]string{"agentId": "nope"}},
		{"list_agents", map[string]string{"enabled": "maybe"}},
		{"analyze_trace", nil},
	} {
		_, err := c.GetPrompt(ctx, bad.name, bad.args)
		var rpc *mcp.Error
		require.ErrorAs(t, err, &rpc, bad.name)
		assert.EqualValues(t, mcp.CodeInvalidParams, rpc.Code, bad.name)
	}
}
