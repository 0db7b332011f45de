//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// catalogServer returns deterministic server options serving the mcptest
// catalog as resources, prompts and completions (and its mutator tools).
func catalogServer() (*mcp.ServerOptions, *registry.Registry) {
	reg := mcptest.NewCatalog()
	mcptest.AddCatalogTools(reg)
	opts := mcptest.ServerOptions(reg)
	opts.Resources, opts.Prompts, opts.Completions = reg, reg, reg
	return opts, reg
}

func TestClientResources(t *testing.T) {
	ctx := context.Background()
	opts, _ := catalogServer()
	opts.PageSize = 2
	c, end := connect(t, opts, nil)

	caps := c.InitializeResult().Capabilities
	require.NotNil(t, caps.Resources)
	assert.True(t, caps.Resources.Subscribe)
	assert.True(t, caps.Resources.ListChanged)

	first, err := c.ListResources(ctx, "")
	require.NoError(t, err)
	assert.Len(t, first.Resources, 2)
	assert.NotEmpty(t, first.NextCursor)
	all, err := c.ListAllResources(ctx)
	require.NoError(t, err)
	var uris []string
	for _, r := range all {
		uris = append(uris, r.URI)
	}
	assert.Equal(t, []string{mcptest.ResourceBroken, mcptest.ResourceGone, mcptest.ResourceHello, mcptest.ResourceLogo}, uris)

	templates, err := c.ListAllResourceTemplates(ctx)
	require.NoError(t, err)
	assert.Len(t, templates, 5)
	assert.Equal(t, mcptest.TemplateFiles, templates[0].URITemplate)

	res, err := c.ReadResource(ctx, mcptest.ResourceLogo)
	require.NoError(t, err)
	require.Len(t, res.Contents, 1)
	data, err := base64.StdEncoding.DecodeString(*res.Contents[0].Blob)
	require.NoError(t, err)
	assert.Equal(t, mcptest.LogoPNG, data)

	res, err = c.ReadResource(ctx, "test://users/carol")
	require.NoError(t, err)
	assert.Equal(t, `{"id":"carol"}`, *res.Contents[0].Text)

	_, err = c.ReadResource(ctx, "test://users/ghost")
	var rpcErr *mcp.Error
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, int64(mcp.CodeResourceNotFound), rpcErr.Code)
	assert.JSONEq(t, `{"uri":"test://users/ghost","correlationId":"id-1"}`, string(rpcErr.Data.(json.RawMessage)),
		"the uri, and the correlationId every protocol error carries")

	_, err = c.ReadResource(ctx, "relative/uri")
	assert.ErrorIs(t, err, &mcp.Error{Code: mcp.CodeInvalidParams})
	require.NoError(t, end())
}

func TestClientPrompts(t *testing.T) {
	ctx := context.Background()
	opts, _ := catalogServer()
	c, end := connect(t, opts, nil)

	prompts, err := c.ListAllPrompts(ctx)
	require.NoError(t, err)
	require.Len(t, prompts, 4)
	assert.Equal(t, mcptest.PromptGreet, prompts[1].Name)
	assert.Equal(t, []mcp.PromptArgument{
		{Name: "name", Description: "Who to greet", Required: true},
		{Name: "style", Title: "Style", Description: "formal or casual"},
	}, prompts[1].Arguments)

	res, err := c.GetPrompt(ctx, mcptest.PromptGreet, map[string]string{"name": "Ada", "style": "formal"})
	require.NoError(t, err)
	assert.Equal(t, "Good day, Ada.", res.Messages[0].Content.Text)

	res, err = c.GetPrompt(ctx, mcptest.PromptRich, nil)
	require.NoError(t, err)
	var types []string
	for _, m := range res.Messages {
		types = append(types, m.Content.Type)
		require.NoError(t, m.Content.Validate())
	}
	assert.Equal(t, []string{mcp.ContentImage, mcp.ContentAudio, mcp.ContentResourceLink, mcp.ContentResource}, types)

	_, err = c.GetPrompt(ctx, mcptest.PromptGreet, nil)
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se, "the StructuredError in error.data is reachable with errors.As")
	assert.Equal(t, mcp.ErrInvalidArgument, se.Code)
	assert.ErrorIs(t, err, &mcp.Error{Code: mcp.CodeInvalidParams})

	_, err = c.GetPrompt(ctx, "nope", nil)
	require.ErrorAs(t, err, &se)
	assert.Equal(t, mcp.ErrNotFound, se.Code)
	require.NoError(t, end())
}

