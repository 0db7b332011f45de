//go:build !keel_omit2025

package mcp_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/internal/revision"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

func TestClientConnectNegotiatesEachRevision(t *testing.T) {
	for _, v := range append(mcp.SupportedVersionsForTest, "1999-01-01") {
		t.Run(v, func(t *testing.T) {
			copts := *quietClient
			copts.ProtocolVersion = v
			c, end := connect(t, mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolEcho)), &copts)
			want := v
			if !revision.Negotiated(v) {
				want = mcp.Version20251125
			}
			assert.Equal(t, want, c.ProtocolVersion())
			assert.Equal(t, "keel-test", c.InitializeResult().ServerInfo.Name)
			assert.NotNil(t, c.InitializeResult().Capabilities.Tools)
			require.NoError(t, c.Ping(context.Background()))
			require.NoError(t, end(), "Close ends the server's Run with nil")
		})
	}
}

func TestClientListAllToolsPaginates(t *testing.T) {
	ctx := context.Background()
	opts := mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolSlow, mcptest.ToolEcho, mcptest.ToolBoom, mcptest.ToolFail, mcptest.ToolEchoArgs))
	opts.PageSize = 2
	c, end := connect(t, opts, nil)

	first, err := c.ListTools(ctx, "")
	require.NoError(t, err)
	require.Len(t, first.Tools, 2)
	require.NotEmpty(t, first.NextCursor)

	tools, err := c.ListAllTools(ctx)
	require.NoError(t, err)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	assert.Equal(t, []string{"boom", "echo", "echo_args", "fail", "slow"}, names, "sorted by name, all pages")

	for _, cursor := range []string{"not-a-cursor", "!!!", first.NextCursor + "x"} {
		_, err = c.ListTools(ctx, cursor)
		var rpcErr *mcp.Error
		require.ErrorAs(t, err, &rpcErr, "cursor %q", cursor)
		assert.EqualValues(t, mcp.CodeInvalidParams, rpcErr.Code)
		assert.ErrorIs(t, err, &mcp.Error{Code: mcp.CodeInvalidParams})
	}
	require.NoError(t, end())
}

func TestClientCallToolResults(t *testing.T) {
	ctx := context.Background()
	c, end := connect(t, mcptest.ServerOptions(mcptest.NewTools()), nil)

	res, err := c.CallTool(ctx, mcptest.ToolEcho, map[string]any{"message": "hello"})
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	assert.Equal(t, mcp.Text("hello"), res.Content[0])
	assert.False(t, res.IsError)

	res, err = c.CallTool(ctx, mcptest.ToolStructured, nil)
	require.NoError(t, err)
	out, err := mcp.DecodeStructured[mcptest.StructuredOutput](res)
	require.NoError(t, err)
	assert.Equal(t, mcptest.StructuredOutput{Temperature: 21.5, Unit: "C"}, out)
	require.Len(t, res.Content, 3)
	assert.Equal(t, mcp.ContentAudio, res.Content[1].Type)
	assert.Equal(t, mcp.ContentResourceLink, res.Content[2].Type)
	assert.Equal(t, "weather.txt", res.Content[2].Name)

	// _meta travels beside the arguments, never inside them.
	res, err = c.CallToolWithParams(ctx, &mcp.CallToolParams{Name: mcptest.ToolEchoArgs,
		Arguments: []byte(`{"a":1}`), Meta: mcp.Meta{mcp.MetaCorrelationID: "corr-1"}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":1}`, res.Content[0].Text)
	require.NoError(t, end())
}

func TestClientCallToolDowngradedResult(t *testing.T) {
	copts := *quietClient
	copts.ProtocolVersion = mcp.Version20250326
	c, end := connect(t, mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolStructured)), &copts)
	res, err := c.CallTool(context.Background(), mcptest.ToolStructured, nil)
	require.NoError(t, err)
	_, err = mcp.DecodeStructured[mcptest.StructuredOutput](res)
	require.Error(t, err, "2025-03-26 has no structuredContent")
	var out mcptest.StructuredOutput
	require.NoError(t, json.Unmarshal([]byte(res.Content[0].Text), &out), "the JSON is still in the first text block")
	assert.Equal(t, 21.5, out.Temperature)
	assert.Equal(t, mcp.ContentAudio, res.Content[1].Type)
	assert.Equal(t, mcp.ContentText, res.Content[2].Type, "resource_link became text")
	require.NoError(t, end())
}

