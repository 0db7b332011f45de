package postgres_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/pgtest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/postgres"
	"github.com/keelmcp/keel/transport"
)

// notes records the notifications a client receives.
type notes struct {
	mu  sync.Mutex
	got []string // method + " " + params
}

func (n *notes) add(method string, params json.RawMessage) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, method+" "+string(params))
}

func (n *notes) count(prefix string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, g := range n.got {
		if strings.HasPrefix(g, prefix) {
			c++
		}
	}
	return c
}

// fanReplica starts a Server with the fan-out of its own connection to
// dsn, and a 2025-11-25 client of it that records its notifications.
func fanReplica(t *testing.T, dsn string) (*mcp.Server, *notes) {
	t.Helper()
	srv := mcp.NewServer(&mcp.ServerOptions{Name: "replica", Version: "1", Logger: slog.New(slog.DiscardHandler),
		FanOut: postgres.NewFanOut(open(t, dsn))})
	ct, st := transport.NewPipe(nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Run(ctx, st) }()
	n := &notes{}
	c := mcp.NewClient(&mcp.ClientOptions{Logger: slog.New(slog.DiscardHandler), OnNotification: n.add})
	require.NoError(t, c.Connect(ctx, ct))
	t.Cleanup(func() { c.Close(); cancel(); <-done })
	// Notifications go to initialized sessions: a connection's messages
	// are served in order, so once a ping is answered the server has
	// taken notifications/initialized too.
	require.NoError(t, c.Ping(ctx))
	require.Len(t, srv.Sessions(), 1)
	return srv, n
}

// A NotifyAll on one replica reaches the sessions of every replica, each
// once, small or over the NOTIFY payload limit.
func TestFanOutNotifyAll(t *testing.T) {
	dsn := pgtest.Schema(t)
	a, na := fanReplica(t, dsn)
	_, nb := fanReplica(t, dsn)
	_, nc := fanReplica(t, dsn)
	ctx := context.Background()
	require.NoError(t, a.NotifyAll(ctx, "notifications/message", map[string]any{"level": "info", "data": "hello"}))
	big := strings.Repeat("x", 3*postgres.MaxNotifyPayload)
	require.NoError(t, a.NotifyAll(ctx, "notifications/message", map[string]any{"level": "info", "data": big}))
	for _, n := range []*notes{nb, nc} {
		require.Eventually(t, func() bool { return n.count("notifications/message") == 2 }, 5*time.Second, 10*time.Millisecond)
		assert.Equal(t, 1, n.count(`notifications/message {"data":"hello"`), "the small one once")
		assert.Equal(t, 1, n.count(`notifications/message {"data":"`+big), "the large one once, through the payload table")
	}
	time.Sleep(200 * time.Millisecond) // what would come twice has come
	assert.Equal(t, 2, na.count("notifications/message"), "the publishing replica delivers its own change once")
	assert.Equal(t, 2, nb.count("notifications/message"), "and the others once")
}

// A change over MaxChangeBytes is refused with an error naming the limit.
func TestFanOutRefusesOverLimit(t *testing.T) {
	f := postgres.NewFanOut(open(t, pgtest.Schema(t)))
	err := f.Publish(context.Background(), mcp.Change{Kind: "notify", Method: "x",
		Params: json.RawMessage(`{"a":"` + strings.Repeat("x", postgres.MaxChangeBytes) + `"}`)})
	assert.ErrorContains(t, err, "MaxChangeBytes")
}
