package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// greetArgs are the params of the custom method acme/greet.
type greetArgs struct {
	Name string `json:"name"`
}

// serveExample runs srv on a new in-memory connection and returns a
// connected 2026-07-28 Client built with opts (its ProtocolVersion set).
func serveExample(srv *mcp.Server, opts *mcp.ClientOptions) (*mcp.Client, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	clientEnd, serverEnd := transport.NewPipe(nil)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Run(ctx, serverEnd) }()
	opts.ProtocolVersion = mcp.Version20260728
	opts.Logger = slog.New(slog.DiscardHandler)
	c := mcp.NewClient(opts)
	if err := c.Connect(ctx, clientEnd); err != nil {
		panic(err)
	}
	return c, func() { c.Close(); cancel(); <-done }
}

// A ClientMiddleware sees every request the Client sends, outermost
// first, with the server's result as raw JSON on the way back; here one
// logs each call and another answers one method itself, without the
// server.
func ExampleClientOptions_middleware() {
	srv := mcp.NewServer(&mcp.ServerOptions{Name: "greeter", Methods: map[string]mcp.MethodHandler{
		"acme/greet": func(_ context.Context, req *mcp.Request) (any, error) {
			p, err := mcp.Params[greetArgs](req)
			if err != nil {
				return nil, err
			}
			return map[string]string{"greeting": "Hello, " + p.Name + "!"}, nil
		},
	}})
	logCalls := func(next mcp.ClientHandler) mcp.ClientHandler {
		return func(ctx context.Context, msg *mcp.ClientMessage) (any, error) {
			res, err := next(ctx, msg)
			if raw, ok := res.(json.RawMessage); ok && msg.Method == "acme/greet" {
				fmt.Printf("%s %s -> %s\n", msg.Method, msg.Params, raw)
			} else {
				fmt.Println(msg.Method, "->", res, err)
			}
			return res, err
		}
	}
	cached := func(next mcp.ClientHandler) mcp.ClientHandler {
		return func(ctx context.Context, msg *mcp.ClientMessage) (any, error) {
			if msg.Method == "acme/motd" {
				return map[string]string{"motd": "from the client's cache"}, nil
			}
			return next(ctx, msg)
		}
	}
	c, stop := serveExample(srv, &mcp.ClientOptions{Middleware: []mcp.ClientMiddleware{logCalls, cached}})
	defer stop()

	ctx := context.Background()
	var greet struct {
		Greeting string `json:"greeting"`
	}
	if err := c.Call(ctx, "acme/greet", greetArgs{Name: "Ann"}, &greet); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("greeting:", greet.Greeting)
	var motd struct {
		MOTD string `json:"motd"`
	}
	if err := c.Call(ctx, "acme/motd", nil, &motd); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("motd:", motd.MOTD)
	// Output:
	// acme/greet {"name":"Ann"} -> {"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"greeter","version":"0.0.0"}},"greeting":"Hello, Ann!"}
	// greeting: Hello, Ann!
	// acme/motd -> map[motd:from the client's cache] <nil>
	// motd: from the client's cache
}

// Params decodes a request's params once: a middleware that checks them
// and the handler that serves the method get the same value, and params
// that do not fit the type are refused with -32602, which the middleware
// returns as it is.
func ExampleParams() {
	var seen *greetArgs
	checkName := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			if req.Method != "acme/greet" {
				return next(ctx, req)
			}
			p, err := mcp.Params[greetArgs](req)
			if err != nil {
				return nil, err // -32602, naming what is wrong
			}
			if p.Name == "" {
				return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: "name is required"}
			}
			seen = p
			return next(ctx, req)
		}
	}
	srv := mcp.NewServer(&mcp.ServerOptions{
		Middleware: []mcp.Middleware{checkName},
		Methods: map[string]mcp.MethodHandler{
			"acme/greet": func(_ context.Context, req *mcp.Request) (any, error) {
				p, _ := mcp.Params[greetArgs](req) // decoded already: no second read
				fmt.Println("the handler's params are the middleware's:", p == seen)
				return map[string]string{"greeting": "Hello, " + p.Name + "!"}, nil
			},
		},
	})
	c, stop := serveExample(srv, &mcp.ClientOptions{})
	defer stop()

	ctx := context.Background()
	var out struct {
		Greeting string `json:"greeting"`
	}
	for _, params := range []any{
		map[string]any{"name": "Ann"},
		map[string]any{"name": 42},
		map[string]any{},
	} {
		err := c.Call(ctx, "acme/greet", params, &out)
		var rpcErr *mcp.Error
		switch {
		case errors.As(err, &rpcErr):
			fmt.Println("refused:", rpcErr.Code, rpcErr.Message)
		case err != nil:
			fmt.Println(err)
		default:
			fmt.Println(out.Greeting)
		}
	}
	// Output:
	// the handler's params are the middleware's: true
	// Hello, Ann!
	// refused: -32602 Invalid params: "/name" must be a string, not a number
	// refused: -32602 name is required
}
