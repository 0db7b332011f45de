package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"github.com/keelmcp/keel/transport/streamhttp"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

var quiet = slog.New(slog.DiscardHandler)

// connect serves a fresh registry over the in-memory transport and returns
// a connected Client (opts may be nil) and the registry.
func connect(t *testing.T, opts *mcp.ClientOptions) (*mcp.Client, *registry.Registry) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	reg := newRegistry(quiet)
	clientEnd, serverEnd := transport.NewPipe(nil)
	done := make(chan error, 1)
	go func() { done <- newServer(reg, quiet).Run(ctx, serverEnd) }()
	c := mcp.NewClient(opts)
	require.NoError(t, c.Connect(ctx, clientEnd))
	t.Cleanup(func() {
		c.Close()
		cancel()
		<-done
	})
	return c, reg
}

func types(blocks []mcp.Content) []string {
	out := make([]string, len(blocks))
	for i, b := range blocks {
		out[i] = b.Type
	}
	return out
}

func decode64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	require.NoError(t, err)
	return b
}

func TestContentTools(t *testing.T) {
	c, _ := connect(t, nil)
	ctx := context.Background()
	tests := []struct {
		tool  string
		types []string
		check func(t *testing.T, blocks []mcp.Content)
	}{
		{"test_simple_text", []string{"text"}, func(t *testing.T, b []mcp.Content) {
			assert.Equal(t, "This is a simple text response for testing.", b[0].Text)
		}},
		{"test_image_content", []string{"image"}, func(t *testing.T, b []mcp.Content) {
			assert.Equal(t, "image/png", b[0].MimeType)
			assert.True(t, bytes.HasPrefix(decode64(t, b[0].Data), []byte("\x89PNG\r\n")))
		}},
		{"test_audio_content", []string{"audio"}, func(t *testing.T, b []mcp.Content) {
			assert.Equal(t, "audio/wav", b[0].MimeType)
			wav := decode64(t, b[0].Data)
			assert.Equal(t, "RIFF", string(wav[:4]))
			assert.Equal(t, "WAVE", string(wav[8:12]))
		}},
		{"test_embedded_resource", []string{"resource"}, func(t *testing.T, b []mcp.Content) {
			r := b[0].Resource
			require.NotNil(t, r)
			assert.Equal(t, "test://embedded-resource", r.URI)
			assert.Equal(t, "text/plain", r.MimeType)
			require.NotNil(t, r.Text)
			assert.Equal(t, "This is an embedded resource content.", *r.Text)
		}},
		{"test_multiple_content_types", []string{"text", "image", "resource"}, func(t *testing.T, b []mcp.Content) {
			assert.Equal(t, "test://mixed-content-resource", b[2].Resource.URI)
			assert.JSONEq(t, `{"test":"data","value":123}`, *b[2].Resource.Text)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			res, err := c.CallTool(ctx, tt.tool, nil)
			require.NoError(t, err)
			require.Equal(t, tt.types, types(res.Content))
			tt.check(t, res.Content)
		})
	}
}

func TestErrorTool(t *testing.T) {
	c, _ := connect(t, nil)
	res, err := c.CallTool(context.Background(), "test_error_handling", nil)
	require.NotNil(t, res)
	assert.True(t, res.IsError)
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se, "an isError result comes with an error callers can match")
	assert.Equal(t, mcp.ErrToolFailed, se.Code)
	assert.Equal(t, "This tool intentionally returns an error for testing", se.Message)
}

func TestLoggingAndProgress(t *testing.T) {
	var mu sync.Mutex
	var logs []string
	var progress []float64
	c, _ := connect(t, &mcp.ClientOptions{
		OnLog: func(p *mcp.LoggingMessageNotificationParams) {
			mu.Lock()
			defer mu.Unlock()
			if d, ok := p.Data.(map[string]any); ok && p.Logger == "test_tool_with_logging" {
				logs = append(logs, d["message"].(string))
			}
		},
		OnProgress: func(p *mcp.ProgressParams) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, p.Progress)
		},
	})
	ctx := context.Background()
	require.NoError(t, c.SetLoggingLevel(ctx, mcp.LoggingLevelDebug))
	_, err := c.CallTool(ctx, "test_tool_with_logging", nil)
	require.NoError(t, err)
	_, err = c.CallToolWithParams(ctx, &mcp.CallToolParams{Name: "test_tool_with_progress",
		Meta: mcp.Meta{mcp.MetaProgressToken: "p1"}})
	require.NoError(t, err)

	mu.Lock()
	defer mu.Unlock()
	// Notifications about a request arrive before its response.
	assert.Equal(t, []string{"Tool execution started", "Tool processing data", "Tool execution completed"}, logs)
	assert.Equal(t, []float64{0, 50, 100}, progress)
}

