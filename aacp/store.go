package aacp

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/keelmcp/keel/mcp"
)

// Store is the ledger behind a Node: request and message records, completion,
// sequence, recovery and retention operations, plus the few atomic operations a
// Node needs to keep its promises (a status is durable before it is reported; a
// sequence number is never handed out twice; several processes poll one ledger
// safely; one Node at a time owns an agent, through a lease, and a Node that
// lost the lease cannot write; a retry never overwrites a final state).
//
// Implementations: NewMemoryStore (one process lifetime, for tests) and
// package aacp/sqlstore (SQLite file or PostgreSQL). Package
// aacp/storetest holds the conformance suite every implementation passes.
//
// Records handed to a Store belong to it from then on; records it returns
// belong to the caller. Times are compared at microsecond precision or
// better. All methods are safe for concurrent use.
type Store interface {
	// PutRequestRecord inserts or replaces the record of rec.RequestID.
	PutRequestRecord(ctx context.Context, rec *RequestRecord) error
	// PutMessageRecord inserts or replaces the record of rec.MessageID.
	PutMessageRecord(ctx context.Context, rec *MessageRecord) error
	// GetRequestRecord returns the record, or an error matching ErrNotFound.
	GetRequestRecord(ctx context.Context, requestID string) (*RequestRecord, error)
	// GetMessageRecord returns the record, or an error matching ErrNotFound.
	GetMessageRecord(ctx context.Context, messageID string) (*MessageRecord, error)

	// MarkCompleted records a final outcome (normally COMPLETED) with an
	// optional reference to the completion payload. A request already
	// final keeps its outcome (the first resolution wins); a missing one is
	// ErrNotFound.
	MarkCompleted(ctx context.Context, requestID string, outcome Outcome, completionRef string) error
	// MarkFailed records FAILED with the error, under the same rules.
	MarkFailed(ctx context.Context, requestID string, serr *mcp.StructuredError) error

	// GetLastSequence returns the highest seq used on source→target (0 if
	// none).
	GetLastSequence(ctx context.Context, source, target string) (uint64, error)
	// UpdateLastSequence raises the highest seq of source→target to seq (a
	// lower value is ignored: sequences never go back).
	UpdateLastSequence(ctx context.Context, source, target string, seq uint64) error

	// GetUnacknowledgedMessages returns the envelopes of source→target that
	// are neither acknowledged nor given up, in seq order.
	GetUnacknowledgedMessages(ctx context.Context, source, target string) ([]*Envelope, error)
	// ListPendingRequests returns the requests still UNKNOWN, oldest first;
	// a non-zero olderThan keeps those created before it.
	ListPendingRequests(ctx context.Context, olderThan time.Time) ([]*RequestRecord, error)
	// ListMessagesInState returns the messages with the given status,
	// oldest first; a non-zero olderThan keeps those created before it.
	ListMessagesInState(ctx context.Context, outcome Outcome, olderThan time.Time) ([]*MessageRecord, error)
	// PurgeExpired deletes every request and message record whose ExpiresAt
	// is at or before now and returns how many it deleted. Sequence and
	// acknowledgment counters are kept.
	PurgeExpired(ctx context.Context, now time.Time) (int, error)

	// Enqueue atomically stores a message about to be sent: req (may be
	// nil), msg, and the last sequence of msg's pair raised to msg's seq.
	// It claims req's RequestID in the same step: when the ledger records
	// that id already, it fails with ErrDuplicateRequest and stores
	// nothing, so that of several concurrent sends of one id exactly one
	// succeeds. A seq already used on the pair fails with ErrSeqConflict,
	// and a non-zero fence that is not current with ErrLeaseLost; both
	// store nothing.
	Enqueue(ctx context.Context, req *RequestRecord, msg *MessageRecord, fence Fence) error
	// Resolve atomically records res as the final state of its request (if
	// the request is not final already) and stores response (may be nil) as
	// Enqueue would. It reports whether res was applied; when it was not,
	// nothing is stored. A missing request is ErrNotFound. A non-zero fence
	// that is not current fails with ErrLeaseLost and stores nothing.
	Resolve(ctx context.Context, res *Resolution, response *MessageRecord, fence Fence) (bool, error)
	// UpdateRetry atomically records u (Attempts, and Error unless nil) on
	// a request that is still UNKNOWN, and reports whether it did. It never
	// changes a final request: one resolved meanwhile (by its handler, or
	// from outside with MarkFailed or MarkCompleted) is left as it is and
	// the result is false, so that the retry does not run. A non-zero fence
	// that is not current fails with ErrLeaseLost; a missing request is
	// ErrNotFound.
	UpdateRetry(ctx context.Context, u *RetryUpdate) (bool, error)
	// Acknowledge records cumulative acknowledgments: for each Ack the
	// pair's acknowledged seq is raised to Seq and every UNKNOWN message of
	// the pair with a seq at or below it becomes COMPLETED (delivered). An
	// Ack whose non-zero Fence is not current is skipped (nothing of it is
	// stored); the others are recorded, and the error then matches
	// ErrLeaseLost.
	Acknowledge(ctx context.Context, acks []Ack) error
	// GetAck returns the acknowledged seq of source→target (0 if none).
	GetAck(ctx context.Context, source, target string) (uint64, error)
	// ClaimDue claims up to q.Limit UNKNOWN messages addressed to one of
	// q.Targets whose NextRetryAt is at or before q.Now (any, with
	// q.IgnoreSchedule): each one's RetryCount grows by one, ClaimedBy
	// becomes q.Owner and NextRetryAt moves to q.Now + q.Backoff(RetryCount).
	// Claimed messages are invisible to other claimers until then, so
	// several processes may poll one ledger. A target with a fence in
	// q.Fences is claimed only while that fence is current. A message whose
	// stored form cannot be decoded is quarantined (see Quarantine) with the
	// decoding error as its reason and returned as it now is (Status
	// FAILED, DeadReason set, the Envelope's ids, agents, seq and type
	// only), so that the claimer can run its request from the request
	// record. It returns the claimed records, most overdue first.
	ClaimDue(ctx context.Context, q ClaimQuery) ([]*MessageRecord, error)

	// Quarantine moves an UNKNOWN message to the dead-letter state: Status
	// FAILED with DeadReason set to reason; it is never claimed again. Its
	// request is left as it is. It reports false for a message that is not
	// UNKNOWN (left as it is) and ErrNotFound for a missing one.
	Quarantine(ctx context.Context, messageID, reason string) (bool, error)
	// ListDeadLetters returns up to limit quarantined messages (<= 0: 100),
	// oldest first.
	ListDeadLetters(ctx context.Context, limit int) ([]*DeadLetter, error)
	// RetryDeadLetter puts a quarantined message back in the queue: UNKNOWN,
	// RetryCount 0, due at now, its reason cleared. A message that is not
	// quarantined is ErrNotFound.
	RetryDeadLetter(ctx context.Context, messageID string, now time.Time) error
	// DropDeadLetter deletes a quarantined message and returns what it
	// was; one that is not quarantined is ErrNotFound.
	DropDeadLetter(ctx context.Context, messageID string) (*DeadLetter, error)

	// AcquireLease gives owner the lease of agentID until now+ttl, with a
	// new fencing token (one above the previous one; 1 for a first lease),
	// when the lease is free: never acquired, released, or expired at now.
	// A lease held and unexpired fails with ErrLeaseHeld, whoever holds it
	// (owner itself included: two processes given one Node ID never own an
	// agent together), and the current lease is returned too.
	AcquireLease(ctx context.Context, agentID, owner string, now time.Time, ttl time.Duration) (*Lease, error)
	// RenewLease extends l (matched by AgentID, Owner and Token) to
	// now+ttl, even if it expired, as long as nobody acquired it since;
	// otherwise it fails with ErrLeaseLost.
	RenewLease(ctx context.Context, l *Lease, now time.Time, ttl time.Duration) (*Lease, error)
	// ReleaseLease frees l at once (the next acquisition gets a new token)
	// and fails with ErrLeaseLost when l is not current.
	ReleaseLease(ctx context.Context, l *Lease) error
	// GetLease returns the lease of agentID, or an error matching
	// ErrNotFound if it was never acquired.
	GetLease(ctx context.Context, agentID string) (*Lease, error)

	// Close releases the store's resources.
	Close() error
}

