package aacp

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keelmcp/keel/mcp"
)

// Defaults of Options.
const (
	DefaultTTL               = 24 * time.Hour
	DefaultRetransmitTimeout = 2 * time.Second
	DefaultPollInterval      = 20 * time.Millisecond
	DefaultPurgeInterval     = time.Minute
	DefaultClaimLimit        = 100
	DefaultMaxWindow         = 4096
	DefaultMaxBackground     = 64
)

// Options configures a Node. A nil *Options means the defaults; the Node
// keeps a copy.
type Options struct {
	// ID names the node: the owner of its ledger claims and the default
	// source of messages sent from outside any agent. Give a stable ID to
	// keep that source's sequence across restarts (default: a new
	// "node-<uuid>").
	ID string
	// Clock tells the time (default SystemClock).
	Clock Clock
	// Retry is the retry policy of executions and deliveries (nil:
	// DefaultRetryPolicy; zero members take their defaults).
	Retry *RetryPolicy
	// DefaultTTL sets ExpiresAt of new records (default 24h).
	DefaultTTL time.Duration
	// RetransmitTimeout is how long a message delivered in-process may stay
	// unacknowledged before the ledger delivers it again (default 2s).
	RetransmitTimeout time.Duration
	// PollInterval is the period of the background loop that flushes
	// acknowledgments, runs due retries and claims due messages from the
	// ledger (default 20ms). Negative: no background loop; call Poll.
	PollInterval time.Duration
	// PurgeInterval is how often Poll purges expired records (default 1m;
	// negative: never).
	PurgeInterval time.Duration
	// ClaimLimit bounds the messages claimed by one Poll (default 100).
	ClaimLimit int
	// MaxWindow bounds the out-of-order messages a pair buffers above a
	// gap; later ones are refused, left in the ledger, and claimed again
	// as soon as the gap closes (default 4096).
	MaxWindow int
	// MaxBackground bounds the handlers run on background goroutines
	// (redeliveries, EVENTs, retries) at a time (default 64). Further
	// work waits in the node's queue (up to MaxBackground+ClaimLimit
	// executions), then in the ledger; it never fails for lack of a slot.
	MaxBackground int
	// Rand returns random numbers in [0, 1) for retry jitter (default
	// math/rand/v2; must be safe for concurrent use).
	Rand func() float64
	// Logger receives the node's warnings (default slog.Default()).
	Logger *slog.Logger

	// LeaseTTL is how long the lease of a hosted agent lasts unless the
	// node renews it (default DefaultLeaseTTL, 15s; bounds MinLeaseTTL and
	// MaxLeaseTTL, 50ms to 10m). It is how long the agents of a Node that
	// died wait before another Node hosting them takes them over.
	LeaseTTL time.Duration
	// LeaseRenewInterval is how often the node renews its leases, and how
	// often it tries to acquire the leases other Nodes hold (default
	// LeaseTTL/3; bounds MinLeaseRenewInterval, 10ms, and LeaseTTL/2).
	// With a negative PollInterval, Poll renews them: call it at least
	// this often.
	LeaseRenewInterval time.Duration

	// AllowUnknownTargets lets sends go to agents no Node has ever hosted
	// on the ledger (they wait there for one); by default such a send
	// fails at once with ErrUnknownAgent.
	AllowUnknownTargets bool

	// OnMessageReceived is called once for each REQUEST or EVENT received
	// for a hosted agent, before its handler runs.
	OnMessageReceived func(env *Envelope)
	// OnMessageCompleted is called after a request or event was recorded
	// COMPLETED (env is the message that carried it).
	OnMessageCompleted func(env *Envelope, res *Resolution)
	// OnMessageFailed is called after a request or event was recorded FAILED.
	OnMessageFailed func(env *Envelope, res *Resolution)
}

// ErrClosed is returned by a Node after Close.
var ErrClosed = errors.New("aacp: node is closed")

