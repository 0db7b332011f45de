//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
)

// A tool that calls CreateMessage blocks until the client answers, which
// the session's reader must read meanwhile: with the default budget (the
// reader hands over after InlineBudget), a budget far longer than the test
// (the reader hands over as soon as the call waits for the client) and a
// goroutine per call.
func TestSamplingRoundTrip(t *testing.T) {
	for _, budget := range []time.Duration{0, time.Hour, -1} {
		t.Run(budget.String(), func(t *testing.T) {
			opts := mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolSample))
			opts.InlineBudget = budget
			got := make(chan *mcp.CreateMessageParams, 1)
			copts := *quietClient
			copts.Capabilities.Sampling = &mcp.SamplingCapability{Tools: &struct{}{}}
			var c *mcp.Client
			copts.OnSampling = func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
				// The handler runs on its own goroutine: the client still
				// reads (the answer to this ping) while it runs.
				if err := c.Ping(ctx); err != nil {
					return nil, err
				}
				got <- p
				return &mcp.CreateMessageResult{Role: mcp.RoleAssistant, Model: "m1", StopReason: mcp.StopReasonEndTurn,
					Content: mcp.SamplingMessageContent{mcp.SamplingText("hello")}}, nil
			}
			c, _ = connectRecorded(t, opts, &copts)
			assert.Equal(t, &mcp.SamplingCapability{Tools: &struct{}{}}, copts.Capabilities.Sampling, "the caller's options are not modified")

			res, err := c.CallTool(context.Background(), mcptest.ToolSample, map[string]any{"prompt": "hi", "tools": true})
			require.NoError(t, err)
			assert.Equal(t, "hello (m1)", textOf(t, res))
			p := <-got
			assert.EqualValues(t, 100, p.MaxTokens)
			require.Len(t, p.Messages, 1)
			assert.Equal(t, mcp.RoleUser, p.Messages[0].Role)
			assert.Equal(t, mcp.SamplingMessageContent{mcp.SamplingText("hi")}, p.Messages[0].Content)
			require.Len(t, p.Tools, 1)
			assert.Equal(t, "lookup", p.Tools[0].Name)
			assert.Equal(t, &mcp.ToolChoice{Mode: mcp.ToolChoiceAuto}, p.ToolChoice)
		})
	}
}

