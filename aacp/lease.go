package aacp

import (
	"errors"
	"time"

	"github.com/keelmcp/keel/mcp"
)

// Lease is the ownership of one agent by one Node, kept in the Store: while
// a Node holds an agent's lease, it alone runs the agent's requests.
//
// Token is the lease's fencing token. It grows by one at every acquisition
// (a takeover, or the same owner acquiring again), never at a renewal, so
// the holder's token is current exactly until someone else acquires the
// lease. Every write a Node makes on the ledger for the requests of a leased
// agent carries that token (a Fence) and the Store refuses it, with an
// error matching ErrLeaseLost, once the token is no longer current: a Node
// that was paused past its lease's expiry and taken over cannot commit.
type Lease struct {
	// AgentID is the agent leased.
	AgentID string
	// Owner is the holder (a Node's ID); empty once released.
	Owner string
	// Token is the fencing token of the holder's acquisition.
	Token uint64
	// ExpiresAt is when the lease ends unless renewed; then another owner
	// may acquire it. It is set from the clock of the holder's Node:
	// Nodes sharing a ledger need clocks that agree far better than
	// their lease TTL.
	ExpiresAt time.Time
}

// Fence returns the fence of the lease's token.
func (l *Lease) Fence() Fence { return Fence{AgentID: l.AgentID, Token: l.Token} }

// Fence conditions a ledger write on a lease: the Store applies the write
// only while Token is the current token of AgentID's lease (not taken over
// since, not released), and otherwise fails it with an error matching
// ErrLeaseLost, writing nothing. The zero Fence conditions nothing (writes
// from outside any Node, such as MarkFailed).
type Fence struct {
	AgentID string
	Token   uint64
}

// IsZero reports whether f conditions nothing.
func (f Fence) IsZero() bool { return f.AgentID == "" }

// Lease errors.
var (
	// ErrLeaseHeld: another owner holds an unexpired lease on the agent.
	ErrLeaseHeld = errors.New("aacp: agent lease held by another owner")
	// ErrLeaseLost: the lease (or the fencing token of a write) is no
	// longer current: the lease was taken over or released, so the write
	// was refused and nothing was stored.
	ErrLeaseLost = errors.New("aacp: agent lease lost (fencing token no longer current)")
)

// RetryUpdate is a conditional update of a pending request between two
// attempts of its handler (see Store.UpdateRetry).
type RetryUpdate struct {
	// RequestID is the request updated.
	RequestID string
	// Attempts is the number of attempts started, the one about to start
	// included.
	Attempts int
	// Error is the error of the last failed attempt (nil: the recorded one
	// is kept).
	Error *mcp.StructuredError
	// Fence is the lease the update is conditioned on (zero: none).
	Fence Fence
}

// Lease bounds and defaults of Options.LeaseTTL and
// Options.LeaseRenewInterval.
const (
	// DefaultLeaseTTL is how long an agent's lease lasts unless renewed:
	// how long a crashed Node's agents wait before another Node takes them
	// over.
	DefaultLeaseTTL = 15 * time.Second
	// MinLeaseTTL and MaxLeaseTTL bound Options.LeaseTTL.
	MinLeaseTTL = 50 * time.Millisecond
	MaxLeaseTTL = 10 * time.Minute
	// MinLeaseRenewInterval bounds Options.LeaseRenewInterval from below;
	// from above it is bounded by half the lease TTL, so that one failed
	// renewal does not lose the lease.
	MinLeaseRenewInterval = 10 * time.Millisecond
)