// Node is one process's AACP endpoint: it hosts the agents of an Endpoint,
// sends their requests and events through the ledger (a Store), and
// delivers what the ledger holds for them, with per-pair sequence numbers,
// cumulative acknowledgments, receiver-side deduplication by requestId,
// retries with exponential backoff and jitter, and recovery after a
// restart.
//
// Messages to agents the Node owns are delivered in-process at once (the
// caller's goroutine runs the handler with a Mux); messages to agents
// owned by other Nodes that share the ledger (several processes on one
// PostgreSQL database or SQLite file) are picked up by the owner when it
// polls.
//
// Each agent is owned by one Node at a time, through a lease kept in the
// ledger (see Lease): Nodes that host the same agent on one ledger take
// turns, the first to start owns it, the others wait and take it over when
// its lease expires (the owner died) or is released (Close). Only the
// owner delivers and runs the agent's requests, and each state transition
// it records for them is fenced by its lease's token, so that a Node that
// lost the lease (paused past its expiry) cannot commit anything.
//
// Guarantees: a message is redelivered until acknowledged, and
// back-pressure only defers it; a handler runs at least once per request
// and never again once the request is recorded COMPLETED or FAILED (every
// run checks the ledger first: it reads the request's record, or, for a
// request sent here to a local agent under an id the node made up, the
// claim of the id is the check; a retry whose request became final
// meanwhile, MarkFailed from outside included, does not run); a requestId
// is claimed once, atomically; a request is resolved once, by the owner of
// its target, and fails only with a recorded reason; a status is recorded
// durably before anyone is told about it; a caller that stops waiting
// gets UNKNOWN, and the late result is still recorded.
type Node struct {
	id     string
	store  Store
	ep     Endpoint
	clock  Clock
	policy RetryPolicy
	opts   Options
	log    *slog.Logger
	rand   func() float64

	// transmit hands a freshly stored message to its local target, with
	// the execution its sender began for it (nil: none; see enqueueNew);
	// tests replace it with a lossy link.
	transmit func(ctx context.Context, env *Envelope, ex *execution, inline bool)

	sessions sync.Map // pairKey → *session
	windows  sync.Map // pairKey → *window

	cmu     sync.Mutex
	calls   map[string]*call // waiters by requestId
	callers map[string]int   // sources with waiters (claim targets)

	imu      sync.Mutex
	inflight map[string]*execution

	rmu     sync.Mutex
	retries []*execution // due executions, unordered

	qmu   sync.Mutex
	queue []queued // executions waiting for a background slot, oldest first
	// starved is set when a poll claimed as much as the node had room
	// for (more may be due): the next slot freed wakes the loop.
	starved atomic.Bool

	// reopened are the windows that refused messages for lack of room
	// and have room again: the next poll claims their unacknowledged
	// messages at once, whatever their schedule.
	remu     sync.Mutex
	reopened []reopening

	known sync.Map // agent id → struct{}: agents the ledger knows (see checkTarget)

	// Agent leases: what the node holds or waits for, by agent.
	tendMu sync.Mutex // serializes the node's lease operations on the store
	lmu    sync.RWMutex
	leases map[string]*agentLease
	hbDone chan struct{}

	recMu     sync.Mutex
	toRecover []string // agents acquired and not yet recovered

	sem       chan struct{}
	bg        sync.WaitGroup
	ctx       context.Context // parent of background handler contexts
	cancel    context.CancelFunc
	started   atomic.Bool
	closed    atomic.Bool
	stop      chan struct{} // closed by Close: the loop ends
	loopDone  chan struct{}
	lastPurge atomic.Int64
	kick      chan struct{}
}