// Every server→client request checks the client's capabilities and the
// negotiated revision first: a *CapabilityError (errors.Is
// ErrCapabilityNotDeclared), and nothing is sent.
func TestCapabilityNotDeclared(t *testing.T) {
	form := jsontext.Value(`{"type":"object","properties":{}}`)
	text := mcp.SamplingMessageContent{mcp.SamplingText("hi")}
	sample := &mcp.CreateMessageParams{MaxTokens: 10, Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: text}}}
	withTools := *sample
	withTools.Tools = []*mcp.Tool{{Name: "t", InputSchema: json.RawMessage(form)}}
	withContext := *sample
	withContext.IncludeContext = mcp.IncludeContextAllServers
	urlMode := &mcp.ElicitParams{Mode: mcp.ElicitModeURL, Message: "m", URL: "https://example.com", ElicitationID: "e"}

	type request func(ctx context.Context, ss *mcp.Session) error
	createMessage := func(p *mcp.CreateMessageParams) request {
		return func(ctx context.Context, ss *mcp.Session) error { _, err := ss.CreateMessage(ctx, p); return err }
	}
	elicit := func(p *mcp.ElicitParams) request {
		return func(ctx context.Context, ss *mcp.Session) error { _, err := ss.Elicit(ctx, p); return err }
	}
	listRoots := func(ctx context.Context, ss *mcp.Session) error { _, err := ss.ListRoots(ctx); return err }
	complete := func(ctx context.Context, ss *mcp.Session) error { return ss.NotifyElicitationComplete(ctx, "e") }

	for _, tc := range []struct {
		name       string
		version    string
		caps       mcp.ClientCapabilities
		req        request
		capability string
		minRev     string
	}{
		{"sampling", "", mcp.ClientCapabilities{}, createMessage(sample), "sampling", ""},
		{"sampling tools", "", mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}}, createMessage(&withTools), "sampling.tools", ""},
		{"sampling tools 2025-06-18", mcp.Version20250618, mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{Tools: &struct{}{}}}, createMessage(&withTools), "sampling.tools", mcp.Version20251125},
		{"sampling context", "", mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}}, createMessage(&withContext), "sampling.context", ""},
		{"elicitation", "", mcp.ClientCapabilities{}, elicit(&mcp.ElicitParams{Message: "m", RequestedSchema: json.RawMessage(form)}), "elicitation", ""},
		{"elicitation 2025-03-26", mcp.Version20250326, mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}, elicit(&mcp.ElicitParams{Message: "m"}), "elicitation", mcp.Version20250618},
		{"elicitation form", "", mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &struct{}{}}}, elicit(&mcp.ElicitParams{Message: "m"}), "elicitation.form", ""},
		{"elicitation url", "", mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}, elicit(urlMode), "elicitation.url", ""},
		{"elicitation url 2025-06-18", mcp.Version20250618, mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &struct{}{}}}, elicit(urlMode), "elicitation.url", mcp.Version20251125},
		{"elicitation complete", "", mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}, complete, "elicitation.url", ""},
		{"roots", "", mcp.ClientCapabilities{}, listRoots, "roots", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := make(chan error, 1)
			opts := mcptest.ServerOptions(handlerTools{"try": func(ctx context.Context, _ *mcp.ToolCall) (*mcp.CallToolResult, error) {
				errs <- tc.req(ctx, mcp.SessionFromContext(ctx))
				return mcp.TextResult("done"), nil
			}})
			copts := *quietClient
			copts.ProtocolVersion, copts.Capabilities = tc.version, tc.caps
			c, rec := connectRecorded(t, opts, &copts)
			_, err := c.CallTool(context.Background(), "try", nil)
			require.NoError(t, err)
			err = <-errs
			require.ErrorIs(t, err, mcp.ErrCapabilityNotDeclared)
			var ce *mcp.CapabilityError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.capability, ce.Capability)
			assert.Equal(t, tc.minRev, ce.MinRevision)
			assert.Equal(t, c.ProtocolVersion(), ce.Revision)
			assert.Contains(t, err.Error(), tc.capability)
			require.NoError(t, c.Ping(context.Background()))
			assert.Empty(t, rec.seen(), "the server sent nothing")
		})
	}
}

// A request the client does not answer within RequestTimeout fails with
// context.DeadlineExceeded, and the server sends notifications/cancelled,
// which cancels the client handler's context; the handler's late result is
// not sent.
func TestServerRequestTimeoutSendsCancelled(t *testing.T) {
	errs := make(chan error, 1)
	opts := mcptest.ServerOptions(handlerTools{"ask": func(ctx context.Context, _ *mcp.ToolCall) (*mcp.CallToolResult, error) {
		_, err := mcp.SessionFromContext(ctx).Elicit(ctx, &mcp.ElicitParams{Message: "name?"})
		errs <- err
		return mcp.TextResult("done"), nil
	}})
	opts.RequestTimeout = 20 * time.Millisecond
	handlerErr := make(chan error, 1)
	copts := *quietClient
	copts.OnElicitation = func(ctx context.Context, _ *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		<-ctx.Done() // the server's notifications/cancelled ends it
		handlerErr <- ctx.Err()
		return &mcp.ElicitResult{Action: mcp.ElicitCancel}, nil
	}
	c, rec := connectRecorded(t, opts, &copts)
	_, err := c.CallTool(context.Background(), "ask", nil)
	require.NoError(t, err)
	err = <-errs
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "elicitation/create: no response from the client within 20ms")
	require.ErrorIs(t, <-handlerErr, context.Canceled)
	assert.Equal(t, []string{"elicitation/create", "notifications/cancelled"}, rec.seen())
}

// When the client's caller gives up (its ctx ends), the Client sends
// notifications/cancelled: the server cancels the handler's context and
// sends no response.
func TestClientCancelSendsNotification(t *testing.T) {
	tools := mcptest.NewTools(mcptest.ToolSlow)
	tools.SlowStarted = make(chan *mcp.ToolCall, 1)
	tools.SlowDone = make(chan error, 1)
	c, rec := connectRecorded(t, mcptest.ServerOptions(tools), nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-tools.SlowStarted; cancel() }()
	_, err := c.CallTool(ctx, mcptest.ToolSlow, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, <-tools.SlowDone, context.Canceled, "the handler's context was cancelled")
	require.NoError(t, c.Ping(context.Background()))
	assert.Empty(t, rec.seen())
}

