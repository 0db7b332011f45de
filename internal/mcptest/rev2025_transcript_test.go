//go:build !keel_omit2025

package mcptest

// The runner's own tests that play 2025 sessions (initialize, then calls):
// a build without the 2025 rules (keel_omit2025) answers them -32022.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

const initLines = `> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
< {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"keel-test","version":"0.1.0"}}}
> {"jsonrpc":"2.0","method":"notifications/initialized"}
`

func TestSessionPasses(t *testing.T) {
	errs, _ := play(t, &ServerConfig{Tools: []string{ToolEcho}}, initLines+`
# comments and blank lines are ignored
> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}
< {"result":{"content":[{"text":"hi","type":"text"}]},"id":1,"jsonrpc":"2.0"}
>q "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}"
<   {"jsonrpc":"2.0","id":2,"result":{}}
`, nil)
	assert.Empty(t, errs)
}

func TestSessionUpdate(t *testing.T) {
	script := `# a comment
> {"jsonrpc":"2.0","id":1,"method":"ping"}
< {"stale":true}
< {"stale":2}
> {"jsonrpc":"2.0","method":"notifications/initialized"}
> {"jsonrpc":"2.0","id":2,"method":"tools/list"}
`
	errs, out := play(t, nil, script, &TranscriptOptions{Update: true, Timeout: 300 * time.Millisecond})
	assert.Empty(t, errs)
	assert.Equal(t, `# a comment
> {"jsonrpc":"2.0","id":1,"method":"ping"}
< {"jsonrpc":"2.0","id":1,"result":{}}
> {"jsonrpc":"2.0","method":"notifications/initialized"}
> {"jsonrpc":"2.0","id":2,"method":"tools/list"}
< {"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"Not initialized","data":{"code":"NOT_INITIALIZED","message":"method \"tools/list\" received in state STARTING; send initialize and notifications/initialized first","correlationId":"id-1"}}}
`, out)
}