// New returns a Node on store hosting the agents of ep. It does nothing
// until Start.
func New(store Store, ep Endpoint, opts *Options) *Node {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.ID == "" {
		o.ID = "node-" + newUUID()
	}
	if o.Clock == nil {
		o.Clock = SystemClock
	}
	p := DefaultRetryPolicy()
	if o.Retry != nil {
		p = o.Retry.withDefaults()
	}
	if o.DefaultTTL <= 0 {
		o.DefaultTTL = DefaultTTL
	}
	if o.RetransmitTimeout <= 0 {
		o.RetransmitTimeout = DefaultRetransmitTimeout
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.PurgeInterval == 0 {
		o.PurgeInterval = DefaultPurgeInterval
	}
	if o.ClaimLimit <= 0 {
		o.ClaimLimit = DefaultClaimLimit
	}
	if o.MaxWindow <= 0 {
		o.MaxWindow = DefaultMaxWindow
	}
	if o.MaxBackground <= 0 {
		o.MaxBackground = DefaultMaxBackground
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.LeaseRenewInterval == 0 {
		o.LeaseRenewInterval = o.LeaseTTL / 3
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Node{
		id: o.ID, store: store, ep: ep, clock: o.Clock, policy: p, opts: o,
		log: o.Logger.With("node", o.ID), rand: o.Rand,
		calls: map[string]*call{}, callers: map[string]int{},
		inflight: map[string]*execution{},
		leases:   map[string]*agentLease{},
		sem:      make(chan struct{}, o.MaxBackground),
		ctx:      ctx, cancel: cancel,
		kick: make(chan struct{}, 1), stop: make(chan struct{}),
	}
	n.transmit = n.deliverLocal
	n.lastPurge.Store(o.Clock.Now().UnixNano())
	return n
}

// ID returns the node's id.
func (n *Node) ID() string { return n.id }

// Store returns the node's ledger.
func (n *Node) Store() Store { return n.store }

// Start acquires the leases of the hosted agents that no other Node holds,
// recovers their pending work (see Recover), and starts the background
// loop and the lease heartbeat (unless Options.PollInterval is negative).
// It must be called once, before messages are sent. Agents whose lease
// another Node holds are taken over when it expires (or is released).
// Invalid lease options fail it with an error naming the option.
func (n *Node) Start(ctx context.Context) error {
	if n.closed.Load() {
		return ErrClosed
	}
	if err := n.opts.checkLeaseOptions(); err != nil {
		return err
	}
	if !n.started.CompareAndSwap(false, true) {
		return errors.New("aacp: node already started")
	}
	n.tendLeases(ctx)
	n.recMu.Lock()
	n.toRecover = nil // Recover covers them
	n.recMu.Unlock()
	if err := n.Recover(ctx); err != nil {
		return err
	}
	if n.opts.PollInterval > 0 {
		n.loopDone = make(chan struct{})
		n.hbDone = make(chan struct{})
		go n.loop()
		go n.heartbeat()
	}
	return nil
}

// Close stops the background loop and the lease heartbeat, waits (until
// ctx ends) for handlers running in the background, writes the pending
// acknowledgments, releases the node's agent leases (so that another Node
// hosting the agents takes them over at once), and tells the callers still
// waiting that the outcome of their requests is UNKNOWN (an
// *UnknownOutcomeError; the ledger keeps the requests for Await after a
// restart). The Store is not closed.
func (n *Node) Close(ctx context.Context) error {
	if !n.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(n.stop)
	if n.loopDone != nil {
		<-n.loopDone
		<-n.hbDone
	}
	n.dropQueue()
	idle := make(chan struct{})
	go func() { n.bg.Wait(); close(idle) }()
	var err error
	select {
	case <-idle:
	case <-ctx.Done():
		err = ctx.Err()
	}
	n.cancel()
	if ferr := n.flushAcks(context.WithoutCancel(ctx)); err == nil {
		err = ferr
	}
	n.releaseLeases(context.WithoutCancel(ctx))
	n.cmu.Lock()
	calls := n.calls
	n.calls, n.callers = map[string]*call{}, map[string]int{}
	n.cmu.Unlock()
	closed := &mcp.StructuredError{Code: CodeUnavailable, Message: "the node was closed"}
	for id, c := range calls {
		for c != nil {
			next := c.next
			c.ch <- &Resolution{RequestID: id, Outcome: OutcomeUnknown, Error: closed}
			c = next
		}
	}
	return err
}

func (n *Node) loop() {
	defer close(n.loopDone)
	t := time.NewTicker(n.opts.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		case <-n.kick:
		}
		if _, err := n.Poll(n.ctx); err != nil && !n.closed.Load() {
			n.log.Warn("aacp: poll failed", "err", err)
		}
	}
}

// wake makes the background loop poll now.
func (n *Node) wake() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

func (n *Node) session(source, target string) *session {
	k := pairKey{source, target}
	if s, ok := n.sessions.Load(k); ok {
		return s.(*session)
	}
	s, _ := n.sessions.LoadOrStore(k, &session{source: source, target: target})
	return s.(*session)
}

func (n *Node) window(source, target string) *window {
	k := pairKey{source, target}
	if w, ok := n.windows.Load(k); ok {
		return w.(*window)
	}
	w, _ := n.windows.LoadOrStore(k, &window{source: source, target: target, limit: n.opts.MaxWindow})
	return w.(*window)
}

// ackFor returns the cumulative ack this node holds for messages
// source→target, to piggyback on a message target→source.
func (n *Node) ackFor(source, target string) uint64 {
	w, ok := n.windows.Load(pairKey{source, target})
	if !ok {
		return 0
	}
	wi := w.(*window)
	wi.mu.Lock()
	defer wi.mu.Unlock()
	return wi.ack
}

// notePeerAck records an ack piggybacked on a message from target to
// source: the peer received source→target up to ack.
func (n *Node) notePeerAck(source, target string, ack uint64) {
	v, ok := n.sessions.Load(pairKey{source, target})
	if !ok {
		return
	}
	s := v.(*session)
	s.mu.Lock()
	s.peerAck = max(s.peerAck, ack)
	s.mu.Unlock()
}

// Session describes the sender side of source→target as this node sees it.
func (n *Node) Session(ctx context.Context, source, target string) (SessionInfo, error) {
	s := n.session(source, target)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(ctx, n.store); err != nil {
		return SessionInfo{}, err
	}
	return SessionInfo{Source: source, Target: target, NextSeq: s.last + 1, LastAck: s.peerAck}, nil
}

// Window describes the receiver side of source→target as this node sees
// it.
func (n *Node) Window(ctx context.Context, source, target string) (WindowInfo, error) {
	w := n.window(source, target)
	w.mu.Lock()
	err := w.load(ctx, n.store)
	w.mu.Unlock()
	if err != nil {
		return WindowInfo{}, err
	}
	return w.info(), nil
}

// hostsLocally reports whether messages to agentID are delivered by this
// node: a hosted agent, or a caller waiting here.
func (n *Node) hostsLocally(agentID string) bool {
	if n.holds(agentID) {
		return true
	}
	n.cmu.Lock()
	defer n.cmu.Unlock()
	return n.callers[agentID] > 0
}

// claimTargets returns the agents whose messages this node claims: those
// it owns, and the sources of its waiting callers.
func (n *Node) claimTargets() []string {
	agents := n.heldAgents()
	n.cmu.Lock()
	defer n.cmu.Unlock()
	if len(n.callers) == 0 {
		return agents
	}
	for id := range n.callers {
		if !slices.Contains(agents, id) {
			agents = append(agents, id)
		}
	}
	return agents
}

// callerTargets returns the sources of waiting callers that are not agents
// this node owns: the targets of the RESPONSEs it claims even when it has
// no room for more executions.
func (n *Node) callerTargets() []string {
	n.cmu.Lock()
	defer n.cmu.Unlock()
	var out []string
	for id := range n.callers {
		if !n.holds(id) {
			out = append(out, id)
		}
	}
	return out
}

// deliveryBackoff is the claim backoff: how long a claimed message waits
// for its acknowledgment before it is due again.
func (n *Node) deliveryBackoff(claims int) time.Duration {
	return max(n.policy.Backoff(claims, n.rand()), n.opts.RetransmitTimeout)
}

func (n *Node) hookCompleted(env *Envelope, res *Resolution) {
	if res.Outcome == OutcomeCompleted {
		if f := n.opts.OnMessageCompleted; f != nil {
			f(env, res)
		}
	} else if f := n.opts.OnMessageFailed; f != nil {
		f(env, res)
	}
}

func protocolError(format string, err error) *mcp.StructuredError {
	msg := format
	if err != nil {
		msg += ": " + err.Error()
	}
	return &mcp.StructuredError{Code: CodeProtocol, Message: msg}
}
