package mcp

import (
	"context"
	stdjson "encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/ids"
	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/logclip"
	"github.com/keelmcp/keel/internal/revision"
	"github.com/keelmcp/keel/transport"
)

// ServerOptions configure a Server. The zero value (or nil) is usable: a
// server with no tools named "keel". Options are copied by NewServer.
type ServerOptions struct {
	// Name and Version are the serverInfo the server reports.
	Name    string
	Version string
	// Title, Description, WebsiteURL and Icons complete serverInfo; each
	// is sent only to clients of a revision that has it.
	Title       string
	Description string
	WebsiteURL  string
	Icons       []Icon
	// Instructions is an optional hint for the model about this server.
	Instructions string

	// Registry is a catalog that serves several features at once (a
	// *registry.Registry): each of ToolSource, ResourceSource,
	// PromptSource and CompletionSource it implements fills the field of
	// that name, so no feature is forgotten. A field that is set as well
	// must be the registry itself (Tools may also be a middleware chain
	// around it, one whose Unwrap method returns it); anything else is an
	// *OptionError from Validate, and NewServer panics with it.
	Registry any

	// Tools is where tools come from (a registry.Registry, or a
	// middleware.Chain around one). Nil means the server offers no tools,
	// unless Registry serves them.
	Tools ToolSource
	// Resources is where resources and resource templates come from (a
	// registry.Registry). Nil means no resources capability.
	Resources ResourceSource
	// Prompts is where prompts come from (a registry.Registry). Nil means
	// no prompts capability.
	Prompts PromptSource
	// Completions answers completion/complete (a registry.Registry). Nil
	// means no completions capability: the method gets -32601.
	Completions CompletionSource

	// Logger receives the server's diagnostics; nil means slog.Default().
	// On stdio it must not write to stdout. What reaches it is bounded:
	// each string value of a line (message, attribute, error text, stack)
	// is cut to 2 KiB, peer values such as a client's name to 64 bytes,
	// and each peer writes at most LogLinesPerSecond lines a second
	// through its sessions and 2026-07-28 requests together, also when it
	// opens and ends them one after another (a session whose transport
	// names no peer, such as stdio, is a peer of its own); every peer
	// together writes at most 10 times that. This holds at every level;
	// suppressed lines are counted in one line a second later.
	Logger *slog.Logger
	// LogLinesPerSecond is the rate limit of log lines per peer (all its
	// sessions and requests together; every peer together 10 times it),
	// and of the server's own lines (default 100, with a burst of as many;
	// negative: no limit).
	LogLinesPerSecond int
	// ExposeErrorText sends the text of a handler's plain error (one that
	// is neither an *Error nor a *StructuredError, nor wraps one) to the
	// client, for development. By default it is masked: the client is told
	// INTERNAL ("internal error", retryable) with the request's
	// correlation id, and the text goes to the log at error level, since
	// it may hold a secret (a DSN with its password, a file path). An
	// error wrapping ErrClosed, ErrCapabilityNotDeclared or
	// ErrNoClientRequests is told that sentinel's own text only, and the
	// middleware masks its plain errors the same way (ClientErrorText).
	// Typed errors always reach the client as their producer wrote them.
	ExposeErrorText bool
	// Now is the clock (nil = time.Now); tests inject a fixed one.
	Now func() time.Time
	// NewID generates correlation, run and connection ids (nil = random
	// UUID v4); tests inject a deterministic one.
	NewID func() string

	// MaxDepth bounds the nesting depth of incoming messages (default 64).
	MaxDepth int
	// MaxBatch bounds the number of messages in one batch (default 64).
	// Batches are accepted only from clients that negotiated 2025-03-26.
	MaxBatch int
	// PageSize is the number of items per page of list results (default 100).
	PageSize int
	// ShutdownTimeout is how long Run waits for in-flight requests after
	// the input ends (default 10s). Their responses are still sent.
	ShutdownTimeout time.Duration
	// KeepAlive, when positive, pings each client of a session (2025
	// revisions; a 2026-07-28 request has no session to keep) every
	// KeepAlive once it is initialized, each ping waiting at most
	// KeepAlive for the answer. A client that does not answer in time has
	// its connection closed and its handlers cancelled; Run returns an
	// error matching ErrPeerUnresponsive. Zero: no pings, a silent client
	// stays connected until the transport reports it gone.
	KeepAlive time.Duration
	// InlineBudget is how long a tools/call may run on the goroutine that
	// reads the connection before reading moves to a new goroutine (default
	// 200µs). Quick calls thus cost no goroutine hand-off; slow calls still
	// run concurrently. Negative: every call runs on its own goroutine.
	InlineBudget time.Duration

	// Logging declares the logging capability: the client may send
	// logging/setLevel, and handlers send it notifications/message through
	// ClientLogger or Session.Log (feature_logging.go).
	Logging bool
	// LogLevel is a session's logging level until its client sends
	// logging/setLevel (default LoggingLevelInfo).
	LogLevel LoggingLevel
	// RequestTimeout bounds each request the server sends the client:
	// sampling, elicitation, roots (default 60s). On expiry the server sends
	// notifications/cancelled and the call fails (session_requests.go).
	RequestTimeout time.Duration
	// OnRootsListChanged, if set, is called after the client sent
	// notifications/roots/list_changed, on its own goroutine, with a context
	// that ends with the session; it typically calls ss.ListRoots.
	// Notifications that arrive while it runs are coalesced into one more call.
	OnRootsListChanged func(ctx context.Context, ss *Session)
	// Tasks, if set, offers tasks: to sessions of 2025-11-25 (experimental;
	// task_server.go), and to 2026-07-28 requests that declare the
	// io.modelcontextprotocol/tasks extension (rev2026_tasks.go). tools/call
	// of tools whose execution.taskSupport allows it may run in the
	// background. It is copied.
	Tasks *TaskOptions

	// FanOut carries the changes this server announces (NotifyAll, list
	// changes, resource updates, task status) to the other processes that
	// serve the same clients, and theirs to this one's clients (feature_fanout.go).
	// The server subscribes once, in NewServer, for as long as the
	// fan-out lasts. Nil: this process is alone.
	FanOut FanOut

	// StateKey is the secret that seals (encrypts and authenticates) the
	// requestState of input-required results (2026-07-28; proto_input.go): at
	// least MinStateKeyBytes random bytes, the same on every replica so
	// that any of them can open a state another one issued. It is
	// shorthand for StateKeys holding one key of id DefaultStateKeyID; set
	// one or the other. Nil (and StateKeys nil) means a random key per
	// Server, with a warning: states then verify only on this process. A
	// non-nil key that is too short, even empty, fails Validate.
	StateKey []byte
	// StateKeys is the key ring of requestStates, for rotation: the first
	// key seals new states; every key opens the states that carry its id,
	// and a state of an id not in the ring is refused. To rotate across
	// replicas: add the new key last everywhere; then move it first
	// everywhere; remove the old key once the states it sealed have
	// expired (StateTTL). See StateKey and Validate.
	StateKeys []StateKey
	// StateTTL is how long a sealed requestState stays valid (default
	// 10 minutes). Until then a state can be sent again any number of
	// times, unless StateSingleUse.
	StateTTL time.Duration
	// StateSingleUse makes each requestState usable once: the server
	// remembers the states used until they expire and refuses a second use
	// with -32602. A state is used up when it verifies, even if the request
	// then fails. The memory is per process unless UsedStates names a
	// store that replicas share: without it, behind a load balancer a
	// state can still be used once per replica.
	StateSingleUse bool
	// UsedStates is where StateSingleUse remembers the used states (nil:
	// in this process). Replicas behind a load balancer share one
	// (package postgres).
	UsedStates UsedStateStore
	// MaxUsedStates bounds the states that StateSingleUse remembers
	// (default 100 000). When that many unexpired states are
	// remembered, a new one is refused with -32602 (data.limit
	// "MaxUsedStates") rather than an old one forgotten, until some
	// expire.
	MaxUsedStates int
	// MaxInputRounds bounds the rounds of input one request may take
	// (default 8): the retry after that many gets -32602.
	MaxInputRounds int
	// CacheTTL and CacheScope are the caching hints of 2026-07-28 results
	// of server/discover, the four lists and resources/read (ttlMs and
	// cacheScope). The default TTL is 0 (immediately stale); the default
	// scope is CacheScopePrivate, right whenever lists or contents
	// depend on the caller.
	CacheTTL   time.Duration
	CacheScope string

	// MaxListens bounds the subscriptions/listen requests open at once on
	// the server (default 1000); MaxListensPerClient those of one client
	// (default 16): those of one peer (PeerFromContext: a verified
	// token's subject or client id, else the remote address, else the
	// connection), however many names or sessions it uses. Over a limit
	// the request gets CodeServerBusy with a retryable RESOURCE_EXHAUSTED
	// StructuredError naming it, and other peers are still served.
	MaxListens          int
	MaxListensPerClient int
	// MaxURIBytes bounds one resource URI a client names
	// (resources/read, subscribe and unsubscribe) or filters on
	// (subscriptions/listen), and each task id a listen names (default
	// 8 KiB). A longer one gets -32602 with an
	// INVALID_ARGUMENT StructuredError naming it; the URI is not echoed.
	MaxURIBytes int
	// MaxSubscriptionBytes bounds what a client's subscriptions make the
	// server hold, each URI or task id counting its length plus
	// 64 bytes (default 128 KiB): the resources/subscribe subscriptions of one session (past it,
	// CodeServerBusy with a RESOURCE_EXHAUSTED StructuredError naming it,
	// not retryable until the session unsubscribes), and the filter of one
	// subscriptions/listen, which the acknowledgement echoes (past it,
	// -32602 with INVALID_ARGUMENT naming it). A session also holds at most
	// 4096 subscriptions, and a filter at most 4096 entries.
	MaxSubscriptionBytes int
	// MaxPeerSubscriptionBytes bounds what one peer's subscriptions and
	// listen filters hold together, over all its sessions and requests,
	// counted as for MaxSubscriptionBytes (default
	// 1 MiB). Past it, a subscribe or
	// listen of that peer gets CodeServerBusy with a retryable
	// RESOURCE_EXHAUSTED StructuredError naming the bound, and other peers
	// are still served.
	MaxPeerSubscriptionBytes int
	// MaxTotalSubscriptionBytes bounds what the subscriptions and listen
	// filters of every peer together hold, counted as for
	// MaxSubscriptionBytes (default 64 MiB). Past it, a subscribe or listen gets CodeServerBusy with a
	// retryable RESOURCE_EXHAUSTED StructuredError naming the bound.
	MaxTotalSubscriptionBytes int
	// MaxInFlight bounds the requests of one connection (a stdio or
	// in-memory connection, a 2025 HTTP session) being served at once
	// (default 256), built-in and custom methods alike, so
	// that a client pipelining requests that do not end soon cannot make
	// the server hold a goroutine and a request for each. A request over
	// it is answered CodeServerBusy with a retryable RESOURCE_EXHAUSTED
	// StructuredError naming it (data.details.limit "MaxInFlight"), and
	// the connection goes on. A request counts from when it is read until
	// its handler chain has returned, just before its answer is sent (so
	// a client that sends its next request on reading an answer finds the
	// slot free): a tools/call answered at its deadline whose
	// handler runs on no longer counts here (the tools/call concurrency
	// middleware holds its slot). subscriptions/listen requests, which
	// last until the client ends them, do not count: MaxListens and
	// MaxListensPerClient bound them. Each request holds its message,
	// within the transport's MaxMessageBytes: at most MaxInFlight times
	// MaxMessageBytes per connection. Zero means the default; a negative
	// value fails Validate.
	MaxInFlight int

	// Middleware wraps the handling of every incoming request and
	// notification, built-in and custom methods alike; the first listed
	// is the outermost. The chain is built once, by NewServer. Every
	// answer to a well-formed request passes through it, refusals and
	// results that cannot be sent included (see Middleware). A middleware
	// may change a result in place before it returns it: with Middleware,
	// a result is encoded once below the chain (to check it) and again
	// after it (what is sent). A middleware returns only after next has
	// returned.
	Middleware []Middleware
	// SendMiddleware wraps every request and notification the server
	// sends its clients (progress, logging, list changes, sampling,
	// elicitation, roots, ...); the first listed is the outermost.
	SendMiddleware []SendMiddleware
	// Methods adds request methods of the server's own (for example
	// "acme/search"), served in both eras beside the built-in ones and
	// through Middleware. A name keel serves itself makes NewServer panic.
	// A result that is not a JSON object (an array, a number, ...) is sent
	// as it is to a 2025 session; a 2026-07-28 request, whose results are
	// objects carrying resultType, gets a -32603 error naming that rule
	// instead (the error Middleware sees), and the server logs it. Nil
	// stands for an empty result.
	Methods map[string]MethodHandler
	// InputMethods names the methods of Methods that take input rounds,
	// as tools/call, prompts/get and resources/read do: their handlers
	// may ask the client for input by returning InputRequired(...), and
	// read the answers with InputFromContext. The rounds run around the
	// handler, inside Middleware (which runs once per request), in the
	// request's revision: a 2025 session's client is asked through
	// server-to-client requests and the handler runs again with the
	// answers; a 2026-07-28 request is answered input_required, and its
	// retry's inputResponses and requestState (bound to the method and to
	// the other params but _meta) are checked before the handler runs and
	// reach it as its Input. A method not named here that asks for input
	// is answered -32603. A name that is not in Methods makes NewServer
	// panic.
	InputMethods []string
	// Notifications adds handlers of notifications from the client,
	// called on the goroutine that reads the connection (keep them
	// short), through Middleware. A name keel serves itself makes
	// NewServer panic.
	Notifications map[string]MethodHandler
	// Capabilities declares what the server offers beyond what keel
	// derives from the options above: Experimental (in the initialize
	// result and on server/discover) and Extensions (on server/discover:
	// revision 2026-07-28 has them), merged with keel's own entries, which
	// win on a clash. The other members are ignored: keel derives them.
	// NewServer keeps a deep copy of both maps: JSON-like values (maps
	// of type map[string]any, slices of type []any, strings, numbers,
	// booleans, nil, raw JSON) are copied as they are, any other value as
	// its JSON encoding then (a json.RawMessage); a value that does not
	// encode as JSON makes NewServer panic.
	Capabilities *ServerCapabilities
}

