package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// A tool that needs the user's confirmation returns mcp.InputRequired
// instead of calling the client. A 2026-07-28 client (here keel's own,
// answering with OnElicitation) fulfils the request and calls again; the
// handler then finds the answer, and its state, in mcp.InputFromContext.
// A legacy session would be asked by the server itself, with the same
// handler.
func ExampleInputRequired() {
	type DeleteIn struct {
		Path string `json:"path"`
	}
	reg := registry.New(nil)
	registry.MustRegister(reg, "delete", "Deletes a file after asking",
		func(ctx context.Context, in DeleteIn) (string, error) {
			in2 := mcp.InputFromContext(ctx)
			answer, ok := in2.Elicit("confirm")
			if !ok {
				return "", mcp.InputRequired(map[string]mcp.InputRequest{
					"confirm": mcp.ElicitInput(mcp.ElicitParams{Message: "Delete " + in.Path + "?",
						RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)}),
				}, []byte(in.Path))
			}
			if answer.Action != mcp.ElicitAccept {
				return "kept " + string(in2.State), nil
			}
			return "deleted " + string(in2.State), nil
		}, nil)

	ct, st := transport.NewPipe(nil)
	srv := mcp.NewServer(&mcp.ServerOptions{Tools: reg, Logger: slog.New(slog.DiscardHandler)})
	go srv.Run(context.Background(), st)

	c := mcp.NewClient(&mcp.ClientOptions{
		ProtocolVersion: mcp.Version20260728,
		Logger:          slog.New(slog.DiscardHandler),
		OnElicitation: func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			fmt.Println("asked:", p.Message)
			return &mcp.ElicitResult{Action: mcp.ElicitAccept}, nil
		},
	})
	ctx := context.Background()
	if err := c.Connect(ctx, ct); err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	res, err := c.CallTool(ctx, "delete", map[string]any{"path": "/tmp/old.log"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// asked: Delete /tmp/old.log?
	// deleted /tmp/old.log
}
