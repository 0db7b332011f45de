package streamhttp_test

import (
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/keelmcp/keel/transport/streamhttp"
)

// An HTTP server for an MCP endpoint, bounded in connections: the
// timeouts and header limit of NewHTTPServer, the connection limits of
// LimitListener.
func ExampleNewHTTPServer() {
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "served") })
	hs := streamhttp.NewHTTPServer(mux, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	lln := streamhttp.LimitListener(ln, &streamhttp.ListenerOptions{MaxConnsPerPeer: 64})
	go func() { _ = hs.Serve(lln) }()
	defer hs.Close()

	resp, err := http.Get("http://" + ln.Addr().String() + "/mcp")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(string(body))
	fmt.Println(hs.ReadHeaderTimeout, hs.IdleTimeout, hs.MaxHeaderBytes, lln.MaxConnsPerPeer())
	// Output:
	// served
	// 10s 1m0s 65536 64
}
