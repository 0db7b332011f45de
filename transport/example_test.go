package transport_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/keelmcp/keel/transport"
)

// Two ends of an in-memory pipe exchange a request and its response.
func ExampleNewPipe() {
	client, server := transport.NewPipe(nil)
	ctx := context.Background()

	_ = client.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req, _ := server.Read(ctx)
	fmt.Printf("server got %s\n", req)

	_ = server.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	resp, _ := client.Read(ctx)
	fmt.Printf("client got %s\n", resp)

	_ = client.Close()
	_, err := server.Read(ctx)
	fmt.Println("after close:", err)
	// Output:
	// server got {"jsonrpc":"2.0","id":1,"method":"ping"}
	// client got {"jsonrpc":"2.0","id":1,"result":{}}
	// after close: EOF
}

// Stdio frames messages as lines: line endings and blank lines are
// stripped on input, an oversized line is skipped, and output gets one "\n"
// per message.
func ExampleNewStdioStreams() {
	in := strings.NewReader("{\"id\":1}\r\n\n{\"id\":\"too long\"}\n{\"id\":2}")
	var out strings.Builder
	st := transport.NewStdioStreams(in, &out, &transport.StdioOptions{MaxMessageBytes: 10})
	ctx := context.Background()
	for {
		msg, err := st.Read(ctx)
		var tooLarge *transport.MessageTooLargeError
		if errors.As(err, &tooLarge) {
			fmt.Println("skipped a line of", tooLarge.Size, "bytes")
			continue
		}
		if err != nil { // io.EOF at the end of input
			break
		}
		_ = st.Write(ctx, msg) // echo
	}
	st.Close() // flushes
	fmt.Print(out.String())
	// Output:
	// skipped a line of 17 bytes
	// {"id":1}
	// {"id":2}
}

// A client runs an MCP server binary as a subprocess and talks to it over
// its stdin and stdout; Close closes the server's stdin and waits for it to
// exit (SIGTERM, then SIGKILL, if it lingers). With keel's Client:
//
//	c := mcp.NewClient(nil)
//	err = c.Connect(ctx, tr)
func ExampleNewCommand() {
	cmd := exec.Command("my-mcp-server", "--flag")
	cmd.Stderr = os.Stderr // the server's logs
	tr, err := transport.NewCommand(cmd, &transport.CommandOptions{TerminateTimeout: 2 * time.Second})
	if err != nil {
		log.Fatal(err) // the server did not start
	}
	defer tr.Close()
	ctx := context.Background()
	_ = tr.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"me","version":"1"}}}`))
	resp, _ := tr.Read(ctx)
	fmt.Printf("%s\n", resp)
}

// A Stdio over the process's standard streams is the local "stdio" kind;
// the same newline-delimited framing over a socket is a "stream", which
// policies trusting local clients do not admit.
func ExampleStdio_Kind() {
	fmt.Println(transport.NewStdio(nil).Kind())
	conn, peer := net.Pipe()
	defer conn.Close()
	defer peer.Close()
	fmt.Println(transport.NewStdioStreams(conn, conn, nil).Kind())
	// Output:
	// stdio
	// stream
}