// recordingTransport records what the client writes.
type recordingTransport struct {
	transport.Transport
	mu   sync.Mutex
	sent []string
}

func (r *recordingTransport) Write(ctx context.Context, msg []byte) error {
	r.mu.Lock()
	r.sent = append(r.sent, string(msg))
	r.mu.Unlock()
	return r.Transport.Write(ctx, msg)
}

func (r *recordingTransport) last(method string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.sent) - 1; i >= 0; i-- {
		if strings.Contains(r.sent[i], `"method":"`+method+`"`) {
			return r.sent[i]
		}
	}
	return ""
}

func TestClientComplete(t *testing.T) {
	ctx := context.Background()
	for _, v := range []string{mcp.Version20251125, mcp.Version20250326, mcp.Version20241105} {
		t.Run(v, func(t *testing.T) {
			opts, _ := catalogServer()
			ct, wait := mcptest.StartServer(t, opts, nil)
			rec := &recordingTransport{Transport: mcptest.ValidateTransport(t, ct)}
			copts := *quietClient
			copts.ProtocolVersion = v
			c := mcp.NewClient(&copts)
			require.NoError(t, c.Connect(ctx, rec))
			defer func() { c.Close(); _ = wait() }()
			assert.Equal(t, v != mcp.Version20241105, c.InitializeResult().Capabilities.Completions != nil)

			comp, err := c.CompletePrompt(ctx, mcptest.PromptGreet, "style", "ca", nil)
			require.NoError(t, err)
			assert.Equal(t, []string{"casual"}, comp.Values)

			comp, err = c.CompleteTemplate(ctx, mcptest.TemplateRepo, "repo", "", map[string]string{"owner": "keel"})
			require.NoError(t, err)
			sent := rec.last("completion/complete")
			if v == mcp.Version20251125 {
				assert.Equal(t, []string{"keel-core", "keel-docs"}, comp.Values)
				assert.Contains(t, sent, `"context"`)
			} else {
				assert.Equal(t, []string{"misc"}, comp.Values)
				assert.NotContains(t, sent, `"context"`, "the client does not send what the revision lacks")
			}

			comp, err = c.CompleteTemplate(ctx, mcptest.TemplateNumber, "n", "", nil)
			require.NoError(t, err)
			assert.Len(t, comp.Values, mcp.MaxCompletionValues)
			assert.Equal(t, int64(150), *comp.Total)
			assert.True(t, comp.HasMore)
		})
	}
}

func TestClientCompleteWithoutCapability(t *testing.T) {
	opts, _ := catalogServer()
	opts.Completions = nil
	c, end := connect(t, opts, nil)
	assert.Nil(t, c.InitializeResult().Capabilities.Completions)
	_, err := c.CompletePrompt(context.Background(), mcptest.PromptGreet, "style", "", nil)
	assert.ErrorIs(t, err, &mcp.Error{Code: mcp.CodeMethodNotFound})
	require.NoError(t, end())
}

func TestClientSubscriptionsAndListChanged(t *testing.T) {
	ctx := context.Background()
	updated := make(chan string, 16)
	changed := make(chan string, 16)
	copts := *quietClient
	copts.OnResourceUpdated = func(uri string) { updated <- uri }
	copts.OnListChanged = func(method string) { changed <- method }
	opts, reg := catalogServer()
	c, end := connect(t, opts, &copts)

	next := func(ch chan string) string {
		t.Helper()
		select {
		case v := <-ch:
			return v
		case <-time.After(5 * time.Second):
			t.Fatal("no notification")
			return ""
		}
	}

	require.NoError(t, c.Subscribe(ctx, mcptest.ResourceHello))
	require.NoError(t, c.Subscribe(ctx, mcptest.ResourceLogo))
	reg.NotifyResourceUpdated(mcptest.ResourceHello)
	assert.Equal(t, mcptest.ResourceHello, next(updated))

	require.NoError(t, c.Unsubscribe(ctx, mcptest.ResourceHello))
	reg.NotifyResourceUpdated(mcptest.ResourceHello) // no longer subscribed
	reg.NotifyResourceUpdated(mcptest.ResourceLogo)
	assert.Equal(t, mcptest.ResourceLogo, next(updated), "the unsubscribed resource sent nothing")

	_, err := c.CallTool(ctx, mcptest.ToolAddPrompt, map[string]any{"name": "p1"})
	require.NoError(t, err)
	assert.Equal(t, "notifications/prompts/list_changed", next(changed))
	require.NoError(t, reg.AddTextResource(&mcp.Resource{URI: "test://new", Name: "new"}, "n"))
	assert.Equal(t, "notifications/resources/list_changed", next(changed))
	require.NoError(t, registry.Register(reg, "extra", "", func(context.Context, struct{}) (string, error) { return "", nil }, nil))
	assert.Equal(t, "notifications/tools/list_changed", next(changed))

	tools, err := c.ListAllTools(ctx)
	require.NoError(t, err)
	assert.True(t, func() bool {
		for _, tl := range tools {
			if tl.Name == "extra" {
				return true
			}
		}
		return false
	}())
	require.NoError(t, end())
}