// The server cancels its pending request when the tools/call that made it
// is cancelled; the client handler's context ends and it answers nothing.
func TestCancelledCallCancelsItsClientRequest(t *testing.T) {
	started := make(chan struct{})
	handlerErr := make(chan error, 1)
	copts := *quietClient
	copts.OnSampling = func(ctx context.Context, _ *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
		close(started)
		<-ctx.Done()
		handlerErr <- ctx.Err()
		return nil, ctx.Err()
	}
	c, _ := connectRecorded(t, mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolSample)), &copts)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	_, err := c.CallTool(ctx, mcptest.ToolSample, map[string]any{"prompt": "hi"})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, <-handlerErr, context.Canceled)
}

func TestElicitationRoundTrip(t *testing.T) {
	var mu sync.Mutex
	var got []*mcp.ElicitParams
	completed := make(chan string, 1)
	copts := *quietClient
	copts.Capabilities.Elicitation = &mcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}}
	copts.OnElicitation = func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
		if p.Mode == mcp.ElicitModeURL {
			return &mcp.ElicitResult{Action: mcp.ElicitAccept}, nil
		}
		return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Ann"}}, nil
	}
	copts.OnNotification = func(method string, params json.RawMessage) {
		if method == "notifications/elicitation/complete" {
			var p mcp.ElicitationCompleteNotificationParams
			_ = jsonv2.Unmarshal(params, &p)
			completed <- p.ElicitationID
		}
	}
	c, _ := connectRecorded(t, mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolElicit)), &copts)
	ctx := context.Background()

	res, err := c.CallTool(ctx, mcptest.ToolElicit, map[string]any{"message": "Who?"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"action":"accept","content":{"name":"Ann"}}`, textOf(t, res))

	res, err = c.CallTool(ctx, mcptest.ToolElicit, map[string]any{"mode": "url", "message": "Sign in", "url": "https://example.com/a", "elicitationId": "e7"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"action":"accept"}`, textOf(t, res))
	assert.Equal(t, "e7", <-completed)

	require.Len(t, got, 2)
	assert.Equal(t, "", got[0].Mode)
	assert.Equal(t, "Who?", got[0].Message)
	assert.JSONEq(t, `{"type":"object","properties":{"name":{"type":"string","title":"Name"}},"required":["name"]}`, string(got[0].RequestedSchema))
	assert.Equal(t, &mcp.ElicitParams{Mode: mcp.ElicitModeURL, Message: "Sign in", URL: "https://example.com/a", ElicitationID: "e7"}, got[1])
}

func TestRootsRoundTripAndListChanged(t *testing.T) {
	changed := make(chan []mcp.Root, 4)
	opts := mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolRoots))
	opts.OnRootsListChanged = func(ctx context.Context, ss *mcp.Session) {
		roots, err := ss.ListRoots(ctx)
		if err == nil {
			changed <- roots
		}
	}
	copts := *quietClient
	copts.Roots = []mcp.Root{{URI: "file:///a", Name: "a"}}
	c, _ := connectRecorded(t, opts, &copts)
	ctx := context.Background()

	res, err := c.CallTool(ctx, mcptest.ToolRoots, nil)
	require.NoError(t, err)
	assert.Equal(t, `[{"uri":"file:///a","name":"a"}]`, textOf(t, res))

	require.NoError(t, c.SetRoots(ctx, []mcp.Root{{URI: "file:///b"}}))
	assert.Equal(t, []mcp.Root{{URI: "file:///b"}}, <-changed)
	require.NoError(t, c.SetRoots(ctx, nil))
	assert.Equal(t, []mcp.Root{}, <-changed)
	assert.Equal(t, []mcp.Root{}, c.Roots())

	// A client that declared no roots cannot announce changes.
	plain, _ := connectRecorded(t, mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolRoots)), nil)
	require.ErrorIs(t, plain.SetRoots(ctx, []mcp.Root{{URI: "file:///c"}}), mcp.ErrCapabilityNotDeclared)
}