func TestClientErrors(t *testing.T) {
	ctx := context.Background()
	c, end := connect(t, mcptest.ServerOptions(mcptest.NewTools()), nil)
	tests := []struct {
		tool     string
		args     any
		meta     mcp.Meta
		rpcCode  int64         // JSON-RPC error code, 0 = an isError result
		toolCode mcp.ErrorCode // StructuredError code, "" = none
	}{
		{tool: "nope", rpcCode: mcp.CodeInvalidParams, toolCode: mcp.ErrNotFound},
		{tool: "nope", meta: mcp.Meta{mcp.MetaCorrelationID: "client-corr"}, rpcCode: mcp.CodeInvalidParams, toolCode: mcp.ErrNotFound},
		{tool: mcptest.ToolFail, toolCode: mcp.ErrInvalidArgument},
		{tool: mcptest.ToolFail, meta: mcp.Meta{mcp.MetaCorrelationID: "client-corr"}, toolCode: mcp.ErrInvalidArgument},
		{tool: mcptest.ToolEcho, args: map[string]any{"msg": 1}, toolCode: mcp.ErrInvalidArgument},
		{tool: mcptest.ToolBoom, toolCode: mcp.ErrInternal},
		{tool: mcptest.ToolPanic, toolCode: mcp.ErrInternal},
		{tool: mcptest.ToolUnencodable, rpcCode: mcp.CodeInternalError, toolCode: mcp.ErrInternal},
		{tool: mcptest.ToolEcho, args: []string{"not", "an", "object"}, rpcCode: mcp.CodeInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			p := &mcp.CallToolParams{Name: tt.tool, Meta: tt.meta}
			if tt.args != nil {
				b, err := json.Marshal(tt.args)
				require.NoError(t, err)
				p.Arguments = b
			}
			res, err := c.CallToolWithParams(ctx, p)
			require.Error(t, err)

			var rpcErr *mcp.Error
			if tt.rpcCode != 0 {
				require.ErrorAs(t, err, &rpcErr)
				assert.Equal(t, tt.rpcCode, rpcErr.Code)
				assert.Nil(t, res)
			} else {
				assert.False(t, errors.As(err, &rpcErr), "a tool error is not a JSON-RPC error")
				require.NotNil(t, res)
				assert.True(t, res.IsError)
			}

			var se *mcp.StructuredError
			if tt.toolCode == "" {
				assert.False(t, errors.As(err, &se))
				return
			}
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tt.toolCode, se.Code)
			assert.ErrorIs(t, err, &mcp.StructuredError{Code: tt.toolCode})
			assert.NotEmpty(t, se.Message)
			assert.NotEmpty(t, se.RunID)
			if want, ok := tt.meta[mcp.MetaCorrelationID]; ok {
				assert.Equal(t, want, se.CorrelationID, "the client's _meta.correlationId is used")
			} else {
				assert.NotEmpty(t, se.CorrelationID)
			}
		})
	}
	// The connection survives every failure.
	require.NoError(t, c.Ping(ctx))
	require.NoError(t, end())
}

func TestClientCancelCallCancelsHandler(t *testing.T) {
	tools := mcptest.NewTools(mcptest.ToolSlow, mcptest.ToolEcho)
	tools.SlowStarted = make(chan *mcp.ToolCall, 1)
	tools.SlowDone = make(chan error, 1)
	c, end := connect(t, mcptest.ServerOptions(tools), nil)

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, mcptest.ToolSlow, nil)
		errc <- err
	}()
	var call *mcp.ToolCall
	select {
	case call = <-tools.SlowStarted:
	case <-time.After(5 * time.Second):
		t.Fatal("the slow tool never started")
	}
	assert.NotEmpty(t, call.CorrelationID)
	assert.NotEmpty(t, call.RunID)
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)

	// The client sent notifications/cancelled; the server cancelled the
	// handler's context while the connection is still open.
	select {
	case err := <-tools.SlowDone:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not cancel the handler's context")
	}
	res, err := c.CallTool(context.Background(), mcptest.ToolEcho, map[string]string{"message": "after"})
	require.NoError(t, err)
	assert.Equal(t, "after", res.Content[0].Text)
	require.NoError(t, end())
}

func TestClientAfterClose(t *testing.T) {
	c, end := connect(t, mcptest.ServerOptions(nil), nil)
	require.NoError(t, end())
	require.ErrorIs(t, c.Ping(context.Background()), mcp.ErrClosed)
}

