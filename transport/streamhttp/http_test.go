package streamhttp_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// A failed initialize issues no session id and leaves no session behind.
func TestHTTPFailedInitializeNoSession(t *testing.T) {
	errServe := func(ctx context.Context, tr transport.Transport) error {
		defer tr.Close()
		msg, err := tr.Read(ctx)
		if err != nil {
			return nil
		}
		_ = msg
		_ = tr.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad params"}}`))
		<-ctx.Done()
		return nil
	}
	h2 := streamhttp.NewHandler(&streamhttp.Options{Serve: errServe, Logger: quiet})
	srv2 := newServer(t, h2)
	resp := do(t, srv2, request{body: initBody})
	assert.Contains(t, readBody(t, resp), "bad params")
	assert.Empty(t, resp.Header.Get("Mcp-Session-Id"))
	require.Eventually(t, func() bool { return h2.SessionCount() == 0 }, 2*time.Second, time.Millisecond)
}