// Server serves MCP over any number of connections. Create it with
// NewServer, then call Run once per connection.
type Server struct {
	opts ServerOptions
	// pairIDs: NewID is keel's own (ids.NewUUID), so a tools/call that
	// needs both a correlation and a run id gets them from one
	// allocation (ids.NewUUIDPair).
	pairIDs bool
	log     *slog.Logger
	// logPeers gives the sessions of one peer one log budget together.
	logPeers *logclip.Peers
	handle   MethodHandler // the middleware chain around dispatch (request.go)
	// inputMethods are the custom methods whose rows of the method table
	// declare input rounds (InputMethods; methods.go).
	inputMethods map[string]bool
	hub          changeHub  // list_changed and resource update notifications (feature_listchanged.go)
	tasks        *taskHost  // nil without ServerOptions.Tasks (task_server.go)
	states       *stateRing // requestState keys (rev2026_state_keys.go)
	// serverInfoJSON is the serverInfo every 2026-07-28 result names,
	// encoded once (rev2026_engine.go).
	serverInfoJSON jsontext.Value
	// clientInfos are the clientInfo values of 2026-07-28 requests, as
	// decoded (rev2026_meta.go).
	clientInfos clientInfoCache
	// detached counts the handlers of requests served by ServeRequest
	// that run on after their answer (ToolCall.Detach): StopTasks waits
	// for them.
	detached runningCount
}

