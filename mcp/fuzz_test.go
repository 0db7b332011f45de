package mcp_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
)

const fuzzBarrierID = `"keel-fuzz-barrier-5e0c"`

// FuzzServerInput feeds arbitrary lines (the input split at newlines) to a
// server over the in-memory pipe after a valid 2025-03-26 handshake (the
// revision with batches, so batch handling is fuzzed too). Invariants: the
// server never panics, every message it emits is valid JSON that validates
// against the 2025-03-26 schema or (answers to requests that name it in
// _meta) the 2026-07-28 one, and it still answers a ping afterwards.
//
// The seed corpus is every line the golden transcripts send.
func FuzzServerInput(f *testing.F) {
	files, _ := filepath.Glob("testdata/transcripts/*.txtar")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, af := range mcptest.ParseTxtar(data).Files {
			for _, line := range bytes.Split(af.Data, []byte("\n")) {
				if p, ok := bytes.CutPrefix(line, []byte("> ")); ok {
					f.Add(bytes.Clone(p))
				}
			}
		}
	}
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"slow\"}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}"))
	f.Add([]byte("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"slow\"}},{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}]"))

	f.Fuzz(func(t *testing.T, data []byte) {
		opts := mcptest.ServerOptions(mcptest.NewTools())
		opts.ShutdownTimeout = 20 * time.Millisecond
		ct, wait := mcptest.StartServer(t, opts, nil)
		defer func() {
			ct.Close()
			if err := wait(); err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
		}()
		msgs := make(chan []byte, 1024)
		go func() {
			defer close(msgs)
			for {
				m, err := ct.Read(context.Background())
				if err != nil {
					return
				}
				msgs <- bytes.Clone(m)
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		write := func(line []byte) {
			if err := ct.Write(ctx, line); err != nil {
				t.Fatalf("write: %v", err)
			}
		}
		write([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`))
		write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		for _, line := range bytes.Split(data, []byte("\n")) {
			if len(line) > 0 {
				write(line)
			}
		}
		write([]byte(`{"jsonrpc":"2.0","id":` + fuzzBarrierID + `,"method":"ping"}`))
		for {
			var m []byte
			select {
			case m = <-msgs:
			case <-ctx.Done():
				t.Fatal("the server did not answer the final ping")
			}
			if m == nil {
				t.Fatal("the connection ended before the final ping was answered")
			}
			if !jsontext.Value(m).IsValid() {
				t.Fatalf("server emitted invalid JSON: %q", m)
			}
			// The connection speaks 2025-03-26 and, for requests that name
			// it in _meta, 2026-07-28 (fuzzed ids may repeat, so a message
			// is not tied to its request: it must fit one of the two).
			if err := mcptest.CheckServerMessage(mcp.Version20250326, nil, m); err != nil {
				if err2 := mcptest.CheckServerMessage(mcp.Version20260728, nil, m); err2 != nil {
					t.Fatalf("server message %s violates the 2025-03-26 schema (%v) and the 2026-07-28 one: %v", m, err, err2)
				}
			}
			var resp struct {
				ID jsontext.Value `json:"id"`
			}
			if json.Unmarshal(m, &resp) == nil && string(resp.ID) == fuzzBarrierID {
				return
			}
		}
	})
}
