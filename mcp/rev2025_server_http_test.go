//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"github.com/keelmcp/keel/transport/streamhttp"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

type httpNone struct{}

type httpText struct {
	Text string `json:"text"`
}

// httpTools are the tools of the HTTP end-to-end tests: whoami (the
// caller's token subject), progress (two reports, then "done"), sample
// (asks the client's model), log (a log message tied to the call).
func httpTools(t *testing.T) *registry.Registry {
	t.Helper()
	reg := registry.New(nil)
	registry.MustRegister(reg, "whoami", "Returns the caller's subject.", func(ctx context.Context, _ httpNone) (httpText, error) {
		ti := mcp.TokenInfoFromContext(ctx)
		if ti == nil {
			return httpText{Text: "anonymous"}, nil
		}
		return httpText{Text: ti.Subject}, nil
	}, nil)
	registry.MustRegister(reg, "progress", "Reports progress.", func(ctx context.Context, _ httpNone) (httpText, error) {
		for i := 1; i <= 2; i++ {
			if err := mcp.ReportProgress(ctx, float64(i), 2, "step"); err != nil {
				return httpText{}, err
			}
		}
		return httpText{Text: "done"}, nil
	}, nil)
	registry.MustRegister(reg, "sample", "Asks the client's model.", func(ctx context.Context, _ httpNone) (httpText, error) {
		res, err := mcp.SessionFromContext(ctx).CreateMessage(ctx, &mcp.CreateMessageParams{
			Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.SamplingMessageContent{mcp.SamplingText("hi")}}},
			MaxTokens: 10,
		})
		if err != nil {
			return httpText{}, err
		}
		return httpText{Text: res.Model}, nil
	}, nil)
	registry.MustRegister(reg, "log", "Logs to the client.", func(ctx context.Context, _ httpNone) (httpText, error) {
		err := mcp.SessionFromContext(ctx).Log(ctx, mcp.LoggingLevelWarning, "test", "careful")
		return httpText{Text: "logged"}, err
	}, nil)
	return reg
}

func httpServer(t *testing.T, reg *registry.Registry) *mcp.Server {
	t.Helper()
	opts := mcptest.ServerOptions(reg)
	opts.Logging = true
	return mcp.NewServer(opts)
}

// The Client over the streamable HTTP client transport, against a Server's
// Handler behind a bearer verifier: token info reaches the handler,
// progress and log messages and a sampling request ride the call's SSE
// stream, and Close ends the session.
func TestHTTPEndToEnd(t *testing.T) {
	srv := httpServer(t, httpTools(t))
	h := streamhttp.NewServerHandler(srv, &streamhttp.Options{Logger: slog.New(slog.DiscardHandler)})
	verifier := streamhttp.TokenVerifierFunc(func(_ context.Context, token string, _ *http.Request) (*transport.TokenInfo, error) {
		if token != "secret" {
			return nil, streamhttp.ErrInvalidToken
		}
		return &transport.TokenInfo{Subject: "alice", Scopes: []string{"mcp"}, Audience: []string{"http://127.0.0.1/mcp"}}, nil
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", streamhttp.RequireBearer(verifier, &streamhttp.BearerOptions{Resource: "http://127.0.0.1/mcp", Scopes: []string{"mcp"}, Logger: slog.New(slog.DiscardHandler)})(h))
	hs := httptest.NewServer(mux)
	defer hs.Close()
	defer h.Close()

	var mu sync.Mutex
	var seen []string
	note := func(s string) {
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	}
	c := mcp.NewClient(&mcp.ClientOptions{
		Logger:     slog.New(slog.DiscardHandler),
		OnProgress: func(p *mcp.ProgressParams) { note("progress " + p.Message) },
		OnLog:      func(p *mcp.LoggingMessageNotificationParams) { note("log " + string(p.Level)) },
		OnSampling: func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: mcp.RoleAssistant, Model: "test-model",
				Content: mcp.SamplingMessageContent{mcp.SamplingText("hello")}}, nil
		},
	})
	ctx := context.Background()
	// Without a GET stream, anything not carried by the call's own stream
	// would be lost.
	tr := streamhttp.NewClientTransport(hs.URL+"/mcp", &streamhttp.ClientOptions{BearerToken: "secret",
		DisableGETStream: true, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, c.Connect(ctx, mcptest.ValidateTransport(t, tr)))
	assert.Equal(t, mcp.Version20251125, c.ProtocolVersion())
	assert.Equal(t, 1, h.SessionCount())

	text := func(name string) string {
		t.Helper()
		res, err := c.CallTool(ctx, name, nil)
		require.NoError(t, err, name)
		return res.Content[0].Text
	}
	assert.Equal(t, `{"text":"alice"}`, text("whoami"))
	assert.Equal(t, `{"text":"test-model"}`, text("sample"))
	assert.Equal(t, `{"text":"logged"}`, text("log"))
	res, err := c.CallToolWithParams(ctx, &mcp.CallToolParams{Name: "progress", Meta: mcp.Meta{"progressToken": "p1"}})
	require.NoError(t, err)
	assert.Equal(t, `{"text":"done"}`, res.Content[0].Text)
	mu.Lock()
	assert.Equal(t, []string{"log warning", "progress step", "progress step"}, seen, "each before its response")
	mu.Unlock()

	require.NoError(t, c.Close())
	require.Eventually(t, func() bool { return h.SessionCount() == 0 }, 2*time.Second, time.Millisecond)

	// Without the token: 401 naming the resource metadata.
	bad := mcp.NewClient(&mcp.ClientOptions{Logger: slog.New(slog.DiscardHandler)})
	err = bad.Connect(ctx, streamhttp.NewClientTransport(hs.URL+"/mcp", &streamhttp.ClientOptions{Logger: slog.New(slog.DiscardHandler)}))
	var se *streamhttp.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusUnauthorized, se.StatusCode)
	assert.Contains(t, se.WWWAuthenticate, `resource_metadata="`)
}

