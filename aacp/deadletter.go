package aacp

import (
	"context"
	"errors"

	"github.com/keelmcp/keel/mcp"
)

// Dead letters: a message whose stored form cannot be decoded is
// quarantined by the Store when it is claimed (Status FAILED, with the
// reason) and never claimed again, so it cannot wedge the polls of the
// Node; the Node that claimed it runs its request from the request record
// (the RESPONSE's waiters get the recorded resolution). Operators see the
// quarantined messages with DeadLetters and retry or drop them.

// DeadLetters returns up to limit quarantined messages (<= 0: 100), oldest
// first.
func (n *Node) DeadLetters(ctx context.Context, limit int) ([]*DeadLetter, error) {
	return n.store.ListDeadLetters(ctx, limit)
}

// RetryDeadLetter puts a quarantined message back in the ledger's queue,
// due now (after its stored form was repaired, typically). It goes through
// the receiver's deduplication again: a request recorded COMPLETED or
// FAILED meanwhile does not run again.
func (n *Node) RetryDeadLetter(ctx context.Context, messageID string) error {
	return n.store.RetryDeadLetter(ctx, messageID, n.clock.Now())
}

// DropDeadLetter deletes a quarantined message. When it was a REQUEST or
// EVENT whose request is still pending, the request is recorded FAILED
// with protocol_error and the quarantine's reason, so that its callers get
// an answer.
func (n *Node) DropDeadLetter(ctx context.Context, messageID string) error {
	d, err := n.store.DropDeadLetter(ctx, messageID)
	if err != nil {
		return err
	}
	if d.RequestID == "" || d.MessageType == MessageResponse {
		return nil
	}
	_, err = n.store.Resolve(ctx, &Resolution{RequestID: d.RequestID, Outcome: OutcomeFailed,
		Completion: CompletionProtocolError, CompletedAt: n.clock.Now(),
		Error: &mcp.StructuredError{Code: CodeProtocol, Message: "message dropped as a dead letter: " + d.Reason}}, nil, Fence{})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}