func TestSamplingAndElicitation(t *testing.T) {
	var mu sync.Mutex
	schemas := map[string]mcp.ElicitationSchema{}
	c, _ := connect(t, &mcp.ClientOptions{
		OnSampling: func(_ context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: mcp.RoleAssistant, Model: "test-model", StopReason: "endTurn",
				Content: mcp.SamplingMessageContent{mcp.SamplingText("echo: " + p.Messages[0].Content[0].Text)}}, nil
		},
		OnElicitation: func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			var s mcp.ElicitationSchema
			if err := json.Unmarshal(p.RequestedSchema, &s); err != nil {
				return nil, err
			}
			mu.Lock()
			schemas[p.Message] = s
			mu.Unlock()
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"username": "ada"}}, nil
		},
	})
	ctx := context.Background()

	res, err := c.CallTool(ctx, "test_sampling", map[string]any{"prompt": "hi"})
	require.NoError(t, err)
	assert.Equal(t, "LLM response: echo: hi", res.Content[0].Text)

	res, err = c.CallTool(ctx, "test_elicitation", map[string]any{"message": "Who are you?"})
	require.NoError(t, err)
	assert.Equal(t, `User response: action=accept, content={"username":"ada"}`, res.Content[0].Text)
	_, err = c.CallTool(ctx, "test_elicitation_sep1034_defaults", nil)
	require.NoError(t, err)
	_, err = c.CallTool(ctx, "test_elicitation_sep1330_enums", nil)
	require.NoError(t, err)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, schemas, 3)
	assert.Equal(t, []string{"username", "email"}, schemas["Who are you?"].Required)
	defaults := schemas["Please review your profile (defaults are pre-filled)"].Properties
	assert.Equal(t, "John Doe", defaults["name"].Default)
	assert.EqualValues(t, 30, defaults["age"].Default)
	assert.Equal(t, 95.5, defaults["score"].Default)
	assert.Equal(t, "active", defaults["status"].Default)
	assert.Equal(t, true, defaults["verified"].Default)
	enums := schemas["Please choose"].Properties
	assert.Len(t, enums["titledSingle"].OneOf, 3)
	assert.Len(t, enums["legacyEnum"].EnumNames, 3)
	assert.Len(t, enums["titledMulti"].Items.AnyOf, 3)
}

func TestClientRequestsNeedTheCapability(t *testing.T) {
	c, _ := connect(t, nil) // declares neither sampling nor elicitation: nothing is sent
	ctx := context.Background()
	for tool, args := range map[string]map[string]any{
		"test_sampling":    {"prompt": "p"},
		"test_elicitation": {"message": "m"},
	} {
		res, err := c.CallTool(ctx, tool, args)
		require.NotNil(t, res, tool)
		assert.True(t, res.IsError, tool)
		var se *mcp.StructuredError
		require.ErrorAs(t, err, &se, tool)
		assert.Contains(t, se.Message, "capability", tool)
	}
}

func TestJSONSchemaTool(t *testing.T) {
	c, _ := connect(t, nil)
	ctx := context.Background()
	tools, err := c.ListAllTools(ctx)
	require.NoError(t, err)
	var schema map[string]any
	for _, tool := range tools {
		if tool.Name == "json_schema_2020_12_tool" {
			require.NoError(t, json.Unmarshal(tool.InputSchema, &schema))
		}
	}
	require.NotNil(t, schema, "json_schema_2020_12_tool is listed")
	assert.Equal(t, "https://json-schema.org/draft/2020-12/schema", schema["$schema"])
	assert.Contains(t, schema, "$defs")
	assert.Equal(t, false, schema["additionalProperties"])

	res, err := c.CallTool(ctx, "json_schema_2020_12_tool", map[string]any{"name": "Ada", "email": "ada@example.com",
		"address": map[string]any{"city": "London"}})
	require.NoError(t, err)
	assert.Contains(t, res.Content[0].Text, `"city":"London"`)

	for name, args := range map[string]map[string]any{
		"neither phone nor email (allOf/anyOf)": {"name": "Ada"},
		"phone chosen but missing (if/then)":    {"contactMethod": "phone", "email": "ada@example.com"},
		"unknown member":                        {"email": "ada@example.com", "age": 36},
		"address of the wrong type ($ref)":      {"email": "ada@example.com", "address": "London"},
	} {
		_, err := c.CallTool(ctx, "json_schema_2020_12_tool", args)
		var se *mcp.StructuredError
		require.ErrorAs(t, err, &se, name)
		assert.Equal(t, mcp.ErrInvalidArgument, se.Code, name)
	}
}

