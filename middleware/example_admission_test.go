package middleware_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// connectExample serves tools over an in-memory pipe and returns a
// connected client.
func connectExample(ctx context.Context, tools mcp.ToolSource) *mcp.Client {
	quiet := slog.New(slog.DiscardHandler)
	ct, st := transport.NewPipe(nil)
	go mcp.NewServer(&mcp.ServerOptions{Tools: tools, Logger: quiet}).Run(ctx, st)
	c := mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: clientVersion, Logger: quiet})
	if err := c.Connect(ctx, ct); err != nil {
		panic(err)
	}
	return c
}

func toolNames(ctx context.Context, c *mcp.Client) []string {
	tools, err := c.ListAllTools(ctx)
	if err != nil {
		panic(err)
	}
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return names
}

// One admission policy gates tools at list time and at call time. Here a
// server mode decides which tools exist, and a trust gateway lets
// destructive tools run only while it is TRUSTED.
func Example_admission() {
	type none struct{}
	reg := registry.New(nil)
	registry.MustRegister(reg, "read_notes", "Reads the notes.",
		func(context.Context, none) (string, error) { return "3 notes", nil }, &registry.ToolOptions{ReadOnly: true})
	registry.MustRegister(reg, "add_note", "Adds a note.",
		func(context.Context, none) (string, error) { return "added", nil }, nil)
	registry.MustRegister(reg, "delete_notes", "Deletes every note.",
		func(context.Context, none) (string, error) { return "deleted", nil }, &registry.ToolOptions{Destructive: true})

	ctx := context.Background()
	for _, mode := range []middleware.Mode{middleware.ModeFull, middleware.ModeReadOnly} {
		trust := middleware.NewTrustGateway(middleware.TrustUntrusted)
		chain := middleware.Standard(reg, &middleware.StandardOptions{
			Admission: middleware.AllOf(middleware.ModePolicy(mode), trust.Policy()),
		})
		c := connectExample(ctx, chain)
		fmt.Println(mode, "lists", toolNames(ctx, c))
		for _, name := range []string{"add_note", "delete_notes"} {
			res, err := c.CallTool(ctx, name, nil)
			if err != nil {
				fmt.Println(" ", name, "→", err)
				continue
			}
			fmt.Println(" ", name, "→", res.Content[0].Text)
		}
		trust.Set(middleware.TrustTrusted)
		if res, err := c.CallTool(ctx, "delete_notes", nil); err == nil {
			fmt.Println("  delete_notes, TRUSTED →", res.Content[0].Text)
		}
		c.Close()
	}
	// Output:
	// FULL lists [add_note delete_notes read_notes]
	//   add_note → added
	//   delete_notes → PERMISSION_DENIED: tool "delete_notes" is destructive and runs only while the trust state is TRUSTED (it is UNTRUSTED)
	//   delete_notes, TRUSTED → deleted
	// READONLY lists [read_notes]
	//   add_note → mcp: JSON-RPC error -32602: unknown tool "add_note"
	//   delete_notes → mcp: JSON-RPC error -32602: unknown tool "delete_notes"
}

// The administrative tools exist only when both switches are
// on; in token mode they are used by presenting the token held by an
// environment variable (here in the call's _meta), and stay out of
// tools/list for requests that do not present it.
func ExampleNewAdmin() {
	reg := registry.New(nil)
	admin, err := middleware.NewAdmin(reg, &middleware.AdminOptions{
		AdminRegistrationEnabled:   true, // tools.adminRegistrationEnabled
		DynamicRegistrationEnabled: true, // security.dynamicRegistrationEnabled
		Policy:                     middleware.AdminToken,
		TokenEnvVar:                "KEEL_ADMIN_TOKEN",
		LookupEnv:                  func(string) (string, bool) { return "let-me-in", true }, // os.LookupEnv by default
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	c := connectExample(ctx, middleware.Standard(reg, &middleware.StandardOptions{Admin: admin}))
	defer c.Close()
	fmt.Println("tools:", toolNames(ctx, c))

	register := func(token string) error {
		_, err := c.CallToolWithParams(ctx, &mcp.CallToolParams{
			Name:      middleware.AdminRegisterToolName,
			Arguments: []byte(`{"name":"shout","description":"Echoes a message.","toolType":"echo"}`),
			Meta:      mcp.Meta{middleware.MetaAdminToken: token},
		})
		return err
	}
	fmt.Println("wrong token:", register("guess"))
	fmt.Println("right token:", register("let-me-in"))
	res, _ := c.CallTool(ctx, "shout", map[string]string{"message": "hello"})
	fmt.Println("tools:", toolNames(ctx, c), "shout says", res.Content[0].Text)
	// Output:
	// tools: []
	// wrong token: UNAUTHORIZED: the admin token is not valid
	// right token: <nil>
	// tools: [shout] shout says hello
}