// runningCount counts handlers running on; wait waits for none to run.
// Unlike a sync.WaitGroup, it may count up again while a wait is under
// way.
type runningCount struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0 (made by wait)
}

func (r *runningCount) add() {
	r.mu.Lock()
	r.n++
	r.mu.Unlock()
}

func (r *runningCount) done() {
	r.mu.Lock()
	if r.n--; r.n == 0 && r.idle != nil {
		close(r.idle)
		r.idle = nil
	}
	r.mu.Unlock()
}

// wait returns nil once no handler runs, or ctx's error if it ends first.
func (r *runningCount) wait(ctx context.Context) error {
	r.mu.Lock()
	if r.n == 0 {
		r.mu.Unlock()
		return nil
	}
	if r.idle == nil {
		r.idle = make(chan struct{})
	}
	idle := r.idle
	r.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// NewServer returns a Server configured by opts (nil = defaults).
// NewServer panics if opts fail Validate; call Validate first to handle
// the error.
func NewServer(opts *ServerOptions) *Server {
	if err := opts.Validate(); err != nil {
		panic(err)
	}
	var o ServerOptions
	if opts != nil {
		o, _ = opts.registryFeatures() // checked by Validate above
	}
	if o.Name == "" {
		o.Name = "keel"
	}
	if o.Version == "" {
		o.Version = "0.0.0"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	pairIDs := o.NewID == nil
	if pairIDs {
		o.NewID = ids.NewUUID
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = jsonrpc.DefaultMaxDepth
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 64
	}
	if o.PageSize <= 0 {
		o.PageSize = 100
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 10 * time.Second
	}
	if o.InlineBudget == 0 {
		o.InlineBudget = 200 * time.Microsecond
	}
	if !o.LogLevel.Valid() {
		o.LogLevel = LoggingLevelInfo
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 60 * time.Second
	}
	if o.StateTTL <= 0 {
		o.StateTTL = 10 * time.Minute
	}
	if o.MaxUsedStates <= 0 {
		o.MaxUsedStates = defaultMaxUsedStates
	}
	states := newStateRing(&o) // o.StateKeys: the effective ring
	if o.MaxInputRounds <= 0 {
		o.MaxInputRounds = 8
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = defaultMaxInFlight
	}
	if o.MaxListens <= 0 {
		o.MaxListens = 1000
	}
	if o.MaxListensPerClient <= 0 {
		o.MaxListensPerClient = 16
	}
	if o.MaxURIBytes <= 0 {
		o.MaxURIBytes = defaultMaxURIBytes
	}
	if o.MaxSubscriptionBytes <= 0 {
		o.MaxSubscriptionBytes = defaultMaxSubscriptionBytes
	}
	if o.MaxPeerSubscriptionBytes <= 0 {
		o.MaxPeerSubscriptionBytes = defaultMaxPeerSubscriptionBytes
	}
	if o.MaxTotalSubscriptionBytes <= 0 {
		o.MaxTotalSubscriptionBytes = defaultMaxTotalSubscriptionBytes
	}
	if o.CacheScope != CacheScopePublic {
		o.CacheScope = CacheScopePrivate
	}
	if o.CacheTTL < 0 {
		o.CacheTTL = 0
	}
	o.Icons = append([]Icon(nil), o.Icons...)
	o.Middleware = append([]Middleware(nil), o.Middleware...)
	o.SendMiddleware = append([]SendMiddleware(nil), o.SendMiddleware...)
	o.Methods = checkCustom(o.Methods, "Methods")
	o.Notifications = checkCustom(o.Notifications, "Notifications")
	o.InputMethods = append([]string(nil), o.InputMethods...)
	inputMethods := checkInputMethods(o.Methods, o.InputMethods)
	if o.Capabilities != nil {
		o.Capabilities = o.Capabilities.clone() // nothing shared with the caller
	}
	log := slog.New(logclip.NewHandler(o.Logger.Handler(), 0, o.LogLinesPerSecond))
	s := &Server{opts: o, log: log, logPeers: logclip.NewPeers(log), states: states, inputMethods: inputMethods, pairIDs: pairIDs}
	s.handle = chainMiddleware(answerChecked, o.Middleware)
	info, err := json.Marshal(s.serverInfo(), json.Deterministic(true))
	if err != nil { // plain strings and icons: cannot happen
		panic("mcp: encoding serverInfo: " + err.Error())
	}
	s.serverInfoJSON = info
	s.initTasks()
	s.watchSources()
	return s
}

// Options returns a copy of the server's effective options. Nothing in
// it is shared with the server: its slices, maps, Capabilities (with the
// values of Experimental and Extensions, all the way down) and Tasks are
// copies, so changing them changes neither the server, nor what it sends,
// nor a later call's result. The handlers, middleware and sources it
// names are the server's own.
func (s *Server) Options() ServerOptions { return s.opts.clone() }

// clone copies o, with copies of what o refers to and the server keeps
// (the functions and sources it names are shared).
func (o *ServerOptions) clone() ServerOptions {
	c := *o
	c.Icons = slices.Clone(o.Icons)
	for i := range c.Icons {
		c.Icons[i].Sizes = slices.Clone(c.Icons[i].Sizes)
	}
	c.Middleware = slices.Clone(o.Middleware)
	c.SendMiddleware = slices.Clone(o.SendMiddleware)
	c.Methods = maps.Clone(o.Methods)
	c.Notifications = maps.Clone(o.Notifications)
	c.InputMethods = slices.Clone(o.InputMethods)
	c.StateKey = slices.Clone(o.StateKey)
	c.StateKeys = slices.Clone(o.StateKeys)
	for i := range c.StateKeys {
		c.StateKeys[i].Secret = slices.Clone(c.StateKeys[i].Secret)
	}
	if o.Capabilities != nil {
		c.Capabilities = o.Capabilities.clone()
	}
	if o.Tasks != nil {
		t := *o.Tasks
		c.Tasks = &t
	}
	return c
}

// clone copies c and the capabilities it points to.
func (c *ServerCapabilities) clone() *ServerCapabilities {
	out := *c
	out.Experimental = cloneJSONMap(c.Experimental, "Experimental")
	out.Extensions = cloneJSONMap(c.Extensions, "Extensions")
	out.Logging = clonePtr(c.Logging)
	out.Completions = clonePtr(c.Completions)
	out.Prompts = clonePtr(c.Prompts)
	out.Resources = clonePtr(c.Resources)
	out.Tools = clonePtr(c.Tools)
	if c.Tasks != nil {
		t := *c.Tasks
		t.List, t.Cancel = clonePtr(t.List), clonePtr(t.Cancel)
		if t.Requests != nil {
			r := *t.Requests
			if r.Tools != nil {
				tt := *r.Tools
				tt.Call = clonePtr(tt.Call)
				r.Tools = &tt
			}
			t.Requests = &r
		}
		out.Tasks = &t
	}
	return &out
}

// clonePtr returns a pointer to a copy of *p (nil for nil).
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// cloneJSONMap returns a deep copy of m, a member of
// ServerOptions.Capabilities (field names it): maps (map[string]any),
// slices ([]any) and raw JSON are copied all the way down, and strings,
// numbers, booleans and nil kept; any other value (a struct, a pointer, a
// typed map) is replaced by its JSON encoding, a json.RawMessage, which
// the wire writes exactly as the value would have been written. A value
// that does not encode as JSON makes it panic, naming the member: a
// misconfigured server fails at start-up.
func cloneJSONMap(m map[string]any, field string) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneJSONValue(v, field+"["+quote(k)+"]")
	}
	return out
}

