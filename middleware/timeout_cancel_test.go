package middleware

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/keelmcp/keel/mcp"
)

// A caller that goes away is no timeout: the handler's own error passes
// through, nothing is answered (the Server suppresses the response).
func TestTimeoutCallerCancellationIsNotTimeout(t *testing.T) {
	tt := newTestTools(t)
	s := serve(t, New(tt.reg, Timeout(time.Hour)))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan answer, 1)
	go func() { done <- s.call(ctx, "cooperate", `{}`) }()
	<-tt.started
	cancel() // the client sends notifications/cancelled
	a := <-done
	assert.ErrorIs(t, a.err, context.Canceled)
	r := s.next(t)
	assert.ErrorIs(t, r.err, context.Canceled, "the handler's own error passes through")
	assert.Eventually(t, func() bool { return strings.Contains(s.logs.String(), "response suppressed") }, waitLimit, time.Millisecond)
	s.flush(t)
	assert.Zero(t, s.wire.count(string(mcp.ErrTimeout)), "no early response")
	assert.NotContains(t, s.logs.String(), "answered at the response deadline")
}
