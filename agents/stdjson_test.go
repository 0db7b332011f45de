package agents_test

import (
	"testing"

	"github.com/keelmcp/keel/agents"
	"github.com/keelmcp/keel/internal/stdjsontest"
)

// stdJSONTypes holds the zero value of every exported type of the package
// with a JSON form; TestStandardJSONCoversEveryType keeps it complete.
var stdJSONTypes = []any{
	agents.AgentDetails{},
	agents.AgentGetInput{},
	agents.AgentListInput{},
	agents.AgentListOutput{},
	agents.AgentProxyResult{},
	agents.AgentRunInput{},
	agents.AgentRunOutput{},
	agents.AgentSummary{},
	agents.Message{},
}

// TestStandardJSONTypes encodes every exported type, as its zero value and
// with every field set, with encoding/json and with keel's codec, and
// requires the same bytes and the same decoded values.
func TestStandardJSONTypes(t *testing.T) { stdjsontest.CheckAll(t, stdJSONTypes, nil) }

// TestStandardJSONCoversEveryType requires stdJSONTypes to list every
// exported type of the package that has a JSON form.
func TestStandardJSONCoversEveryType(t *testing.T) { stdjsontest.RequireCovers(t, ".", stdJSONTypes) }
