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
// Processing order at the receiver: deduplication check by requestId (a
// request being processed in this process is not started again, and the
// ledger's state is checked before every run, whatever path delivered the
// message: a request recorded COMPLETED or FAILED is not executed again;
// a caller waiting for it gets the recorded result), execution, then on
// failure the retry decision (RetryPolicy.ShouldRetry, at most MaxAttempts
// attempts of the handler) and exponential backoff with jitter. The check
// is a read of the request's record, except for a request a Node sends to
// an agent it hosts under a requestId it made up: the Node marks it as
// being processed before it claims the id, and the claim itself (the id
// unrecorded, so not final) is the check; any other path of the Node that
// meets the request in between leaves its run to the sender. A requestId
// given by the caller (WithRequestID) is read before its run. A delivery
// that meets its request being processed counts its seq as received (and
// so acknowledges it) only once that run is certain, its handler having
// the request: a run given up before (its agent's lease lapsed, Close, a
// wait for a slot ended) leaves the message to the ledger, which delivers
// it again.
//
// A requestId is claimed atomically: Store.Enqueue records the request and
// its message in one step that fails with ErrDuplicateRequest when the id
// is recorded already. Of several sends of one id at once (WithRequestID),
// one sends and runs; the others wait for its outcome.
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
// A lease is taken only when it is free: never held, released, or expired.
// A held lease is refused to everyone, a Node with the same ID included
// (a restarted Node waits for its predecessor's lease to expire).
//
// Each acquisition gets a new fencing token, and every write a Node makes
// for an agent it owns is conditioned on that token being current: its
// claims of the agent's messages, its acknowledgments of them, the
// messages it sends as the agent, the start of a retry or of a recovered
// request, and the resolution with its RESPONSE. A Node that lost the
// lease commits nothing for the agent: its claims get nothing, its
// acknowledgments are skipped (the new owner is delivered the messages),
// its sends as the agent and its resolutions fail with ErrLeaseLost.
//
// Clocks. A lease's expiry is written from the clock of the Node that took
// or renewed it and judged by the clocks of the others. When clocks
// disagree by more than LeaseTTL, a Node whose clock is behind has its
// lease expired for the others as soon as it writes it: another Node
// hosting the agent takes it over at once, and the first learns that it
// lost the lease at its next renewal (within LeaseRenewInterval) or fenced
// write. Until then it may still run a handler for a message sent in its
// own process; that run's result is refused and the new owner runs the
// request (at least once), never after the request was recorded final. A
// Node whose clock is ahead keeps its agents longer after it dies (by the
// skew). Fencing keeps the ledger right whatever the clocks say: at any
// time the writes of at most one Node are accepted for an agent.
//
// # Delivery and recovery
//
// Messages to agents the sending Node owns are delivered at once, in
// process. Messages to agents owned by other Nodes sharing the ledger
// (other processes on one PostgreSQL database or SQLite file) are claimed
// by the owner when it polls (Store.ClaimDue). A message not acknowledged
// in time is claimed again with backoff: the ledger is the retransmission
// queue. On Start, and when a Node takes an agent over, Recover runs the
// requests still pending for the agents it owns again and redelivers their
// unacknowledged messages: the backlog of a dead owner runs on the new
// one. Handlers must therefore be idempotent: a request that was executing
// when the process died runs again; one recorded COMPLETED or FAILED never
// does. A request's message is acknowledged once its handler has it; the
// resolution the handler returns is then written with retries (5 more
// attempts over about 5 s) when the store fails for a transient reason.
// If every attempt fails, the request stays pending (UNKNOWN to local
// waiters) and runs again at the next recovery.
//
// Back-pressure defers, it never fails. A Node runs at most MaxBackground
// handlers in the background; more work waits in its queue (up to
// MaxBackground+ClaimLimit executions, counting those waiting for a
// retry), then in the ledger. A poll claims no more than the Node can take
// at once, so every claim reaches a handler or waits in the queue; a poll
// bound by the room left polls again as soon as a slot frees, and an
// execution that waited for a slot reads the ledger again, with the
// lease's fencing token, before it runs. Close starts no new handler. A
// message its Endpoint refuses (an agent's full queue) is redelivered
// later, however often. A message a pair's window refuses (more than
// MaxWindow seqs received above a gap, one whose handler has not started
// yet, say) stays in the ledger and is claimed again as soon as the gap
// closes, not at its retransmission time. Attempts count only the
// runs of a handler (RetryPolicy.MaxAttempts). A request fails only for a
// reason recorded with it: its handler's error (after the retries the
// policy allows), a result larger than MaxPayloadBytes, a Dispatch error
// matching ErrUndeliverable, a caller that disconnected, or an operator
// (MarkFailed, DropDeadLetter).
//
// # Bad input
//
// A payload larger than MaxPayloadBytes (MaxEnvelopeBytes less room for
// the envelope's other members) is refused at send with ErrPayloadTooLarge
// and nothing is stored; EncodeEnvelope and DecodeEnvelope enforce the same
// MaxEnvelopeBytes. A stored message that cannot be decoded (a corrupted
// row) is quarantined by the claim that meets it: a dead letter, with the
// decoding error as its reason, never claimed again; the claiming Node
// runs its request from the request record. DeadLetters lists the
// quarantined messages; RetryDeadLetter requeues one and DropDeadLetter
// deletes it (failing its request, if still pending, with the reason). A
// request record that cannot be decoded is skipped by the recovery and
// ends FAILED (CompletionProtocolError) with the decoding error as its
// recorded error, on the SQL stores (the memory store decodes nothing). A
// send to an agent no Node has ever hosted on the ledger fails at once
// with ErrUnknownAgent (unless Options.AllowUnknownTargets).
//
// # What the tests show
//
// The chaos test of this package runs on the memory, SQLite and PostgreSQL
// stores: bursts beyond the receiver's capacity (to a Mux on every store,
// and to an agents.Coordinator on the memory store), the same requestId
// sent twice at once on the Node hosting the target, a kill -9 of the owning process mid-backlog with a
// standby process taking over, a Node whose clock is more than a lease
// behind, oversized payloads and results, and corrupted rows. Every
// request ends COMPLETED, its handler having run, or FAILED with a
// recorded reason; none is lost; none runs after it was recorded final or
// twice in one process without a crash between. Across a kill -9 a request
// that was running runs again on the new owner (at least once).
//
// # Stores
//
// Store is the persistence adapter of the ledger, plus the atomic operations the
// Node needs (enqueue, resolve, conditional retry updates, claims, agent
// leases and fenced writes). MemoryStore keeps records for one process lifetime (tests);
// package aacp/sqlstore is the durable store on SQLite (a file path is all
// it needs) or PostgreSQL (several processes), with versioned migrations;
// package aacp/storetest is the conformance suite every Store passes.
// The durable stores commit the writes of concurrent callers together (group
// commit: one transaction, one fsync, per batch) and write the enqueues,
// resolutions and acknowledgments of a batch with one statement per kind of
// row (on PostgreSQL one prepared statement taking an array per column,
// whatever the batch's size; on SQLite multi-row statements); a call still
// returns only once its own write is durable. The message and request ids a
// Node creates keep the UUID v4 layout the envelope requires but carry their
// creation time in milliseconds in their first 48 bits (74 bits stay
// random), so that the ledgers, which key their rows by them, insert at the
// right edge of their indexes rather than on a random page per row.
// BenchmarkThroughput (in aacp/sqlstore) measures sends end to end (handler
// run, outcome recorded). With 128 senders of requests on a 2-core machine
// (load average 0.5 to 1.3), the medians of three runs were 21,645 ledger
// messages per second on SQLite with synchronous=FULL and 14,423 on
// PostgreSQL with fsync and synchronous_commit on, and 440,000 to 452,000
// in memory; the README gives the runs and the conditions.
package aacp