// alternating sends each request to the next of several servers, as a
// round-robin load balancer would.
type alternating struct {
	targets []string
	n       atomic.Int64
}

func (a *alternating) RoundTrip(r *http.Request) (*http.Response, error) {
	target := a.targets[int(a.n.Add(1))%len(a.targets)]
	r2 := r.Clone(r.Context())
	r2.URL.Host = target
	r2.Host = target
	return http.DefaultTransport.RoundTrip(r2)
}

// Two stateless replicas, separate Servers sharing no memory, serve one
// Client whose requests alternate between them.
func TestHTTPStatelessReplicaPair(t *testing.T) {
	var urls []string
	for range 2 {
		h := streamhttp.NewServerHandler(httpServer(t, httpTools(t)), &streamhttp.Options{Stateless: true, Logger: slog.New(slog.DiscardHandler)})
		hs := httptest.NewServer(h)
		t.Cleanup(hs.Close)
		urls = append(urls, hs.Listener.Addr().String())
	}
	lb := &alternating{targets: urls}
	tr := streamhttp.NewClientTransport("http://"+urls[0]+"/mcp", &streamhttp.ClientOptions{
		HTTPClient: &http.Client{Transport: lb}, Logger: slog.New(slog.DiscardHandler)})
	c := mcp.NewClient(&mcp.ClientOptions{Logger: slog.New(slog.DiscardHandler)})
	ctx := context.Background()
	require.NoError(t, c.Connect(ctx, mcptest.ValidateTransport(t, tr)))
	assert.Empty(t, tr.SessionID())
	for range 4 {
		tools, err := c.ListAllTools(ctx)
		require.NoError(t, err)
		assert.Len(t, tools, 4)
		res, err := c.CallTool(ctx, "whoami", nil)
		require.NoError(t, err)
		assert.Equal(t, `{"text":"anonymous"}`, res.Content[0].Text)
	}
	// Progress still rides the call's stream; a request to the client is
	// impossible (no capabilities are known) and fails cleanly.
	res, err := c.CallToolWithParams(ctx, &mcp.CallToolParams{Name: "progress", Meta: mcp.Meta{"progressToken": 1}})
	require.NoError(t, err)
	assert.Equal(t, `{"text":"done"}`, res.Content[0].Text)
	_, err = c.CallTool(ctx, "sample", nil)
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, se.Message, "sampling")
	require.NoError(t, c.Close())
	assert.GreaterOrEqual(t, lb.n.Load(), int64(12))
}
