package mcp

import "fmt"

// defaultMaxInFlight is the default of ServerOptions.MaxInFlight: the
// requests of one connection served at once. It is four times the depth
// a pipelining client keeps (a throughput harness keeps 64 in flight). A
// request waiting in its handler holds about 10 KiB besides its message
// (measured: 1.3 KiB of heap and an 8 KiB goroutine stack), so the bound
// holds about 2.5 MiB per connection for small requests, and at most 256
// messages of the transport's MaxMessageBytes (1 GiB at its default).
const defaultMaxInFlight = 256

// Defaults of the byte bounds on what a client makes the server hold.
const (
	// defaultMaxURIBytes bounds one resource URI a client subscribes to or
	// filters on, and one task id a listen names (ServerOptions.MaxURIBytes).
	defaultMaxURIBytes = 8 << 10
	// defaultMaxSubscriptionBytes bounds the subscriptions of one session
	// and the filter of one listen (ServerOptions.MaxSubscriptionBytes).
	defaultMaxSubscriptionBytes = 128 << 10
	// subscriptionEntryBytes is what each URI or task id counts against
	// MaxSubscriptionBytes beyond its own length: the bookkeeping that
	// holds it.
	subscriptionEntryBytes = 64
	// defaultMaxPeerSubscriptionBytes bounds what one peer's
	// subscriptions and listen filters hold together, over all its
	// sessions and requests (ServerOptions.MaxPeerSubscriptionBytes).
	defaultMaxPeerSubscriptionBytes = 1 << 20
	// defaultMaxTotalSubscriptionBytes bounds what the subscriptions and
	// listen filters of every peer hold together
	// (ServerOptions.MaxTotalSubscriptionBytes).
	defaultMaxTotalSubscriptionBytes = 64 << 20
)

// limitError refuses a request at one of the server's bounds and names
// it: code (CodeInvalidParams for a request that is too large in itself,
// CodeServerBusy for a quota that is full), with a StructuredError of
// code sc in data whose details are {"limit": limit, "max": max}. Its
// correlation id is left empty: the answer fills in the request's
// (responder.error).
func limitError(code int64, sc ErrorCode, retryable bool, what, limit string, max int) *Error {
	prefix := "Invalid params: "
	if code == CodeServerBusy {
		prefix = "Server busy: "
	}
	return &Error{Code: code, Message: fmt.Sprintf("%s%s (%s is %d)", prefix, what, limit, max),
		Data: &StructuredError{Code: sc, Message: what, Retryable: retryable,
			Details: map[string]any{"limit": limit, "max": max}}}
}

// subscriptionCost is what uri (or a task id) counts against
// MaxSubscriptionBytes.
func subscriptionCost(uri string) int { return len(uri) + subscriptionEntryBytes }

// checkURI refuses a URI longer than MaxURIBytes (without echoing it).
func (o *ServerOptions) checkURI(what, uri string) *Error {
	if len(uri) > o.MaxURIBytes {
		return limitError(CodeInvalidParams, ErrInvalidArgument, false,
			fmt.Sprintf("%s of %d bytes is too long", what, len(uri)), "MaxURIBytes", o.MaxURIBytes)
	}
	return nil
}

// reserveLocked counts n bytes of subscriptions or filters against peer's
// budget and the server's, or returns the error naming the budget that
// they would pass (CodeServerBusy with RESOURCE_EXHAUSTED: retryable,
// since the peer's or another peer's subscriptions may end). h.mu is held.
func (h *changeHub) reserveLocked(o *ServerOptions, peer string, n int) *Error {
	switch {
	case h.heldTotal+n > o.MaxTotalSubscriptionBytes:
		return limitError(CodeServerBusy, ErrResourceExhausted, true,
			"the server's subscriptions and listen filters are at their bound", "MaxTotalSubscriptionBytes", o.MaxTotalSubscriptionBytes)
	case peer != "" && h.heldOf[peer]+n > o.MaxPeerSubscriptionBytes:
		return limitError(CodeServerBusy, ErrResourceExhausted, true,
			fmt.Sprintf("this peer's subscriptions and listen filters would hold %d bytes", h.heldOf[peer]+n), "MaxPeerSubscriptionBytes", o.MaxPeerSubscriptionBytes)
	}
	if h.heldOf == nil {
		h.heldOf = map[string]int{}
	}
	h.heldTotal += n
	if peer != "" {
		h.heldOf[peer] += n
	}
	return nil
}

// releaseLocked returns n bytes reserveLocked counted for peer. h.mu is
// held.
func (h *changeHub) releaseLocked(peer string, n int) {
	if n == 0 {
		return
	}
	h.heldTotal -= n
	if peer != "" {
		if h.heldOf[peer] -= n; h.heldOf[peer] <= 0 {
			delete(h.heldOf, peer)
		}
	}
}