// Errors of client handlers reach the server's caller: an *Error as is, any
// other error as -32603; a declared capability without a handler is -32601.
func TestClientHandlerErrors(t *testing.T) {
	errs := make(chan error, 1)
	opts := mcptest.ServerOptions(handlerTools{"ask": func(ctx context.Context, _ *mcp.ToolCall) (*mcp.CallToolResult, error) {
		_, err := mcp.SessionFromContext(ctx).CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 1,
			Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.SamplingMessageContent{mcp.SamplingText("x")}}}})
		errs <- err
		return mcp.TextResult("done"), nil
	}})
	for _, tc := range []struct {
		name    string
		handler func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
		code    int64
		message string
	}{
		{"rejected", func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			return nil, &mcp.Error{Code: mcp.CodeUserRejected, Message: "User rejected sampling request"}
		}, mcp.CodeUserRejected, "User rejected sampling request"},
		{"plain error", func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			return nil, errors.New("model offline")
		}, mcp.CodeInternalError, "Internal error: model offline"},
		{"panic", func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			panic("boom")
		}, mcp.CodeInternalError, "Internal error: the handler of sampling/createMessage panicked"},
		{"no handler", nil, mcp.CodeMethodNotFound, `Method not found: "sampling/createMessage"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			copts := *quietClient
			copts.Capabilities.Sampling = &mcp.SamplingCapability{}
			copts.OnSampling = tc.handler
			c, _ := connectRecorded(t, opts, &copts)
			_, err := c.CallTool(context.Background(), "ask", nil)
			require.NoError(t, err)
			var rpcErr *mcp.Error
			require.ErrorAs(t, <-errs, &rpcErr)
			assert.Equal(t, tc.code, rpcErr.Code)
			assert.Equal(t, tc.message, rpcErr.Message)
		})
	}
}

// Content a revision cannot carry is refused before anything is sent;
// members it lacks are dropped.
func TestCreateMessageDowngrade(t *testing.T) {
	type outcome struct {
		p   *mcp.CreateMessageParams
		err error
	}
	for _, tc := range []struct {
		version string
		content mcp.SamplingMessageContent
		wantErr string
	}{
		{mcp.Version20250618, mcp.SamplingMessageContent{mcp.SamplingText("a"), mcp.SamplingText("b")}, "2 content blocks"},
		{mcp.Version20250618, mcp.SamplingMessageContent{{Type: mcp.ContentToolUse, ID: "u", Name: "t"}}, "tool_use content requires protocol revision 2025-11-25"},
		{mcp.Version20241105, mcp.SamplingMessageContent{{Type: mcp.ContentAudio, Data: "AAAA", MimeType: "audio/wav"}}, "audio content requires protocol revision 2025-03-26"},
		{mcp.Version20241105, mcp.SamplingMessageContent{{Type: mcp.ContentText, Text: "x", Meta: mcp.Meta{"k": "v"}}}, ""},
		{mcp.Version20250326, mcp.SamplingMessageContent{{Type: mcp.ContentAudio, Data: "AAAA", MimeType: "audio/wav"}}, ""},
	} {
		t.Run(tc.version+" "+tc.content[0].Type, func(t *testing.T) {
			out := make(chan outcome, 1)
			opts := mcptest.ServerOptions(handlerTools{"ask": func(ctx context.Context, _ *mcp.ToolCall) (*mcp.CallToolResult, error) {
				_, err := mcp.SessionFromContext(ctx).CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 1,
					Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: tc.content, Meta: mcp.Meta{"m": 1}}}})
				out <- outcome{err: err}
				return mcp.TextResult("done"), nil
			}})
			got := make(chan *mcp.CreateMessageParams, 1)
			copts := *quietClient
			copts.ProtocolVersion = tc.version
			copts.OnSampling = func(_ context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
				got <- p
				return &mcp.CreateMessageResult{Role: mcp.RoleAssistant, Model: "m", Content: mcp.SamplingMessageContent{mcp.SamplingText("ok")}}, nil
			}
			c, rec := connectRecorded(t, opts, &copts) // the validating transport checks the request against the revision's schema
			_, err := c.CallTool(context.Background(), "ask", nil)
			require.NoError(t, err)
			o := <-out
			if tc.wantErr != "" {
				require.Error(t, o.err)
				assert.Contains(t, o.err.Error(), tc.wantErr)
				assert.Empty(t, rec.seen())
				return
			}
			require.NoError(t, o.err)
			p := <-got
			assert.Nil(t, p.Messages[0].Meta)
			assert.Nil(t, p.Messages[0].Content[0].Meta)
		})
	}
}
