package agents

import (
	"reflect"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// The tool results below write every member keel's codec writes (an empty
// list as [], never null; a zero limit as 0): MarshalJSON gives
// encoding/json the same bytes. Each xxxFields type is its result without
// the method. Their JSON stays their tagged fields, so the tools' derived
// schemas follow their structure.
type (
	agentDetailsFields    AgentDetails
	agentListInputFields  AgentListInput
	agentListOutputFields AgentListOutput
	agentSummaryFields    AgentSummary
)

func init() {
	jsonrpc.RegisterFieldShaped(reflect.TypeFor[AgentDetails](), reflect.TypeFor[AgentListInput](),
		reflect.TypeFor[AgentListOutput](), reflect.TypeFor[AgentSummary]())
}

// MarshalJSON returns the JSON keel's codec writes for d.
func (d AgentDetails) MarshalJSON() ([]byte, error) {
	return jsonrpc.Marshal((*agentDetailsFields)(&d))
}

// MarshalJSON returns the JSON keel's codec writes for in.
func (in AgentListInput) MarshalJSON() ([]byte, error) {
	return jsonrpc.Marshal((*agentListInputFields)(&in))
}

// MarshalJSON returns the JSON keel's codec writes for out.
func (out AgentListOutput) MarshalJSON() ([]byte, error) {
	return jsonrpc.Marshal((*agentListOutputFields)(&out))
}

// MarshalJSON returns the JSON keel's codec writes for s.
func (s AgentSummary) MarshalJSON() ([]byte, error) {
	return jsonrpc.Marshal((*agentSummaryFields)(&s))
}
