package mcp_test

import (
	"fmt"

	"github.com/go-json-experiment/json"

	"github.com/keelmcp/keel/mcp"
)

// A task's ttl is always written: null when the task is kept without limit.
func ExampleTask() {
	poll := int64(1000)
	task := mcp.Task{
		TaskID:        "786512e2-9e0d-44bd-8f29-789f320fe840",
		Status:        mcp.TaskStatusWorking,
		StatusMessage: "indexing 3 of 10 files",
		CreatedAt:     "2025-11-25T10:30:00Z",
		LastUpdatedAt: "2025-11-25T10:30:05Z",
		PollInterval:  &poll,
	}
	b, err := json.Marshal(&mcp.GetTaskResult{Task: task})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(b))
	fmt.Println("terminal:", task.Status.Terminal())
	// Output:
	// {"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","status":"working","statusMessage":"indexing 3 of 10 files","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:30:05Z","ttl":null,"pollInterval":1000}
	// terminal: false
}

// A sampling message holding one block is written as that block, the form
// every revision accepts; several blocks are written as an array
// (2025-11-25).
func ExampleSamplingMessageContent() {
	one := mcp.SamplingMessage{Role: mcp.RoleUser, Content: mcp.SamplingMessageContent{mcp.SamplingText("Weather in Paris?")}}
	two := mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.SamplingMessageContent{
		mcp.SamplingText("Let me check."),
		{Type: mcp.ContentToolUse, ID: "call_1", Name: "get_weather", Input: []byte(`{"city":"Paris"}`)},
	}}
	for _, m := range []mcp.SamplingMessage{one, two} {
		b, err := json.Marshal(&m)
		if err != nil {
			panic(err)
		}
		fmt.Println(string(b))
	}
	// Output:
	// {"role":"user","content":{"type":"text","text":"Weather in Paris?"}}
	// {"role":"assistant","content":[{"type":"text","text":"Let me check."},{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris"}}]}
}

// LoggingLevel.AtLeast is the filter of logging/setLevel.
func ExampleLoggingLevel_AtLeast() {
	threshold := mcp.LoggingLevelWarning // from logging/setLevel
	for _, l := range []mcp.LoggingLevel{mcp.LoggingLevelInfo, mcp.LoggingLevelWarning, mcp.LoggingLevelCritical} {
		fmt.Println(l, l.AtLeast(threshold))
	}
	// Output:
	// info false
	// warning true
	// critical true
}
