package agents

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/mcp"
)

// DefaultQueueSize is the default bound of an agent's queue of waiting
// messages.
const DefaultQueueSize = 1024

// DefaultMaxDelegationDepth is the default bound of a delegation chain: how
// many agents' handlers may wait on each other through nested Sends.
const DefaultMaxDelegationDepth = 16

// Options configures a Coordinator. A nil *Options means the defaults; the
// options are copied.
type Options struct {
	// Logger receives agent events (registration, handler panics) with the
	// attribute agent=<id>; nil means slog.Default().
	Logger *slog.Logger
	// MaxStateBytes bounds each agent's state: the size of its compact JSON
	// object encoding (0 or less = DefaultMaxStateBytes).
	MaxStateBytes int
	// QueueSize bounds each agent's queue of messages waiting for the
	// handler (the one being processed does not count); Send to a full
	// queue fails at once with ErrQueueFull (0 or less = DefaultQueueSize).
	QueueSize int
	// MaxDelegationDepth bounds nested Sends made by handlers with their
	// context (0 or less = DefaultMaxDelegationDepth).
	MaxDelegationDepth int
	// OnStateChange is called after a handler's state changes were
	// committed, with the agent's id and a copy of its whole new state. It
	// runs on the agent's goroutine before Send returns to the caller, so
	// calls for one agent come in commit order; it must not wait for
	// messages of the same agent. A panic in it is logged and ignored.
	OnStateChange func(agentID string, state map[string]any)
	// Now is the clock of timestamps and durations (nil = time.Now).
	Now func() time.Time
	// IdleTimeout is how long an agent's goroutine waits for another
	// message after its queue ran empty before it ends (0 =
	// DefaultIdleTimeout; negative = it ends at once). Keeping it a little
	// saves starting a goroutine (and growing its stack) per message when
	// messages come one after the other.
	IdleTimeout time.Duration
}

// DefaultIdleTimeout is the default of Options.IdleTimeout.
const DefaultIdleTimeout = 10 * time.Millisecond

// ShutdownMode says what Shutdown does with messages still queued.
type ShutdownMode int

// Shutdown modes. There is no default: Shutdown refuses other values.
const (
	// ShutdownDrain processes every queued message, then stops.
	ShutdownDrain ShutdownMode = iota + 1
	// ShutdownReject fails queued messages with ErrShuttingDown, cancels
	// the contexts of running handlers and waits for them to return.
	ShutdownReject
)

// String returns "drain" or "reject".
func (m ShutdownMode) String() string {
	switch m {
	case ShutdownDrain:
		return "drain"
	case ShutdownReject:
		return "reject"
	}
	return "ShutdownMode(" + strconv.Itoa(int(m)) + ")"
}

// AgentInfo describes an agent for listings (agent_list, agent_get). The
// zero value describes an enabled agent with no metadata.
type AgentInfo struct {
	// Name is the display name.
	Name string
	// Description says what the agent does.
	Description string
	// Team groups agents (agent_list filters by it).
	Team string
	// Version is the agent's version.
	Version string
	// Capabilities name what the agent can do (agent_list filters by them).
	Capabilities []string
	// Tags are free-form labels.
	Tags []string
	// Disabled agents are listed but refuse messages (ErrAgentDisabled,
	// UNAUTHORIZED with reason AGENT_PERMISSION_DENIED). Messages queued
	// before the agent was disabled are still processed.
	Disabled bool
}

func (i AgentInfo) clone() AgentInfo {
	i.Capabilities = slices.Clone(i.Capabilities)
	i.Tags = slices.Clone(i.Tags)
	return i
}

