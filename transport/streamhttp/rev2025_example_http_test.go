//go:build !keel_omit2025

package streamhttp_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/keelmcp/keel/transport"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// Every bound has a default; a request beyond one is refused with a
// JSON-RPC error naming it, whose data carries the correlation id the
// client chose in _meta (else one the handler makes, which it logs with
// the refusal). Here a handler admits one session.
func ExampleOptions_limits() {
	serve := func(ctx context.Context, t transport.Transport) error {
		defer t.Close()
		for {
			msg, err := t.Read(ctx)
			if err != nil {
				return nil
			}
			if strings.Contains(string(msg), `"initialize"`) {
				_ = t.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}`))
			}
		}
	}
	h := streamhttp.NewHandler(&streamhttp.Options{Serve: serve, MaxSessions: 1, Logger: slog.New(slog.DiscardHandler)})
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	initialize := func() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"},"_meta":{"correlationId":"init-1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, string(body))
	}
	initialize()
	initialize()
	fmt.Println(streamhttp.DefaultMaxSessions, streamhttp.DefaultInitTimeout, streamhttp.DefaultBodyReadTimeout)
	// Output:
	// 200 {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}
	// 503 {"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"Service Unavailable: too many sessions (MaxSessions = 1)","data":{"limit":"MaxSessions","max":1,"correlationId":"init-1"}}}
	// 10000 10s 30s
}