func TestClientSubscribeWithoutCapability(t *testing.T) {
	opts, reg := catalogServer()
	opts.Resources = struct{ mcp.ResourceSource }{reg} // no notifiers: no subscribe
	c, end := connect(t, opts, nil)
	assert.False(t, c.InitializeResult().Capabilities.Resources.Subscribe)
	err := c.Subscribe(context.Background(), mcptest.ResourceHello)
	var rpcErr *mcp.Error
	require.True(t, errors.As(err, &rpcErr))
	assert.Equal(t, int64(mcp.CodeMethodNotFound), rpcErr.Code)
	require.NoError(t, end())
}

// TestFeatureRequestCancelled: notifications/cancelled for a slow
// resources/read cancels the handler's context and suppresses the response.
func TestFeatureRequestCancelled(t *testing.T) {
	reg := registry.New(nil)
	started := make(chan struct{})
	stopped := make(chan error, 1)
	require.NoError(t, reg.AddResource(&mcp.Resource{URI: "test://slow", Name: "slow"}, func(ctx context.Context, _ string) ([]mcp.ResourceContents, error) {
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return nil, ctx.Err()
	}))
	opts := mcptest.ServerOptions(nil)
	opts.Resources = reg
	c, end := connect(t, opts, nil)

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := c.ReadResource(ctx, "test://slow"); errc <- err }()
	<-started
	cancel()
	assert.ErrorIs(t, <-errc, context.Canceled)
	select {
	case err := <-stopped:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the handler was not cancelled")
	}
	require.NoError(t, c.Ping(context.Background()), "the connection lives on")
	require.NoError(t, end())
}

// A server that answers every page with the cursor it was given would keep
// ListAll* looping forever: the client stops with an error instead.
func TestClientListAllStopsOnRepeatedCursor(t *testing.T) {
	ct, st := transport.NewPipe(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // a hand-written server: every list page points to "again"
		for {
			raw, err := st.Read(ctx)
			if err != nil {
				return
			}
			var m struct {
				ID     jsontext.Value `json:"id"`
				Method string         `json:"method"`
			}
			if jsonv2.Unmarshal(raw, &m) != nil || m.ID == nil {
				continue
			}
			result := `{"tools":[],"resources":[],"prompts":[],"resourceTemplates":[],"tasks":[],"nextCursor":"again"}`
			if m.Method == "initialize" {
				result = `{"protocolVersion":"` + mcp.Version20251125 + `","capabilities":{"tools":{},"resources":{},"prompts":{},"tasks":{"list":{}}},"serverInfo":{"name":"loop","version":"1"}}`
			}
			_ = st.Write(ctx, []byte(`{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":`+result+`}`))
		}
	}()
	c := mcp.NewClient(quietClient)
	require.NoError(t, c.Connect(ctx, ct))
	defer c.Close()
	lists := map[string]func() error{
		"tools":     func() error { _, err := c.ListAllTools(ctx); return err },
		"resources": func() error { _, err := c.ListAllResources(ctx); return err },
		"templates": func() error { _, err := c.ListAllResourceTemplates(ctx); return err },
		"prompts":   func() error { _, err := c.ListAllPrompts(ctx); return err },
		"tasks":     func() error { _, err := c.ListAllTasks(ctx); return err },
	}
	for name, list := range lists {
		err := list()
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), `cursor "again" with the same nextCursor`, name)
	}
}