// AgentStatus is a snapshot of one agent: its description and its activity.
type AgentStatus struct {
	// ID is the id the agent is registered under.
	ID string
	// Info is a copy of the agent's description.
	Info AgentInfo
	// QueueLength is the number of messages waiting (not counting the one
	// being processed).
	QueueLength int
	// Busy reports whether the handler is running.
	Busy bool
	// Processed counts handler calls that returned; Failed those of them
	// that failed (error, panic, state over the bound).
	Processed, Failed uint64
	// StateBytes is the size of the committed state's JSON encoding;
	// StateKeys its number of keys.
	StateBytes, StateKeys int
	// RegisteredAt is when the agent was registered; LastActivity when its
	// handler last returned (zero if never).
	RegisteredAt, LastActivity time.Time
}

// Coordinator runs in-process agents: each registered agent has a handler,
// a bounded queue of messages and a state. Messages to one agent are
// processed one at a time, in the order they were queued; different agents
// run concurrently. An agent has a goroutine only while it has messages: the
// goroutine is started by the Send that finds the agent idle and ends when
// its queue has been empty for Options.IdleTimeout (or at once when the
// agent is unregistered or the coordinator shuts down); Shutdown waits for
// all of them.
//
// All methods are safe for concurrent use.
type Coordinator struct {
	log       *slog.Logger
	maxState  int
	queueSize int
	maxDepth  int
	onState   func(string, map[string]any)
	now       func() time.Time
	linger    time.Duration // <= 0: workers end as soon as the queue is empty

	ctx    context.Context // parent of the agents' contexts; cancelled by Shutdown
	cancel context.CancelFunc

	mu       sync.RWMutex // guards agents, mws; held (read) by Send while it queues
	agents   map[string]*agent
	mws      []Middleware
	closing  atomic.Bool   // set under mu by Shutdown
	reject   atomic.Bool   // queued messages are to be rejected, not processed
	stopping chan struct{} // closed by the first Shutdown: wakes idle workers
	stopOnce sync.Once
	active   atomic.Int64
	idle     chan struct{} // closed once no worker runs after closing
	idleOnce sync.Once
}

// agent is one registered agent.
type agent struct {
	id           string
	raw          Handler
	log          *slog.Logger
	ctx          context.Context // cancelled by Unregister and Shutdown
	cancel       context.CancelFunc
	registeredAt time.Time

	mu           sync.Mutex
	info         AgentInfo
	handler      Handler // raw wrapped in the middleware
	queue        fifo
	running      bool          // a worker goroutine owns the queue
	parked       bool          // the worker waits for a message (IdleTimeout)
	wake         chan struct{} // buffered 1: Send wakes a parked worker
	busy         bool          // the handler is running
	removed      bool
	state        committed // members read without mu by the running handler only
	processed    uint64
	failed       uint64
	lastActivity time.Time
}

