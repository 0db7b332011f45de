// Package aacp is the Agent-to-Agent Communication Protocol (AACP):
// reliable, resumable messaging between agents, with per-pair ordering,
// deduplication and a durable ledger.
//
// # Envelope
//
// Every message is an Envelope: messageId (a UUID v4, new for every
// message), requestId (a UUID v4 that stays the same for every message of
// one logical request), sourceAgentId, targetAgentId, seq (numbering the
// messages of one source→target pair from 1), ack (the cumulative
// acknowledgment of the opposite direction), messageType (REQUEST, RESPONSE
// or EVENT), timestamp and payload. EncodeEnvelope and DecodeEnvelope are
// its strict JSON codec: member names matched case-sensitively, duplicate
// or unknown members and invalid UTF-8 rejected, size and depth bounded,
// the invariants checked.
//
// # Node
//
// A Node hosts agents (an Endpoint: a Mux of Handlers, or an
// agents.Coordinator through NewCoordinator) and sends their messages
// through a Store, the ledger:
//
//	store, _ := sqlstore.OpenSQLite("ledger.db")
//	mux := aacp.NewMux()
//	mux.HandleFunc("coder", func(ctx context.Context, env *aacp.Envelope) (any, error) { ... })
//	node := aacp.New(store, mux, nil)
//	_ = node.Start(ctx)                  // recovers pending work first
//	res, err := node.SendRequest(ctx, "planner", "coder", task)
//
// SendRequest records the request durably, delivers it, runs the target's
// handler and returns its result. Submit records a request and returns its
// requestId at once; Await returns the outcome of any request in the ledger,
// also after a restart. SendReliable sends an EVENT: processed once, no
// response.
//
// Sessions: each source→target pair has a monotonic seq, persisted with
// every message (GetLastSequence / UpdateLastSequence). The receiver keeps
// a window per pair: its cumulative ack advances only over the contiguous
// prefix of seqs received, a gap holds it back, and a retransmission fills
// the gap. A duplicate messageId (or seq) is ignored and acknowledged
// again.
//
// Processing order at the receiver: deduplication check by
// requestId (a request being processed or recorded COMPLETED/FAILED is not
// executed again; a caller waiting for it gets the recorded result),
// execution, then on failure the retry decision (RetryPolicy.ShouldRetry,
// at most MaxAttempts attempts) and exponential backoff with jitter.
//
// Retries never overwrite a final state. The failed attempt is recorded,
// and each retry starts, with a conditional update of the ledger
// (Store.UpdateRetry) that applies only while the request is still
// UNKNOWN: a request that became COMPLETED or FAILED in between (MarkFailed
// from outside included) keeps its state, the retry is dropped, and the
// handler does not run again.
//
// # Outcomes
//
// The ledger records every request as UNKNOWN until it is resolved
// COMPLETED or FAILED, with a completion outcome: success, tool_error,
// timeout, late_completed, aborted, disconnected_completed or
// protocol_error. A resolution is durable before anyone is told: the
// RESPONSE is stored in the same transaction. A caller whose context ends
// first gets an *UnknownOutcomeError (matching ErrUnknownOutcome): the work
// may still complete, and its late result is recorded (late_completed) for
// Await and recovery. Every record carries ExpiresAt (Options.DefaultTTL,
// 24h, unless WithTTL or WithExpiresAt says otherwise); Poll purges
// expired records every PurgeInterval.
//
// # One owner per agent: leases and fencing
//
// Several Nodes may host the same agent on one ledger (replicas, or a
// standby); each request still runs once. An agent is owned by one Node at
// a time, through a lease kept in the Store (Lease). The first Node to start
// acquires it; the others wait, trying again every LeaseRenewInterval. The
// owner renews the lease every LeaseRenewInterval (a heartbeat) while it
// hosts the agent and releases it on Close, so another Node takes over at
// once; if the owner dies, its lease expires after LeaseTTL (default 15s)
// and another Node takes over then, running the requests the dead owner
// left pending. Only the owner delivers and runs the agent's requests.
//
// Each acquisition gets a new fencing token, and every state transition the
// owner records for the agent's requests (a resolution with its RESPONSE,
// a failed attempt, the start of a retry or of a recovered request) is
// conditioned on that token being current: a Node that lost the lease
// while paused past its expiry cannot commit anything, and gets an error
// matching ErrLeaseLost from the Store. Lease expiry is judged by the
// clocks of the Nodes, which must agree far better than LeaseTTL; fencing
// keeps the ledger right even when they do not.
//
// # Delivery and recovery
//
// Messages to agents the sending Node owns are delivered at once, in
// process. Messages to agents owned by other Nodes sharing the ledger
// (other processes on one PostgreSQL database or SQLite file) are claimed
// by the owner when it polls (Store.ClaimDue). A message not acknowledged in time is
// claimed again with backoff: the ledger is the retransmission queue. On
// Start, and when a Node takes an agent over, Recover runs the requests
// still pending for the agents it owns again and redelivers their
// unacknowledged messages. Handlers must therefore be idempotent: a request
// that was executing when the process died runs again; one recorded
// COMPLETED or FAILED never does.
//
// # Stores
//
// Store is the persistence adapter of the ledger, plus the atomic operations the
// Node needs (enqueue, resolve, conditional retry updates, claims, agent
// leases and fenced writes). MemoryStore keeps records for one process lifetime (tests);
// package aacp/sqlstore is the durable store on SQLite (a file path is all
// it needs) or PostgreSQL (several processes), with versioned migrations;
// package aacp/storetest is the conformance suite every Store passes.
package aacp