func cloneJSONValue(v any, path string) any {
	switch x := v.(type) {
	case nil, string, bool, float64, float32, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64, stdjson.Number:
		return v
	case map[string]any:
		return cloneJSONMap(x, path)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneJSONValue(e, path+"["+strconv.Itoa(i)+"]")
		}
		return out
	case jsontext.Value:
		return x.Clone()
	case stdjson.RawMessage:
		return slices.Clone(x)
	}
	b, err := jsonrpc.Marshal(v)
	if err != nil {
		panic("mcp: ServerOptions.Capabilities." + path + " does not encode as JSON: " + err.Error())
	}
	return stdjson.RawMessage(b)
}

// Run serves one connection until its input ends (nil error), ctx is
// cancelled (ctx's error), or the transport fails. When the input ends,
// in-flight requests get up to ShutdownTimeout to finish and be answered;
// then the session is CLOSED, remaining handlers are cancelled and their
// results dropped. When the transport reports that the client has gone
// away (transport.PeerWatcher: a closed in-memory pipe, a broken stdout,
// a deleted or expired HTTP session), the contexts of the handlers still
// running end at once. Run closes t before returning.
func (s *Server) Run(ctx context.Context, t transport.Transport) error {
	sr, stateless := transport.StatelessRequestFromContext(ctx)
	ss := s.newSession(t, stateless && revision.PerRequest(sr.ProtocolVersion))
	if !ss.modernOnly {
		if c, ok := t.(connIDTaker); ok {
			c.SetConnectionCorrelationID(ss.connCorrelationID)
		}
		// The sessions of one peer (HTTP: its token or address) share one
		// log budget, so that opening more sessions logs no more.
		if p, ok := transport.PeerFromContext(ctx); ok {
			ss.peer = p.Key
			log, lease := s.logPeers.Scope(p.Key, slog.String("connectionCorrelationId", ss.connCorrelationID))
			defer lease.Release()
			ss.log, ss.reqs.log, ss.conn.log = log, log, log
		}
	}
	ss.applyTransportContext(ctx) // stateless HTTP: already initialized (server_http.go)
	return ss.serve(ctx)
}