func TestResources(t *testing.T) {
	var updated = make(chan string, 1)
	c, reg := connect(t, &mcp.ClientOptions{OnResourceUpdated: func(uri string) {
		select {
		case updated <- uri:
		default:
		}
	}})
	ctx := context.Background()

	list, err := c.ListAllResources(ctx)
	require.NoError(t, err)
	var uris []string
	for _, r := range list {
		uris = append(uris, r.URI)
		assert.NotEmpty(t, r.Description, r.URI)
	}
	assert.Equal(t, []string{"test://static-binary", "test://static-text", watchedURI}, uris)
	templates, err := c.ListAllResourceTemplates(ctx)
	require.NoError(t, err)
	require.Len(t, templates, 1)
	assert.Equal(t, "test://template/{id}/data", templates[0].URITemplate)

	text, err := c.ReadResource(ctx, "test://static-text")
	require.NoError(t, err)
	assert.Equal(t, "text/plain", text.Contents[0].MimeType)
	assert.Equal(t, "This is the content of the static text resource.", *text.Contents[0].Text)

	bin, err := c.ReadResource(ctx, "test://static-binary")
	require.NoError(t, err)
	assert.Equal(t, "image/png", bin.Contents[0].MimeType)
	assert.Equal(t, redPixelPNG, decode64(t, *bin.Contents[0].Blob))

	data, err := c.ReadResource(ctx, "test://template/123/data")
	require.NoError(t, err)
	assert.Equal(t, "test://template/123/data", data.Contents[0].URI)
	assert.JSONEq(t, `{"id":"123","templateTest":true,"data":"Data for ID: 123"}`, *data.Contents[0].Text)

	_, err = c.ReadResource(ctx, "test://nonexistent")
	var rpcErr *mcp.Error
	require.ErrorAs(t, err, &rpcErr)
	assert.EqualValues(t, mcp.CodeResourceNotFound, rpcErr.Code)

	// The watched resource changes; subscribers hear of it.
	require.NoError(t, c.Subscribe(ctx, watchedURI))
	uctx, stop := context.WithCancel(ctx)
	defer stop()
	go updateWatchedResource(uctx, reg, time.Millisecond)
	select {
	case uri := <-updated:
		assert.Equal(t, watchedURI, uri)
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/resources/updated")
	}
	stop()
	watched, err := c.ReadResource(ctx, watchedURI)
	require.NoError(t, err)
	assert.Contains(t, *watched.Contents[0].Text, "Watched resource content, version ")
	require.NoError(t, c.Unsubscribe(ctx, watchedURI))
}