// NewCoordinator returns a Coordinator with no agents.
func NewCoordinator(opts *Options) *Coordinator {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxStateBytes <= 0 {
		o.MaxStateBytes = DefaultMaxStateBytes
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.MaxDelegationDepth <= 0 {
		o.MaxDelegationDepth = DefaultMaxDelegationDepth
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Coordinator{
		log:       o.Logger,
		maxState:  o.MaxStateBytes,
		queueSize: o.QueueSize,
		maxDepth:  o.MaxDelegationDepth,
		onState:   o.OnStateChange,
		now:       o.Now,
		linger:    o.IdleTimeout,
		ctx:       ctx,
		cancel:    cancel,
		agents:    map[string]*agent{},
		idle:      make(chan struct{}),
		stopping:  make(chan struct{}),
	}
}

// MaxStateBytes returns the bound of each agent's encoded state.
func (c *Coordinator) MaxStateBytes() int { return c.maxState }

// QueueSize returns the bound of each agent's queue.
func (c *Coordinator) QueueSize() int { return c.queueSize }

// Register adds an agent with its handler and description (nil = an enabled
// agent with no metadata; it is copied). The agent starts with an empty
// state. It fails with ErrInvalidAgent for an empty id or a nil handler,
// with ErrAgentExists (naming the agent) when the id is taken, and with
// ErrShuttingDown after Shutdown.
func (c *Coordinator) Register(id string, h Handler, info *AgentInfo) error {
	if id == "" {
		return newError(id, ErrInvalidAgent, mcp.ErrInvalidArgument, ReasonInvalidAgent, nil, "agent id is empty")
	}
	if h == nil {
		return newError(id, ErrInvalidAgent, mcp.ErrInvalidArgument, ReasonInvalidAgent, nil, "agent %q has a nil handler", id)
	}
	a := &agent{id: id, raw: h, log: c.log.With("agent", id), registeredAt: c.now(), wake: make(chan struct{}, 1)}
	a.state.members = map[string]jsontext.Value{}
	if info != nil {
		a.info = info.clone()
	}
	c.mu.Lock()
	if c.closing.Load() {
		c.mu.Unlock()
		return newError(id, ErrShuttingDown, mcp.ErrInternal, ReasonShuttingDown, nil,
			"the agent coordinator is shutting down; agent %q not registered", id)
	}
	if _, ok := c.agents[id]; ok {
		c.mu.Unlock()
		return newError(id, ErrAgentExists, mcp.ErrInvalidArgument, ReasonAgentExists, nil, "agent %q is already registered", id)
	}
	a.ctx, a.cancel = context.WithCancel(c.ctx)
	a.handler = wrap(c.mws, h)
	c.agents[id] = a
	c.mu.Unlock()
	a.log.Debug("agents: agent registered")
	return nil
}

// Unregister removes the agent and reports whether it was registered. Its
// queued messages fail at once with ErrUnregistered; the message being
// processed, if any, finishes (its handler's context is cancelled) and its
// caller gets the handler's result, but its state changes are dropped with
// the rest of the agent's state. The id can be registered again at once.
func (c *Coordinator) Unregister(id string) bool {
	c.mu.Lock()
	a, ok := c.agents[id]
	if ok {
		delete(c.agents, id)
	}
	c.mu.Unlock()
	if !ok {
		return false
	}
	a.mu.Lock()
	a.removed = true
	pending := a.queue.drain()
	a.mu.Unlock()
	a.cancel()
	for _, e := range pending {
		e.finish(nil, errUnregistered(id))
	}
	a.log.Debug("agents: agent unregistered", "rejected", len(pending))
	return true
}

// SetEnabled enables or disables the agent and reports whether it is
// registered. A disabled agent refuses new messages (ErrAgentDisabled).
func (c *Coordinator) SetEnabled(id string, enabled bool) bool {
	a := c.lookup(id)
	if a == nil {
		return false
	}
	a.mu.Lock()
	a.info.Disabled = !enabled
	a.mu.Unlock()
	return true
}

// Use adds middleware around the handler of every agent, those registered
// already included; the chain of each agent is rebuilt here, not per
// message. Messages already being processed keep the chain they started
// with. Middleware added by an earlier Use is outside the later ones.
func (c *Coordinator) Use(mw ...Middleware) {
	mw = slices.DeleteFunc(slices.Clone(mw), func(m Middleware) bool { return m == nil })
	if len(mw) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mws = append(slices.Clip(c.mws), mw...)
	for _, a := range c.agents {
		h := wrap(c.mws, a.raw)
		a.mu.Lock()
		a.handler = h
		a.mu.Unlock()
	}
}

// wrap applies mws to h, the first outermost.
func wrap(mws []Middleware, h Handler) Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

func (c *Coordinator) lookup(id string) *agent {
	c.mu.RLock()
	a := c.agents[id]
	c.mu.RUnlock()
	return a
}

// Has reports whether an agent is registered under id.
func (c *Coordinator) Has(id string) bool { return c.lookup(id) != nil }

// Agent returns a snapshot of the agent's status.
func (c *Coordinator) Agent(id string) (AgentStatus, bool) {
	a := c.lookup(id)
	if a == nil {
		return AgentStatus{}, false
	}
	return a.status(), true
}

// Agents returns a snapshot of every agent's status, sorted by id.
func (c *Coordinator) Agents() []AgentStatus {
	c.mu.RLock()
	list := make([]*agent, 0, len(c.agents))
	for _, a := range c.agents {
		list = append(list, a)
	}
	c.mu.RUnlock()
	slices.SortFunc(list, func(a, b *agent) int { return strings.Compare(a.id, b.id) })
	out := make([]AgentStatus, len(list))
	for i, a := range list {
		out[i] = a.status()
	}
	return out
}

func (a *agent) status() AgentStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	return AgentStatus{
		ID:           a.id,
		Info:         a.info.clone(),
		QueueLength:  a.queue.len(),
		Busy:         a.busy,
		Processed:    a.processed,
		Failed:       a.failed,
		StateBytes:   a.state.size(),
		StateKeys:    len(a.state.members),
		RegisteredAt: a.registeredAt,
		LastActivity: a.lastActivity,
	}
}

// State returns a deep copy of the agent's committed state, decoded into
// generic JSON types (numbers are float64), and whether the agent is
// registered. Changes of a handler still running are not included.
func (c *Coordinator) State(id string) (map[string]any, bool) {
	a := c.lookup(id)
	if a == nil {
		return nil, false
	}
	a.mu.Lock()
	members := a.state.snapshot()
	a.mu.Unlock()
	return decodeState(members), true
}

// Send queues msg for the agent targetID and waits for the handler's
// response, which it returns with the handler's error unchanged.
//
// It fails at once, without queuing, for an unknown agent
// (ErrAgentNotFound), a disabled one (ErrAgentDisabled), a full queue
// (ErrQueueFull), after Shutdown (ErrShuttingDown), and when ctx comes from
// a handler of targetID or of an agent that handler waits for
// (ErrDelegationCycle) or from a chain MaxDelegationDepth agents deep
// (ErrDelegationDepth). A queued message fails with ErrUnregistered or
// ErrShuttingDown when Unregister or a rejecting Shutdown removes it. All of
// these match ErrNotDelivered.
//
// When ctx ends first, Send returns at once: a message still queued is
// removed (the error matches ErrNotDelivered and ctx.Err()); a message whose
// handler started keeps running with its context cancelled, and Send
// returns ctx.Err() itself.
func (c *Coordinator) Send(ctx context.Context, targetID string, msg Message) (any, error) {
	e, err := c.send(ctx, targetID, msg)
	if err != nil {
		return nil, err
	}
	return e.res, e.err
}

// send queues the message and waits; on success of the wait it returns the
// finished envelope (whose err may be set).
func (c *Coordinator) send(ctx context.Context, targetID string, msg Message) (*envelope, error) {
	if err := ctx.Err(); err != nil {
		return nil, errCancelled(targetID, err)
	}
	chain := delegationFrom(ctx)
	if chain != nil {
		if chain.contains(targetID) {
			return nil, newError(targetID, ErrDelegationCycle, mcp.ErrInvalidArgument, ReasonDelegationCycle,
				map[string]any{delegationChainKey: chain.ids()},
				"agent %q cannot wait for agent %q, which is waiting already in the delegation chain %s: the message could never be processed",
				chain.agentID, targetID, strings.Join(chain.ids(), " -> ")).undelivered()
		}
		if chain.depth >= c.maxDepth {
			return nil, newError(targetID, ErrDelegationDepth, mcp.ErrResourceExhausted, ReasonDelegationDepth,
				map[string]any{limitKey: maxDelegationDepthKey, maxDelegationDepthKey: c.maxDepth},
				"message to agent %q refused: the delegation chain is %d agents deep (maxDelegationDepth %d)",
				targetID, chain.depth, c.maxDepth).undelivered()
		}
	}
	e := &envelope{ctx: ctx, msg: msg, chain: chain, done: make(chan struct{}), queued: c.now()}

	c.mu.RLock()
	if c.closing.Load() {
		c.mu.RUnlock()
		return nil, errShuttingDown(targetID)
	}
	a := c.agents[targetID]
	if a == nil {
		c.mu.RUnlock()
		return nil, errNotFound(targetID)
	}
	a.mu.Lock()
	switch {
	case a.info.Disabled:
		a.mu.Unlock()
		c.mu.RUnlock()
		return nil, errDisabled(targetID)
	case a.queue.len() >= c.queueSize:
		a.mu.Unlock()
		c.mu.RUnlock()
		return nil, errQueueFull(targetID, c.queueSize)
	}
	a.queue.push(e)
	start := !a.running
	if start {
		a.running = true
		c.active.Add(1)
	} else if a.parked {
		a.parked = false
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
	a.mu.Unlock()
	c.mu.RUnlock()
	if start {
		go c.work(a)
	}

	select {
	case <-e.done:
		return e, nil
	case <-ctx.Done():
	}
	a.mu.Lock()
	queued := e.status == statusQueued && a.queue.remove(e)
	if queued {
		e.status = statusAbandoned
	}
	a.mu.Unlock()
	if queued {
		return nil, errCancelled(targetID, ctx.Err())
	}
	select {
	case <-e.done: // finished meanwhile: the result is there
		return e, nil
	default:
		return nil, ctx.Err()
	}
}

// Shutdown stops the coordinator: Send and Register fail with
// ErrShuttingDown from now on. With ShutdownDrain, queued messages are
// still processed; with ShutdownReject, they fail with ErrShuttingDown and
// running handlers' contexts are cancelled. Shutdown then waits until every
// agent goroutine has ended, or until ctx ends: it then cancels the running
// handlers' contexts, rejects what is still queued and returns ctx.Err()
// (the goroutines end when their handlers return).
//
// Agents stay registered: Agent, Agents and State keep answering. Calling
// Shutdown again waits again, and may turn a drain into a reject.
func (c *Coordinator) Shutdown(ctx context.Context, mode ShutdownMode) error {
	if mode != ShutdownDrain && mode != ShutdownReject {
		return fmt.Errorf("agents: invalid shutdown mode %d: use ShutdownDrain or ShutdownReject", int(mode))
	}
	c.mu.Lock()
	first := !c.closing.Load()
	c.closing.Store(true)
	c.mu.Unlock()
	c.stopOnce.Do(func() { close(c.stopping) })
	if c.active.Load() == 0 {
		c.signalIdle()
	}
	if first {
		c.log.Debug("agents: shutting down", "mode", mode.String())
	}
	if mode == ShutdownReject {
		c.rejectAll()
	}
	select { // idle wins over a ctx that is done already
	case <-c.idle:
		c.cancel()
		return nil
	default:
	}
	select {
	case <-c.idle:
		c.cancel()
		return nil
	case <-ctx.Done():
		c.rejectAll()
		return ctx.Err()
	}
}

// rejectAll fails every queued message with ErrShuttingDown and cancels
// every agent's context. Workers see reject and take no further message.
func (c *Coordinator) rejectAll() {
	c.reject.Store(true)
	c.mu.RLock()
	list := make([]*agent, 0, len(c.agents))
	for _, a := range c.agents {
		list = append(list, a)
	}
	c.mu.RUnlock()
	for _, a := range list {
		a.rejectQueued()
	}
	c.cancel()
}

// rejectQueued fails the agent's queued messages with ErrShuttingDown.
func (a *agent) rejectQueued() {
	a.mu.Lock()
	pending := a.queue.drain()
	a.mu.Unlock()
	for _, e := range pending {
		e.finish(nil, errShuttingDown(a.id))
	}
}

func (c *Coordinator) signalIdle() { c.idleOnce.Do(func() { close(c.idle) }) }

// workerDone accounts for the end of an agent goroutine.
func (c *Coordinator) workerDone() {
	if c.active.Add(-1) == 0 && c.closing.Load() {
		c.signalIdle()
	}
}