// Store errors.
var (
	// ErrNotFound: no record with that id.
	ErrNotFound = errors.New("aacp: record not found")
	// ErrSeqConflict: the seq is used already on that pair (another
	// process sends as the same source agent).
	ErrSeqConflict = errors.New("aacp: sequence number already used")
	// ErrDuplicateRequest: Enqueue was given a request whose id the ledger
	// records already.
	ErrDuplicateRequest = errors.New("aacp: request id recorded already")
)

// RequestRecord is the ledger record of one logical request. keel records
// EVENTs sent with SendReliable too, so that receivers deduplicate them
// durably.
type RequestRecord struct {
	RequestID     string
	SourceAgentID string
	TargetAgentID string
	// MessageType is REQUEST or EVENT.
	MessageType MessageType
	// Payload is the request payload, stored inline.
	Payload json.RawMessage
	// Status is UNKNOWN until the request is resolved.
	Status Outcome
	// Completion, Result, Error, CompletionRef and CompletedAt describe the
	// resolution (see Resolution). While a request is retried, Error holds
	// the error of the last attempt.
	Completion    Completion
	Result        json.RawMessage
	Error         *mcp.StructuredError
	CompletionRef string
	CompletedAt   time.Time
	// Attempts is how many times the handler has run (recorded at each
	// retry and at resolution).
	Attempts int
	// Deadline is the caller's deadline (zero: none); a handler finishing
	// after it completes late.
	Deadline time.Time
	// Timestamp is when the request was created.
	Timestamp time.Time
	// ExpiresAt is when the record may be purged.
	ExpiresAt time.Time
}

