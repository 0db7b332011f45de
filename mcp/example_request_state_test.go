package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// The requestState key usually comes from the environment. An unset
// variable gives an empty key, which NewServer refuses (it panics);
// Validate reports the same error, for a program that wants to handle it.
func ExampleServerOptions_Validate() {
	opts := &mcp.ServerOptions{StateKey: []byte("")} // e.g. os.Getenv("KEEL_STATE_KEY")
	var oe *mcp.OptionError
	if err := opts.Validate(); errors.As(err, &oe) {
		fmt.Println("set", oe.Option)
		fmt.Println(err)
	}

	// A ring while rotating: the first key seals new states, both open
	// the states that carry their id.
	opts = &mcp.ServerOptions{StateKeys: []mcp.StateKey{
		{ID: "2026-08", Secret: []byte("the new secret, 32 random bytes.")},
		{ID: mcp.DefaultStateKeyID, Secret: []byte("the old secret, 32 random bytes.")},
	}}
	fmt.Println("ring:", opts.Validate())
	// Output:
	// set StateKey
	// mcp: ServerOptions.StateKey: StateKey is empty (an unset environment variable?); set it to at least 32 random bytes shared by every replica (e.g. from `openssl rand -base64 32`), or leave StateKey and StateKeys nil for a random key per process
	// ring: <nil>
}

const stateTestMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`

// Over the wire: the state is opaque, and with StateSingleUse a second
// call with the same state is refused with -32602 (and logged), while the
// default accepts it again.
func TestRequestStateOverTheWire(t *testing.T) {
	type In struct {
		City string `json:"city"`
	}
	for _, singleUse := range []bool{false, true} {
		t.Run(fmt.Sprintf("singleUse=%v", singleUse), func(t *testing.T) {
			reg := registry.New(nil)
			registry.MustRegister(reg, "book", "Books a trip after asking",
				func(ctx context.Context, in In) (string, error) {
					if _, ok := mcp.InputFromContext(ctx).Elicit("ok"); !ok {
						return "", mcp.InputRequired(map[string]mcp.InputRequest{"ok": mcp.ElicitInput(mcp.ElicitParams{Message: "Sure?",
							RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)})}, []byte("secret-handler-note"))
					}
					return "booked " + in.City, nil
				}, nil)
			var logs bytes.Buffer
			ct, st := transport.NewPipe(nil)
			srv := mcp.NewServer(&mcp.ServerOptions{Tools: reg, StateKey: []byte("0123456789abcdef0123456789abcdef"),
				StateSingleUse: singleUse, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			done := make(chan error, 1)
			go func() { done <- srv.Run(context.Background(), st) }()
			t.Cleanup(func() {
				ct.Close()
				select {
				case <-done:
				case <-time.After(5 * time.Second):
					t.Error("Run did not return")
				}
			})
			call := func(id int, extra string) map[string]any {
				t.Helper()
				line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"book","arguments":{"city":"Oslo"}%s,%s}}`, id, extra, stateTestMeta)
				require.NoError(t, ct.Write(context.Background(), []byte(line)))
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				b, err := ct.Read(ctx)
				require.NoError(t, err)
				var m map[string]any
				require.NoError(t, json.Unmarshal(b, &m), string(b))
				return m
			}
			res := call(1, "")["result"].(map[string]any)
			require.Equal(t, "input_required", res["resultType"])
			state := res["requestState"].(string)
			for _, plain := range []string{"Oslo", "book", "secret-handler-note", "elicitation"} {
				assert.NotContains(t, state, plain)
			}
			answer := `,"inputResponses":{"ok":{"action":"accept","content":{}}},"requestState":"` + state + `"`
			assert.Equal(t, "complete", call(2, answer)["result"].(map[string]any)["resultType"])
			again := call(3, answer)
			if !singleUse {
				assert.Equal(t, "complete", again["result"].(map[string]any)["resultType"], "by default a state can be replayed until it expires")
				return
			}
			e := again["error"].(map[string]any)
			assert.Equal(t, float64(mcp.CodeInvalidParams), e["code"])
			assert.Contains(t, e["message"], "used already")
			assert.Contains(t, logs.String(), "reason=replayed")
			assert.False(t, strings.Contains(logs.String(), state), "the state is not logged whole")
		})
	}
}