// ServeRequest serves one request of the per-request era (2026-07-28)
// that a transport read itself — streamable HTTP hands each such POST to
// it — on the calling goroutine, and returns once the request is
// answered. The answer and the messages its handler sends are written to
// t (with the context of t's MessageContext, when t has one); ctx carries
// the request's cancellation and values (the request's context ends with
// ctx and with its error: at ctx's deadline a handler sees
// context.DeadlineExceeded, and a tool waiting for a slot or a lock
// answers TIMEOUT), and must carry a
// transport.StatelessRequest naming the revision. A transport that read
// the message itself hands it over with it (streamable HTTP does), which
// spares reading it again and lets the transport end the request early
// and learn its answer's error code. A message of any other
// kind is served the same way, as a session that ends with it would. msg
// is not copied: it must not change afterwards (the request, and a task
// it starts, keep parts of it). A handler answered at a deadline that runs
// on (ToolCall.Detach) does not hold ServeRequest: Server.StopTasks waits
// for it.
func (s *Server) ServeRequest(ctx context.Context, t transport.Transport, msg []byte) error {
	ss := s.newSession(t, true)
	if p, ok := transport.PeerFromContext(ctx); ok {
		// One peer's requests share its log budget, as its sessions do;
		// the budget is looked up when a line is written, not for every
		// request.
		log := ss.plog.start(s.logPeers, p.Key, s.log.Handler())
		defer ss.plog.release()
		ss.log, ss.reqs.log, ss.conn.log = log, log, log
	}
	ss.applyTransportContext(ctx)
	ss.ctx = ctx // the caller cancels it: the request's handlers end with it
	ss.rd.parent, ss.rd.owned = ctx, true
	ss.rd.noteMessage(msg)
	if x := ss.rd.x; x != nil {
		// The transport may end the request before ctx ends (streamable
		// HTTP: when its Handler closes).
		x.OnAbort(&ss.reqs)
	}
	if j := ss.rd.handleRead(msg); j != nil {
		j.run()
	}
	ss.reqs.wg.Wait() // a lasting request runs on a worker: it ends with ctx (a detached handler is not counted here)
	ss.close()
	return nil
}

