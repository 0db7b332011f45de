package mcp_test

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/keelmcp/keel/mcp"
)

// clientLog is a ClientMiddleware that records what passes through it.
type clientLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *clientLog) middleware(name string) mcp.ClientMiddleware {
	return func(next mcp.ClientHandler) mcp.ClientHandler {
		return func(ctx context.Context, msg *mcp.ClientMessage) (any, error) {
			dir := "out"
			if msg.Incoming {
				dir = "in"
			}
			l.add(name + ">" + dir + " " + msg.Method)
			res, err := next(ctx, msg)
			if _, raw := res.(json.RawMessage); raw && !msg.Incoming {
				l.add(name + "<raw " + msg.Method)
			}
			return res, err
		}
	}
}

func (l *clientLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
}

func (l *clientLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lines
	l.lines = nil
	return out
}
