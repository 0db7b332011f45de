package middleware

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// Nested Timeout stages: the innermost deadline answers.
func TestTimeoutNested(t *testing.T) {
	tt := newTestTools(t)
	ch := New(tt.reg, Timeout(time.Hour), Timeout(5*time.Millisecond), Timeout(time.Hour))
	tc := call("cooperate", `{}`, nil)
	e := withResponder(tc)
	_, err := ch.CallTool(context.Background(), tc)
	<-tt.started
	assert.Equal(t, mcp.ErrTimeout, structuredErr(t, err).Code)
	r := <-e.ch
	assert.EqualValues(t, 5, structuredErr(t, r.err).Details["timeoutMs"])
	res, err := ch.CallTool(context.Background(), call("echo", `{"message":"ok"}`, nil))
	require.NoError(t, err)
	assert.Equal(t, "ok", res.Content[0].Text)
}

// Calls with different deadlines through one Timeout stage: each gets
// TIMEOUT early, and never before its own deadline.
func TestDeadlineQueueMixedDeadlines(t *testing.T) {
	tt := newTestTools(t)
	delays := []time.Duration{30, 5, 20, 10}
	for i, d := range delays {
		registerRaw(t, tt, "wait"+string(rune('a'+i)), d*time.Millisecond, func(ctx context.Context) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			time.Sleep(5 * time.Millisecond) // answered early, returns late
			return nil, ctx.Err()
		})
	}
	ch := New(tt.reg, Timeout(time.Hour))
	var wg sync.WaitGroup
	for i, d := range delays {
		tc := call("wait"+string(rune('a'+i)), `{}`, nil)
		e := withResponder(tc)
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			_, err := ch.CallTool(context.Background(), tc)
			assert.Equal(t, mcp.ErrTimeout, structuredErr(t, err).Code)
			select {
			case r := <-e.ch:
				assert.Equal(t, mcp.ErrTimeout, structuredErr(t, r.err).Code)
				assert.GreaterOrEqual(t, r.at.Sub(start), d*time.Millisecond)
			default:
				t.Error("no early response")
			}
		}()
	}
	wg.Wait()
}
