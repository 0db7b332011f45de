package mcp_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// A Client at revision 2026-07-28 calls server/discover instead of
// initialize, and answers an input-required result with its own handlers
// (here OnElicitation) before sending the request again. The server is
// scripted: it prints what the client sends and answers by hand.
func ExampleClient_modern() {
	ct, st := transport.NewPipe(nil)
	go func() { // the scripted server
		ctx := context.Background()
		read := func() (id jsontext.Value, method string, params map[string]jsontext.Value) {
			b, _ := st.Read(ctx)
			var m struct {
				ID     jsontext.Value            `json:"id"`
				Method string                    `json:"method"`
				Params map[string]jsontext.Value `json:"params"`
			}
			_ = json.Unmarshal(b, &m, json.RejectUnknownMembers(false))
			return m.ID, m.Method, m.Params
		}
		reply := func(id jsontext.Value, result string) {
			_ = st.Write(ctx, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result))
		}
		id, method, _ := read()
		fmt.Println("server got", method)
		reply(id, `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},
			"ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"scripted","version":"1"}}}`)
		id, method, _ = read()
		fmt.Println("server got", method)
		reply(id, `{"resultType":"input_required","requestState":"s1",
			"inputRequests":{"ok":{"method":"elicitation/create","params":{"message":"Proceed?","requestedSchema":{"type":"object"}}}}}`)
		id, method, params := read()
		fmt.Println("server got", method, "with", string(params["inputResponses"]), "and", string(params["requestState"]))
		reply(id, `{"resultType":"complete","content":[{"type":"text","text":"done"}]}`)
	}()

	c := mcp.NewClient(&mcp.ClientOptions{
		ProtocolVersion: mcp.Version20260728,
		Logger:          slog.New(slog.DiscardHandler),
		OnElicitation: func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			fmt.Println("client asked:", p.Message)
			return &mcp.ElicitResult{Action: mcp.ElicitAccept}, nil
		},
	})
	ctx := context.Background()
	if err := c.Connect(ctx, ct); err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	fmt.Println("connected to", c.InitializeResult().ServerInfo.Name, "at", c.ProtocolVersion())
	res, err := c.CallTool(ctx, "go", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("result:", res.Content[0].Text)
	// Output:
	// server got server/discover
	// connected to scripted at 2026-07-28
	// server got tools/call
	// client asked: Proceed?
	// server got tools/call with {"ok":{"action":"accept"}} and "s1"
	// result: done
}
