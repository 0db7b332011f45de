package agents

import (
	"context"
	"encoding/json"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// AgentProxyToolType is the toolType of dynamically registered agent proxy
// tools (admin/registerTool).
const AgentProxyToolType = "agentProxy"

// AgentProxySchema is the canonical input schema of the agentProxy tool
// type, byte for byte: a client-supplied inputSchema for this
// type must equal it.
const AgentProxySchema = `{"type":"object","properties":{"targetAgentId":{"type":"string"},"message":{"type":"object"}},"required":["targetAgentId","message"]}`

// DefaultAgentProxyName is the name of the definition AgentProxyTool
// returns; dynamic registration replaces it with the requested one.
const DefaultAgentProxyName = "agent_proxy"

// AgentProxyResult is the structured result of an agentProxy tool: the
// target and the agent's response.
type AgentProxyResult struct {
	TargetAgentID string `json:"targetAgentId"`
	Response      any    `json:"response"`
}

// AgentProxyTool returns an agentProxy tool for c: a definition named
// DefaultAgentProxyName whose input schema is AgentProxySchema exactly (the
// caller owns the definition and may rename it and change its description),
// and the raw handler to give registry.Registry.AddTool with it.
//
// The handler sends message — an agent message {"type": string (required),
// "payload": any JSON, "sourceAgentId": string, "meta": {string: string}},
// other members refused — to targetAgentId with the call's context and
// returns an AgentProxyResult as structuredContent and, as text, the same
// JSON. Errors are those of RegisterTools' agent_run, plus INVALID_ARGUMENT
// (reason INVALID_MESSAGE) for a malformed message.
func AgentProxyTool(c *Coordinator) (*mcp.Tool, registry.ToolHandler) {
	def := &mcp.Tool{
		Name:        DefaultAgentProxyName,
		Description: "Forwards message to the agent targetAgentId and returns the agent's response.",
		InputSchema: json.RawMessage(AgentProxySchema),
	}
	return def, func(ctx context.Context, call *mcp.ToolCall, args json.RawMessage) (*mcp.CallToolResult, error) {
		target, msg, se := decodeProxyArgs(jsontext.Value(args))
		if se != nil {
			return nil, se
		}
		res, err := c.Send(ctx, target, msg)
		if err != nil {
			return nil, toolError(target, err)
		}
		b, err := jsonv2.Marshal(AgentProxyResult{TargetAgentID: target, Response: res}, jsonv2.Deterministic(true))
		if err != nil {
			return nil, mcp.NewToolError(mcp.ErrInternal,
				"the response of agent "+quote(target)+" cannot be encoded as JSON: "+err.Error(),
				map[string]any{reasonKey: ReasonResultNotSerializable, agentIDKey: target})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.Text(string(b))}, StructuredContent: b}, nil
	}
}

// proxyArgs and proxyMessage are the wire forms of the agentProxy input.
type proxyArgs struct {
	TargetAgentID string         `json:"targetAgentId"`
	Message       jsontext.Value `json:"message"`
}

type proxyMessage struct {
	Type          *string           `json:"type"`
	Payload       jsontext.Value    `json:"payload,omitzero"`
	SourceAgentID string            `json:"sourceAgentId,omitempty"`
	Meta          map[string]string `json:"meta,omitempty"`
}

// decodeProxyArgs decodes and checks the agentProxy arguments; members other
// than targetAgentId and message are ignored, as the canonical schema
// allows them.
func decodeProxyArgs(args jsontext.Value) (string, Message, *mcp.StructuredError) {
	var in proxyArgs
	if err := jsonv2.Unmarshal(args, &in); err != nil {
		return "", Message{}, invalidMessage("arguments must be {targetAgentId: string, message: object}: " + err.Error())
	}
	if in.TargetAgentID == "" {
		return "", Message{}, invalidMessage("targetAgentId must be a non-empty string")
	}
	if in.Message.Kind() != '{' {
		return "", Message{}, invalidMessage("message must be an object")
	}
	var pm proxyMessage
	if err := jsonv2.Unmarshal(in.Message, &pm, jsonv2.RejectUnknownMembers(true)); err != nil {
		return "", Message{}, invalidMessage(`message must be an agent message {"type": string, "payload": any, "sourceAgentId": string, "meta": {string: string}}: ` + err.Error())
	}
	if pm.Type == nil || *pm.Type == "" {
		return "", Message{}, invalidMessage(`message.type is required: a non-empty string naming what the message asks for`)
	}
	msg := Message{Type: *pm.Type, SourceAgentID: pm.SourceAgentID, Meta: pm.Meta}
	if pm.Payload != nil {
		msg.Payload = json.RawMessage(pm.Payload)
	}
	return in.TargetAgentID, msg, nil
}

func invalidMessage(text string) *mcp.StructuredError {
	return mcp.NewToolError(mcp.ErrInvalidArgument, "agentProxy: "+text, map[string]any{reasonKey: ReasonInvalidMessage})
}

func quote(s string) string { return strconv.Quote(s) }