func TestClientBeforeConnect(t *testing.T) {
	c := mcp.NewClient(quietClient)
	require.Error(t, c.Ping(context.Background()))
	require.NoError(t, c.Close())
}

// stdioServer runs a test server over a Stdio transport whose input and
// output are io.Pipes: the test writes lines to in and reads lines from out.
type stdioServer struct {
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
	tr   *mcptest.Tracker
}

func startStdio(t *testing.T, opts *transport.StdioOptions) *stdioServer {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &stdioServer{in: inW, out: bufio.NewReader(outR), done: make(chan error, 1), tr: mcptest.NewTracker()}
	srv := mcp.NewServer(mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolEcho)))
	go func() { s.done <- srv.Run(context.Background(), transport.NewStdioStreams(inR, outW, opts)) }()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return s
}

func (s *stdioServer) send(t *testing.T, line string) {
	t.Helper()
	s.tr.Sent([]byte(line))
	_, err := io.WriteString(s.in, line+"\n")
	require.NoError(t, err)
}

func (s *stdioServer) recv(t *testing.T) string {
	t.Helper()
	line, err := s.out.ReadString('\n')
	require.NoError(t, err)
	line = strings.TrimSuffix(line, "\n")
	require.NoError(t, s.tr.Received([]byte(line)), "schema of the negotiated revision")
	return line
}

func (s *stdioServer) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
		return nil
	}
}

const initLine = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func TestStdioEOFEndsRun(t *testing.T) {
	s := startStdio(t, nil)
	s.send(t, initLine)
	assert.Contains(t, s.recv(t), `"protocolVersion":"2025-11-25"`)
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	s.send(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{}}`, s.recv(t))
	require.NoError(t, s.in.Close(), "EOF on stdin")
	require.NoError(t, s.wait(t), "EOF ends Run cleanly")
	_, err := s.out.ReadString('\n')
	require.ErrorIs(t, err, io.EOF, "Run closes its output, having written nothing more")
}

func TestStdioMessageTooLarge(t *testing.T) {
	s := startStdio(t, &transport.StdioOptions{MaxMessageBytes: 256})
	s.send(t, initLine)
	s.recv(t)
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"` + strings.Repeat("x", 100_000) + `"}}}`
	s.send(t, big)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: transport: message exceeds MaxMessageBytes (256 bytes)","data":{"correlationId":"id-1","limit":"MaxMessageBytes","maxBytes":256}}}`, s.recv(t))
	// The connection lives on: the next line is served.
	s.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"small"}}}`)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"small"}]}}`, s.recv(t))
	require.NoError(t, s.in.Close())
	require.NoError(t, s.wait(t))
}

func TestClientOverStdio(t *testing.T) {
	// A Client and a Server, each on a Stdio transport, connected by two pipes.
	srvIn, cliOut := io.Pipe()
	cliIn, srvOut := io.Pipe()
	srv := mcp.NewServer(mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolEcho)))
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), transport.NewStdioStreams(srvIn, srvOut, nil)) }()
	c := mcp.NewClient(quietClient)
	ctx := context.Background()
	require.NoError(t, c.Connect(ctx, mcptest.ValidateTransport(t, transport.NewStdioStreams(cliIn, cliOut, nil))))
	res, err := c.CallTool(ctx, mcptest.ToolEcho, map[string]string{"message": "over stdio"})
	require.NoError(t, err)
	assert.Equal(t, "over stdio", res.Content[0].Text)
	require.NoError(t, c.Close())
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after the client closed")
	}
}

// A cancellation for a request the client is not serving (none served
// yet) is ignored.
func TestClientIgnoresCancellationOfUnknownRequest(t *testing.T) {
	ct, st := transport.NewPipe(nil)
	c := mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: mcp.Version20260728, Logger: slog.New(slog.DiscardHandler)})
	go func() {
		ctx := context.Background()
		b, _ := st.Read(ctx) // server/discover
		var m struct {
			ID jsontext.Value `json:"id"`
		}
		_ = json.Unmarshal(b, &m)
		_ = st.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":42}}`))
		_ = st.Write(ctx, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":0,"cacheScope":"public"}}`, m.ID))
	}()
	require.NoError(t, c.Connect(context.Background(), ct))
	require.NoError(t, c.Close())
}
