package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/keelmcp/keel/agents"
	"github.com/keelmcp/keel/mcp"
)

// The demo agents. Each takes a JSON object and returns one, so that
// workflows can chain them: every step's output is the next step's input.

// textInput is what the text agents read.
type textInput struct {
	Text string   `json:"text"`
	Goal string   `json:"goal"`
	Plan []string `json:"plan"`
}

func registerAgents(c *agents.Coordinator) error {
	for _, a := range []struct {
		id   string
		h    agents.Handler
		info agents.AgentInfo
	}{
		{"echo", echoAgent, agents.AgentInfo{Name: "Echo", Description: "Returns its input unchanged",
			Team: "core", Version: "1.0.0", Capabilities: []string{"echo"}, Tags: []string{"demo"}}},
		{"summarizer", summarizerAgent, agents.AgentInfo{Name: "Summarizer",
			Description: "Counts the words and sentences of input.text and keeps its first sentence as a summary",
			Team:        "text", Version: "1.0.0", Capabilities: []string{"summarize", "count"}, Tags: []string{"demo"}}},
		{"planner", plannerAgent, agents.AgentInfo{Name: "Planner",
			Description: "Splits input.goal (or input.text) into numbered plan steps",
			Team:        "text", Version: "1.0.0", Capabilities: []string{"plan"}, Tags: []string{"demo"}}},
	} {
		if err := c.Register(a.id, a.h, &a.info); err != nil {
			return err
		}
	}
	return nil
}

func echoAgent(_ context.Context, msg agents.Message, _ *agents.AgentContext) (any, error) {
	out := map[string]any{}
	if err := msg.DecodePayload(&out); err != nil {
		return nil, mcp.NewToolError(mcp.ErrInvalidArgument, "echo: input must be an object: "+err.Error(), nil)
	}
	return out, nil
}

func summarizerAgent(_ context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
	var in textInput
	if err := msg.DecodePayload(&in); err != nil {
		return nil, mcp.NewToolError(mcp.ErrInvalidArgument, "summarizer: "+err.Error(), nil)
	}
	text := in.Text
	if strings.TrimSpace(text) == "" {
		text = strings.Join(in.Plan, " ")
	}
	words := strings.Fields(text)
	if len(words) == 0 {
		return nil, mcp.NewToolError(mcp.ErrInvalidArgument, `summarizer: input has no "text" to summarize`, nil)
	}
	sentences := splitSentences(text)
	summary := sentences[0]
	if len(summary) > 200 {
		summary = summary[:200] + "…"
	}
	var runs int
	if _, err := ac.State.Decode("runs", &runs); err != nil {
		return nil, err
	}
	if err := ac.State.Set("runs", runs+1); err != nil {
		return nil, err
	}
	return map[string]any{"text": text, "words": len(words), "sentences": len(sentences), "summary": summary}, nil
}

func plannerAgent(_ context.Context, msg agents.Message, _ *agents.AgentContext) (any, error) {
	var in textInput
	if err := msg.DecodePayload(&in); err != nil {
		return nil, mcp.NewToolError(mcp.ErrInvalidArgument, "planner: "+err.Error(), nil)
	}
	goal := in.Goal
	if strings.TrimSpace(goal) == "" {
		goal = in.Text
	}
	var parts []string
	for _, s := range splitSentences(goal) {
		for _, p := range strings.Split(strings.ReplaceAll(s, " then ", ";"), ";") {
			if p = strings.TrimSpace(strings.TrimRight(p, ".!?")); p != "" {
				parts = append(parts, p)
			}
		}
	}
	if len(parts) == 0 {
		return nil, mcp.NewToolError(mcp.ErrInvalidArgument, `planner: input has no "goal" to plan`, nil)
	}
	plan := make([]string, len(parts))
	for i, p := range parts {
		parts[i] = strings.ToUpper(p[:1]) + p[1:] + "."
		plan[i] = fmt.Sprintf("%d. %s", i+1, parts[i])
	}
	// text is the plan as prose, for a summarizer step.
	return map[string]any{"goal": goal, "plan": plan, "steps": len(plan), "text": strings.Join(parts, " ")}, nil
}

// splitSentences splits text after '.', '!' and '?' (at least one
// sentence, possibly empty).
func splitSentences(text string) []string {
	var out []string
	start := 0
	for i, r := range text {
		if r == '.' || r == '!' || r == '?' {
			if s := strings.TrimSpace(text[start : i+1]); s != "" && s != "." {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(text[start:]); s != "" {
		out = append(out, s)
	}
	if len(out) == 0 {
		out = []string{""}
	}
	return out
}

// agentMiddleware records sessions and traces around every agent run: a
// message carrying a sessionId (agent_run's sessionId, workflow_run's)
// needs an active session and counts as a task of the agent in it; each run
// becomes an agent.run event of the tool call's trace.
func agentMiddleware(st *store, traces *traceSink) agents.Middleware {
	return func(next agents.Handler) agents.Handler {
		return func(ctx context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
			sid := msg.Meta[agents.MetaSessionID]
			start := time.Now()
			var (
				res any
				err error
			)
			if sid != "" {
				err = st.participate(ctx, sid, ac.AgentID)
			}
			if err == nil {
				res, err = next(ctx, msg, ac)
			}
			payload := map[string]any{"messageType": msg.Type}
			if sid != "" {
				payload["sessionId"] = sid
			}
			traces.event(ctx, eventAgent, ac.AgentID, err, time.Since(start), payload)
			return res, err
		}
	}
}
