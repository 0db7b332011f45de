//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// startExample runs srv over an in-memory pipe and connects a client with
// copts; stop closes the client and waits for the server.
func startExample(srv *mcp.Server, copts *mcp.ClientOptions) (c *mcp.Client, stop func()) {
	ctx := context.Background()
	clientEnd, serverEnd := transport.NewPipe(nil)
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, serverEnd) }()
	c = mcp.NewClient(copts)
	if err := c.Connect(ctx, clientEnd); err != nil {
		panic(err)
	}
	return c, func() { c.Close(); <-done }
}

// A tool reports progress against the progress token of its request; the
// client receives the notifications before the result. A value that does
// not increase is refused and not sent.
func ExampleReportProgress() {
	type In struct {
		Files int `json:"files"`
	}
	reg := registry.New(nil)
	registry.MustRegister(reg, "index", "Indexes files",
		func(ctx context.Context, in In) (string, error) {
			for i := 1; i <= in.Files; i++ {
				if err := mcp.ReportProgress(ctx, float64(i), float64(in.Files), fmt.Sprintf("file %d", i)); err != nil {
					return "", err
				}
			}
			err := mcp.ReportProgress(ctx, 1, float64(in.Files), "again")
			return fmt.Sprintf("indexed %d files; repeat: %v", in.Files, err), nil
		}, nil)
	srv := mcp.NewServer(&mcp.ServerOptions{Tools: reg})
	c, stop := startExample(srv, &mcp.ClientOptions{OnProgress: func(p *mcp.ProgressParams) {
		fmt.Printf("progress %s: %v/%v %s\n", p.ProgressToken, p.Progress, *p.Total, p.Message)
	}})
	defer stop()

	res, err := c.CallToolWithParams(context.Background(), &mcp.CallToolParams{Name: "index",
		Arguments: json.RawMessage(`{"files":3}`), Meta: mcp.Meta{mcp.MetaProgressToken: "idx-1"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// progress "idx-1": 1/3 file 1
	// progress "idx-1": 2/3 file 2
	// progress "idx-1": 3/3 file 3
	// indexed 3 files; repeat: mcp: progress does not increase: 1 after 3
}

// A tool asks the user for input through the client (elicitation, form
// mode). The client answers with its OnElicitation handler, which declares
// the elicitation capability.
func ExampleSession_Elicit() {
	type Out struct {
		Greeting string `json:"greeting"`
	}
	reg := registry.New(nil)
	registry.MustRegister(reg, "greet", "Greets the user by name",
		func(ctx context.Context, _ struct{}) (Out, error) {
			res, err := mcp.SessionFromContext(ctx).Elicit(ctx, &mcp.ElicitParams{
				Message:         "What is your name?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
			})
			if err != nil {
				return Out{}, err
			}
			if res.Action != mcp.ElicitAccept {
				return Out{Greeting: "Hello, stranger (" + res.Action + ")"}, nil
			}
			return Out{Greeting: fmt.Sprintf("Hello, %v!", res.Content["name"])}, nil
		}, nil)
	srv := mcp.NewServer(&mcp.ServerOptions{Tools: reg})

	answers := []*mcp.ElicitResult{
		{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Ann"}},
		{Action: mcp.ElicitDecline},
	}
	c, stop := startExample(srv, &mcp.ClientOptions{
		OnElicitation: func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			fmt.Println("client asked:", p.Message)
			a := answers[0]
			answers = answers[1:]
			return a, nil
		},
	})
	defer stop()

	for range 2 {
		res, err := c.CallTool(context.Background(), "greet", nil)
		if err != nil {
			panic(err)
		}
		out, _ := mcp.DecodeStructured[Out](res)
		fmt.Println(out.Greeting)
	}

	// A client without a handler declares no elicitation: the tool's
	// Elicit fails with a *CapabilityError and nothing is sent.
	plain, stopPlain := startExample(srv, nil)
	defer stopPlain()
	_, err := plain.CallTool(context.Background(), "greet", nil)
	fmt.Println(err)
	// Output:
	// client asked: What is your name?
	// Hello, Ann!
	// client asked: What is your name?
	// Hello, stranger (decline)
	// INTERNAL: mcp: elicitation/create not sent: the client did not declare the elicitation capability
}