func TestPrompts(t *testing.T) {
	c, _ := connect(t, nil)
	ctx := context.Background()

	prompts, err := c.ListAllPrompts(ctx)
	require.NoError(t, err)
	var names []string
	byName := map[string]*mcp.Prompt{}
	for _, p := range prompts {
		names = append(names, p.Name)
		byName[p.Name] = p
	}
	assert.Equal(t, []string{"test_input_required_result_prompt", "test_prompt_with_arguments", "test_prompt_with_embedded_resource", "test_prompt_with_image", "test_simple_prompt"}, names)
	require.NotNil(t, byName["test_prompt_with_arguments"])
	assert.Equal(t, []mcp.PromptArgument{
		{Name: "arg1", Description: "First test argument", Required: true},
		{Name: "arg2", Description: "Second test argument", Required: true},
	}, byName["test_prompt_with_arguments"].Arguments)

	simple, err := c.GetPrompt(ctx, "test_simple_prompt", nil)
	require.NoError(t, err)
	assert.Equal(t, "This is a simple prompt for testing.", simple.Messages[0].Content.Text)

	args, err := c.GetPrompt(ctx, "test_prompt_with_arguments", map[string]string{"arg1": "hello", "arg2": "world"})
	require.NoError(t, err)
	assert.Equal(t, "Prompt with arguments: arg1='hello', arg2='world'", args.Messages[0].Content.Text)

	embedded, err := c.GetPrompt(ctx, "test_prompt_with_embedded_resource", map[string]string{"resourceUri": "test://example-resource"})
	require.NoError(t, err)
	require.Len(t, embedded.Messages, 2)
	assert.Equal(t, "test://example-resource", embedded.Messages[0].Content.Resource.URI)

	image, err := c.GetPrompt(ctx, "test_prompt_with_image", nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"image", "text"}, []string{image.Messages[0].Content.Type, image.Messages[1].Content.Type})

	for _, tt := range []struct {
		name, prompt string
		args         map[string]string
	}{
		{"missing argument", "test_prompt_with_arguments", map[string]string{"arg1": "hello"}},
		{"unknown argument", "test_prompt_with_arguments", map[string]string{"arg1": "a", "arg2": "b", "arg3": "c"}},
		{"relative resource URI", "test_prompt_with_embedded_resource", map[string]string{"resourceUri": "not-a-uri"}},
	} {
		_, err := c.GetPrompt(ctx, tt.prompt, tt.args)
		var rpcErr *mcp.Error
		require.ErrorAs(t, err, &rpcErr, tt.name)
		assert.EqualValues(t, mcp.CodeInvalidParams, rpcErr.Code, tt.name)
	}
}

func TestCompletion(t *testing.T) {
	c, _ := connect(t, nil)
	ctx := context.Background()
	got, err := c.CompletePrompt(ctx, "test_prompt_with_arguments", "arg1", "par", nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"paris", "park", "party"}, got.Values)
	got, err = c.CompletePrompt(ctx, "test_prompt_with_arguments", "arg1", "test", nil)
	require.NoError(t, err)
	assert.Empty(t, got.Values)
	got, err = c.CompleteTemplate(ctx, "test://template/{id}/data", "id", "4", nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"456"}, got.Values)
}

// TestHTTP runs the HTTP entry point: a session over streamable HTTP whose
// tools log and send requests to the client on their call's SSE stream (the
// client opens no GET stream), a call whose SSE stream the server closes
// before answering (the client resumes it), then graceful shutdown.
func TestHTTP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	srv := newServer(newRegistry(quiet), quiet)
	go func() {
		served <- serveHTTP(ctx, srv, ln, &streamhttp.Options{RetryInterval: 5 * time.Millisecond})
	}()

	var mu sync.Mutex
	logs := 0
	c := mcp.NewClient(&mcp.ClientOptions{Logger: quiet,
		OnSampling: func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: mcp.RoleAssistant, Model: "m", Content: mcp.SamplingMessageContent{mcp.SamplingText("ok")}}, nil
		},
		OnLog: func(*mcp.LoggingMessageNotificationParams) { mu.Lock(); logs++; mu.Unlock() },
	})
	require.NoError(t, c.Connect(ctx, streamhttp.NewClientTransport("http://"+ln.Addr().String()+"/mcp",
		&streamhttp.ClientOptions{Logger: quiet, DisableGETStream: true})))
	_, err = c.CallTool(ctx, "test_tool_with_logging", nil)
	require.NoError(t, err)
	mu.Lock()
	assert.Equal(t, 3, logs, "log messages travel on the call's stream")
	mu.Unlock()
	res, err := c.CallTool(ctx, "test_sampling", map[string]any{"prompt": "p"})
	require.NoError(t, err)
	assert.Equal(t, "LLM response: ok", res.Content[0].Text)
	res, err = c.CallTool(ctx, "test_reconnection", nil)
	require.NoError(t, err)
	assert.Contains(t, res.Content[0].Text, "Reconnection test completed successfully")
	require.NoError(t, c.Close())

	cancel()
	select {
	case err := <-served:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("serveHTTP did not return after its context ended")
	}
	_, err = net.Dial("tcp", ln.Addr().String())
	require.Error(t, err, "the listener is closed")
}
