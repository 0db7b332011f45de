package mcp_test

import (
	"encoding/json"
	"fmt"

	"github.com/keelmcp/keel/mcp"
)

// The protocol types encode with encoding/json exactly as keel writes them
// on the wire, and decode back with keel's rules.
func Example_standardJSON() {
	res := mcp.CallToolResult{
		Content:           []mcp.Content{mcp.Text("18°C in Paris")},
		StructuredContent: json.RawMessage(`{"celsius":18}`),
	}
	b, err := json.Marshal(res)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(b))

	var back mcp.CallToolResult
	if err := json.Unmarshal(b, &back); err != nil {
		panic(err)
	}
	fmt.Println(back.Content[0].Type, back.Content[0].Text, string(back.StructuredContent))

	// Member names are case-sensitive and a duplicate is an error, as on
	// the wire.
	var p mcp.CallToolParams
	err = json.Unmarshal([]byte(`{"name":"a","Name":"b"}`), &p)
	fmt.Println(p.Name, err == nil)
	err = json.Unmarshal([]byte(`{"name":"a","name":"b"}`), &p)
	fmt.Println(err != nil)
	// Output:
	// {"content":[{"type":"text","text":"18°C in Paris"}],"structuredContent":{"celsius":18}}
	// text 18°C in Paris {"celsius":18}
	// a true
	// true
}
