package main

import (
	"context"

	"github.com/go-json-experiment/json"

	"github.com/keelmcp/keel/agents"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// The resources: read-only JSON views of the server's data, computed on
// each read.

const jsonMIME = "application/json"

// jsonResource registers uri, whose contents are the JSON of what get
// returns.
func jsonResource(reg *registry.Registry, uri, name, title, description string, get func(ctx context.Context) (any, error)) {
	if err := reg.AddResource(&mcp.Resource{URI: uri, Name: name, Title: title, Description: description, MimeType: jsonMIME},
		func(ctx context.Context, uri string) ([]mcp.ResourceContents, error) {
			v, err := get(ctx)
			if err != nil {
				return nil, err
			}
			b, err := json.Marshal(v, json.Deterministic(true))
			if err != nil {
				return nil, err
			}
			return []mcp.ResourceContents{mcp.TextResourceContents(uri, jsonMIME, string(b))}, nil
		}); err != nil {
		panic(err)
	}
}

func registerResources(reg *registry.Registry, st *store, traces *traceSink, c *agents.Coordinator) {
	jsonResource(reg, "memory://entries", "memory-entries", "Memory entries",
		"All memory entries (without values), most recent first: {entries, total, hasMore}",
		func(ctx context.Context) (any, error) { return st.memoryList(ctx, MemoryListInput{Limit: 1000}) })
	jsonResource(reg, "sessions://active", "active-sessions", "Active sessions",
		"The active sessions, most recent first: {sessions, total}",
		func(ctx context.Context) (any, error) {
			return st.sessionList(ctx, SessionListInput{Status: sessionActive, Limit: 1000})
		})
	jsonResource(reg, "traces://recent", "recent-traces", "Recent traces",
		"The 50 most recent traces (tool calls): {traces}",
		func(ctx context.Context) (any, error) {
			tr, err := traces.recentTraces(ctx, TraceListInput{Limit: 50})
			return TraceListOutput{Traces: tr}, err
		})
	jsonResource(reg, "agents://available", "available-agents", "Available agents",
		"The enabled agents: {agents, total}",
		func(ctx context.Context) (any, error) {
			out := agents.AgentListOutput{Agents: []agents.AgentSummary{}}
			for _, st := range c.Agents() {
				if st.Info.Disabled {
					continue
				}
				caps := st.Info.Capabilities
				if caps == nil {
					caps = []string{}
				}
				out.Agents = append(out.Agents, agents.AgentSummary{AgentID: st.ID, Name: st.Info.Name,
					Description: st.Info.Description, Team: st.Info.Team, Enabled: true, Capabilities: caps, QueueLength: st.QueueLength})
			}
			out.Total = len(out.Agents)
			return out, nil
		})
}