// connIDTaker is a transport that answers some errors itself (streamable
// HTTP: a batch refused, an unknown Last-Event-ID) and gives them the
// correlation id of the connection they belong to, as the server's own
// errors on it carry.
type connIDTaker interface {
	// SetConnectionCorrelationID is called once, before the connection
	// is served, with the connection's correlation id.
	SetConnectionCorrelationID(id string)
}

func (ss *Session) serve(parent context.Context) error {
	ctx, cancelCause := context.WithCancelCause(parent)
	cancel := func() { cancelCause(nil) }
	defer cancel()
	ss.ctx = ctx
	ss.reqs.watch(ctx) // its end (cancel, below) ends the requests still in flight
	ss.rd.parent = parent
	ss.rd.inputDone = make(chan struct{})
	if !ss.modernOnly { // a per-request session serves one request: it gets no notifications
		ss.server.hub.add(ss)
		defer ss.server.hub.remove(ss)
		ss.rd.takeover = time.AfterFunc(time.Hour, ss.rd.takeOverReading)
		ss.rd.takeover.Stop()
	}
	stop := context.AfterFunc(ctx, func() { ss.conn.t.Close() })
	defer stop()
	if pw, ok := ss.conn.t.(transport.PeerWatcher); ok {
		// The peer is gone: nobody will receive the answers, so the
		// handlers still running for it end (their contexts are cancelled).
		gone := pw.PeerGone()
		go func() {
			select {
			case <-gone:
				ss.log.Debug("mcp: the client went away; cancelling its requests")
				ss.reqs.cancelAll(false)
			case <-ctx.Done():
			}
		}()
	}
	ss.log.Debug("mcp: connection open", "transport", ss.conn.t.Kind())
	// The reader runs on its own goroutine: it may be busy with an inline
	// call when the input ends (see runInline), and Run must still be able
	// to drain and close.
	go ss.rd.readLoop()
	if d := ss.server.opts.KeepAlive; d > 0 && !ss.modernOnly {
		waitPinger := pingClient(ss, ctx, d, cancelCause)
		defer func() { cancel(); waitPinger() }() // the pinger ends with the session
	}
	var runErr error
	select {
	case <-ss.rd.inputDone:
		runErr = ss.rd.inputErr
	case <-ctx.Done():
		// The transport is closed (see stop above), so the reader ends
		// unless it runs a handler that ignores its context (a
		// per-request session runs its one request on the reader): wait
		// for it at most ShutdownTimeout.
		t := time.NewTimer(ss.server.opts.ShutdownTimeout)
		select {
		case <-ss.rd.inputDone:
			runErr = ss.rd.inputErr
		case <-t.C:
			runErr = ctx.Err()
			ss.log.Warn("mcp: a handler ignores its context; the connection closes without it", "timeout", ss.server.opts.ShutdownTimeout)
		}
		t.Stop()
	}
	if ss.rd.takeover != nil {
		ss.rd.takeover.Stop()
	}
	if cause := context.Cause(ctx); errors.Is(cause, ErrPeerUnresponsive) {
		runErr = cause
	}
	if runErr == nil {
		ss.drain(ctx)
	}
	ss.close()
	ss.conn.t.Close()
	ss.log.Debug("mcp: connection closed")
	return runErr
}

// drain waits for in-flight requests, up to ShutdownTimeout. Open
// subscriptions end at once: they would never finish by themselves.
func (ss *Session) drain(ctx context.Context) {
	ss.reqs.cancelAll(true)
	if ss.reqs.active.Load() == 0 {
		return // nothing in flight
	}
	done := make(chan struct{})
	go func() { ss.reqs.wg.Wait(); close(done) }()
	t := time.NewTimer(ss.server.opts.ShutdownTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		ss.log.Warn("mcp: shutdown timeout; dropping in-flight results", "timeout", ss.server.opts.ShutdownTimeout)
	case <-ctx.Done():
	}
}
