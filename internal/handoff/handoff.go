// Package handoff holds the one value a transport that reads its own
// requests (streamable HTTP) hands package mcp per request, and through
// which mcp answers back what the transport needs of the answer. It is the
// whole per-request seam between the two: the message as the transport
// read it, the classifier's reading of its params, the hook that ends the
// request when the transport ends it first, and the answer's JSON-RPC
// error code (hence its HTTP status).
package handoff

import (
	"sync"
	"sync/atomic"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/revision"
)

// Request is one request (or notification, or response) a transport read
// and hands to the server. The transport fills Msg, MaxDepth and Reading
// before it hands the Request over, and never changes them afterwards; the
// rest is safe for concurrent use. The zero Request has no abort hook and
// no error code.
type Request struct {
	// Msg is the message, decoded with at most MaxDepth levels of
	// nesting. Its bytes are the server's to keep: they never change.
	Msg jsonrpc.Message
	// Reading is revision.Classify's reading of Msg.Params (the zero
	// Reading for a response).
	Reading revision.Reading

	code atomic.Int64
	end  func()
	mu   sync.Mutex
	// MaxDepth (a limit: 32 bits are plenty, and share a word with
	// aborted) is the depth Msg was decoded with.
	MaxDepth int32
	aborted  bool
}

// Carrier is a transport that hands over the Request of the message its
// last Read returned (or of the one message it serves otherwise).
type Carrier interface {
	// Handoff returns that Request, or nil when there is none (a batch,
	// or a message the transport made itself).
	Handoff() *Request
}

// OnAbort registers end, which Abort calls once: the server registers
// what ends the request, for a transport that may end it before the
// request's context ends. end runs at once when the Request is aborted
// already. A later registration replaces an earlier one.
func (x *Request) OnAbort(end func()) {
	x.mu.Lock()
	if !x.aborted {
		x.end = end
		x.mu.Unlock()
		return
	}
	x.mu.Unlock()
	end()
}

// Abort ends the request: it calls the hook OnAbort registered, once, and
// makes a later OnAbort call its hook at once.
func (x *Request) Abort() {
	x.mu.Lock()
	end := x.end
	x.aborted, x.end = true, nil
	x.mu.Unlock()
	if end != nil {
		end()
	}
}

// SetErrorCode records the JSON-RPC error code of the answer the server is
// about to write (0: a result); the server calls it before it writes.
func (x *Request) SetErrorCode(code int64) { x.code.Store(code) }

// ErrorCode returns the code SetErrorCode recorded last (0: none, or a
// result).
func (x *Request) ErrorCode() int64 { return x.code.Load() }

// Status returns the HTTP status of the answer of a per-request
// revision's request (revision.ErrorStatus of ErrorCode).
func (x *Request) Status() int { return revision.ErrorStatus(x.ErrorCode()) }