// Resolution returns the record's resolution (meaningful when Status is
// final).
func (r *RequestRecord) Resolution() *Resolution {
	return &Resolution{
		RequestID: r.RequestID, Outcome: r.Status, Completion: r.Completion, Result: r.Result,
		Error: r.Error, CompletionRef: r.CompletionRef, CompletedAt: r.CompletedAt, Attempts: r.Attempts,
	}
}

// MessageRecord is the ledger record of one message.
type MessageRecord struct {
	MessageID string
	RequestID string
	Envelope  Envelope
	// Status is UNKNOWN until the target acknowledges the message
	// (COMPLETED) or the sender gives up on delivering it (FAILED).
	Status Outcome
	// Timestamp is when the message was created.
	Timestamp time.Time
	// ExpiresAt is when the record may be purged.
	ExpiresAt time.Time
	// RetryCount is how many times the message was claimed for
	// (re)delivery.
	RetryCount int
	// NextRetryAt is when the message is due for (re)delivery unless
	// acknowledged before.
	NextRetryAt time.Time
	// ClaimedBy is the owner of the last claim.
	ClaimedBy string
	// DeadReason is why the message was quarantined (Status FAILED); empty
	// otherwise.
	DeadReason string
}

// DeadLetter is a quarantined message (see Store.Quarantine): what the
// ledger knows of it even when its stored envelope cannot be decoded.
type DeadLetter struct {
	MessageID     string
	RequestID     string
	SourceAgentID string
	TargetAgentID string
	Seq           uint64
	MessageType   MessageType
	// Raw is the stored envelope (possibly what could not be decoded).
	Raw []byte
	// Reason is why it was quarantined.
	Reason string
	// Timestamp is when the message was created.
	Timestamp time.Time
}

// Ack is one cumulative acknowledgment: every message of Source→Target with
// a seq at or below Seq was received.
type Ack struct {
	Source, Target string
	Seq            uint64
	// Fence is the lease of Target held by the acknowledging Node (zero:
	// Target is not a leased agent, such as a caller waiting for a
	// RESPONSE).
	Fence Fence
}

// ClaimQuery says which due messages ClaimDue claims, for whom, and when
// they are due again if not acknowledged by then.
type ClaimQuery struct {
	// Owner names the claimer (a Node's ID).
	Owner string
	// Targets are the agents whose messages to claim.
	Targets []string
	// Now is the current time.
	Now time.Time
	// Limit bounds the number of messages claimed (<= 0: 100).
	Limit int
	// Backoff returns how long a message stays claimed after its n-th claim
	// (nil: one second).
	Backoff func(n int) time.Duration
	// IgnoreSchedule claims messages whatever their NextRetryAt (recovery
	// after a restart).
	IgnoreSchedule bool
	// Fences are the leases the claimer holds on some of Targets: the
	// messages of such a target are claimed only while its fence is
	// current (a Node that lost the lease claims nothing for it).
	Fences []Fence
}

// FenceOf returns the fence q holds for target, if any.
func (q *ClaimQuery) FenceOf(target string) (Fence, bool) {
	for _, f := range q.Fences {
		if f.AgentID == target {
			return f, true
		}
	}
	return Fence{}, false
}

// NextRetry returns when a message claimed for the n-th time is due again.
func (q *ClaimQuery) NextRetry(n int) time.Time {
	if q.Backoff == nil {
		return q.Now.Add(time.Second)
	}
	return q.Now.Add(q.Backoff(n))
}

// ClaimLimit returns q.Limit, or 100 when it is not positive.
func (q *ClaimQuery) ClaimLimit() int {
	if q.Limit <= 0 {
		return 100
	}
	return q.Limit
}
