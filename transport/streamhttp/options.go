package streamhttp

import (
	"context"
	"log/slog"
	"time"

	"github.com/keelmcp/keel/transport"
)

// Defaults of Options.
const (
	// DefaultIdleTimeout ends a session with no request, open stream or
	// unanswered request for this long.
	DefaultIdleTimeout = 30 * time.Minute
	// DefaultRetryInterval is the SSE retry field of priming events.
	DefaultRetryInterval = time.Second
	// DefaultSSEAfter is how long ResponseAuto waits before switching a
	// response to SSE.
	DefaultSSEAfter = time.Second
	// DefaultKeepAlive is the interval of SSE comments on an open
	// subscriptions/listen stream.
	DefaultKeepAlive = 25 * time.Second
)

// Defaults of the bounds in Options: what one peer, or many, can make a
// Handler hold.
const (
	// DefaultMaxSessions bounds live sessions. An idle initialized 2025
	// session of an mcp.Server holds about 17 KiB of heap and stack, 23 to
	// 25 KiB of resident memory (measured), so the bound caps their memory
	// near 250 MiB, and it leaves room for a busy single node (sessions end
	// on DELETE, after InitTimeout when never used, or after IdleTimeout).
	DefaultMaxSessions = 10_000
	// DefaultInitTimeout is how long a new session may go unused after the
	// POST of its initialize request (the client's next message is
	// notifications/initialized): an initialize flood then holds memory
	// for seconds, not for IdleTimeout.
	DefaultInitTimeout = 10 * time.Second
	// DefaultMaxStreams bounds the HTTP requests a Handler serves at once:
	// room for the GET stream of every session at DefaultMaxSessions and
	// as many POSTs waiting for their answers. Each holds a goroutine and
	// its connection's buffers.
	DefaultMaxStreams = 2 * DefaultMaxSessions
	// DefaultMaxSessionsPerPeer bounds the live sessions of one peer (a
	// verified token's subject or client id, else a remote address): a
	// tenth of DefaultMaxSessions, so that one peer cannot take every
	// session.
	DefaultMaxSessionsPerPeer = DefaultMaxSessions / 10
	// DefaultMaxStreamsPerPeer bounds the HTTP requests of one peer served
	// at once (GET streams, POSTs waiting for their answers): a twentieth
	// of DefaultMaxStreams, one stream for each session the peer may hold.
	DefaultMaxStreamsPerPeer = DefaultMaxSessionsPerPeer
	// DefaultMaxSessionGETStreams bounds the GET streams one session has
	// open at once: its standalone stream and the resumptions of its
	// requests' streams (SSE polling reconnects one per call).
	DefaultMaxSessionGETStreams = 8
	// DefaultBodyReadTimeout is how long a POST may take to deliver its
	// body: a client trickling bytes is cut off after it.
	DefaultBodyReadTimeout = 30 * time.Second
	// DefaultRefusalLogsPerSecond bounds the log lines that refused
	// requests cause (a burst of as many, then as many a second).
	DefaultRefusalLogsPerSecond = 5
)

// ResponseMode selects how a Handler answers a POST carrying requests.
type ResponseMode uint8

const (
	// ResponseAuto answers with one JSON body when the response is the
	// first message about the request and comes within SSEAfter, and with
	// an SSE stream otherwise: as soon as the handler sends a related
	// message (progress, a log message, a request to the client), or
	// after SSEAfter on a resumable session of 2025-11-25 or later (the
	// priming event then lets the client resume a long call).
	ResponseAuto ResponseMode = iota
	// ResponseSSE always answers with an SSE stream, except that an error
	// response to a modern (2026-07-28) request that comes first goes as
	// JSON, with its HTTP status.
	ResponseSSE
	// ResponseJSON always answers with one JSON body; messages related to
	// the request go to the session's GET stream instead. A modern
	// subscriptions/listen request is always answered with SSE.
	ResponseJSON
)

// Options configures NewHandler. Serve is required; the zero value
// of every other field selects its default.
type Options struct {
	// Serve serves one MCP session over t until t's input ends (io.EOF
	// from Read) or ctx is cancelled; mcp.Server.Run is such a function
	// (NewServerHandler sets it). In stateful mode it is called once
	// per session, when the client POSTs initialize; in stateless mode
	// once per POST carrying requests, with a StatelessRequest in ctx
	// unless the request is initialize. In both modes it is called once
	// per modern (2026-07-28) request, with a StatelessRequest naming that
	// revision (see Handler).
	Serve func(ctx context.Context, t transport.Transport) error
	// ServeRequest, if set, serves the one request of a modern
	// (2026-07-28) POST on the POST's own goroutine, the way
	// mcp.Server.ServeRequest does (NewServerHandler sets it): msg is
	// the request, t the per-request session its answer and related
	// messages go to. subscriptions/listen, which lasts, always goes
	// through Serve.
	ServeRequest func(ctx context.Context, t transport.Transport, msg []byte) error
	// serveRequestAborts: ServeRequest registers with the hand-off of
	// the session's message (handoff.Request.OnAbort), so the session can
	// end the request without a context of its own
	// (mcp.Server.ServeRequest does: NewServerHandler sets it).
	serveRequestAborts bool
	// serveRefusals: ServeRequest answers a request handed over with a
	// refusal (handoff.Request.Refusal) with it, through the server's
	// middleware chain (mcp.Server.ServeRequest does: NewServerHandler
	// sets it when the server has Middleware); otherwise the handler
	// answers its refusals itself, with the same status and body.
	serveRefusals bool
	// newCorrelationID makes the correlation id of an error the handler
	// answers itself when neither the request nor its session has one
	// (nil: a random UUID); NewServerHandler sets the server's NewID.
	newCorrelationID func() string
	// OnSession, if set, is called when a stateful session starts (its
	// initialize was accepted and Serve is about to run), with the
	// session's context and Mcp-Session-Id; the function it returns, if
	// not nil, is called once when the session has ended (DELETE, expiry,
	// Shutdown), with the error Serve returned (nil, or
	// context.Canceled when the session was ended from outside). It
	// observes sessions without wrapping their transport:
	// otel.Telemetry.HTTPSession records mcp.server.session.duration
	// this way. Stateless mode and revision 2026-07-28 have no sessions
	// and never call it.
	OnSession func(ctx context.Context, id string) (ended func(err error))

	// Stateless serves each POST with a fresh session and issues no
	// Mcp-Session-Id: any replica can serve any request (horizontal
	// scale, no shared memory). There is no GET stream and no DELETE
	// (405), and requests from the server to the client are not possible.
	Stateless bool
	// ResponseMode selects JSON or SSE answers (default ResponseAuto).
	ResponseMode ResponseMode
	// SSEAfter is how long ResponseAuto waits for a response before it
	// switches to SSE (default DefaultSSEAfter; negative: never).
	SSEAfter time.Duration

	// IdleTimeout ends a session that has had no HTTP request, open stream
	// or unanswered request for this long (default DefaultIdleTimeout;
	// negative: never).
	IdleTimeout time.Duration
	// InitTimeout ends a session that no request names within this long
	// after the POST of its initialize request (a client sends
	// notifications/initialized next), so that an initialize flood holds
	// no memory for long (default DefaultInitTimeout; negative: never).
	InitTimeout time.Duration
	// MaxSessions bounds the number of live sessions; an initialize beyond
	// it gets 503 with a JSON-RPC error whose data names the limit
	// (default DefaultMaxSessions; negative: no bound).
	MaxSessions int
	// MaxStreams bounds the HTTP requests served at once, all sessions
	// and modes together: every POST counts from its body to its answer
	// (JSON or SSE, a modern subscriptions/listen included) and every GET
	// stream while open. A request beyond it gets 503 with a JSON-RPC
	// error whose data names the limit (default DefaultMaxStreams;
	// negative: no bound).
	MaxStreams int
	// MaxSessionsPerPeer bounds the live sessions of one peer: the
	// verified bearer token's subject or client id, else the remote
	// address (an IPv6 address by its /64 prefix) read through
	// TrustedProxies. An initialize beyond it gets 429 with a JSON-RPC
	// error whose data names the limit, while other peers still get
	// sessions (default DefaultMaxSessionsPerPeer; negative: no bound).
	MaxSessionsPerPeer int
	// MaxStreamsPerPeer bounds the HTTP requests of one peer served at
	// once, counted as MaxStreams counts them; a request beyond it gets
	// 429 naming the limit (default DefaultMaxStreamsPerPeer; negative: no
	// bound).
	MaxStreamsPerPeer int
	// TrustedProxies lists the reverse proxies (IP addresses, or CIDR
	// prefixes such as "10.0.0.0/8") whose TrustedProxyHeader tells the
	// client's address. Only a request whose connection comes from one of
	// them is read that way: the header's hops are read from the right,
	// and the first that is not a trusted proxy is the peer (a hop that
	// does not parse ends the walk at the proxy that added it). From any
	// other peer the header is ignored, so a client cannot choose its own
	// address. Nil: no proxy is trusted, the connection's address is the
	// peer's. An IPv4-mapped entry ("::ffff:10.0.0.0/104") means the IPv4
	// one it maps. NewHandler panics on an entry that is neither an
	// address nor a prefix, or a mapped prefix shorter than /96.
	TrustedProxies []string
	// TrustedProxyHeader names the one header the trusted proxies set to
	// the addresses they forward for (default DefaultTrustedProxyHeader,
	// "X-Forwarded-For", which nginx's $proxy_add_x_forwarded_for and
	// cloud load balancers append to; "Forwarded" reads the for= values
	// of RFC 7239; any other name, such as "X-Real-IP", is read as a
	// comma-separated list of addresses). Only that header is read, never
	// another: a proxy passes the headers it does not set through as the
	// client sent them, so reading them would let the client choose its
	// address.
	TrustedProxyHeader string
	// MaxSessionGETStreams bounds the GET streams one session has open at
	// once (its standalone stream and resumptions with Last-Event-ID); a
	// GET beyond it gets 429 (default DefaultMaxSessionGETStreams;
	// negative: no bound).
	MaxSessionGETStreams int
	// MaxBodyBytes limits a request body; a larger one gets 413 (default
	// transport.DefaultMaxMessageBytes). The buffer of a body grows as
	// its bytes arrive, never beyond MaxBodyBytes.
	MaxBodyBytes int64
	// BodyReadTimeout bounds the time a POST takes to deliver its body,
	// from the start of the handler; a slower body gets 408 and its
	// connection is closed (default DefaultBodyReadTimeout; negative:
	// none). It is set with http.ResponseController, which net/http's
	// ResponseWriters support; middleware wrapping the writer must
	// implement Unwrap for it to apply. Headers are bounded by your
	// http.Server's ReadHeaderTimeout.
	BodyReadTimeout time.Duration
	// RefusalLogsPerSecond bounds the log lines of refused requests (Host
	// or Origin not allowed, a session of another user, a limit reached):
	// a burst of as many, then as many a second; suppressed lines are
	// counted in one line a second later. Values taken from the request
	// are logged cut to 64 bytes, with their length (default
	// DefaultRefusalLogsPerSecond; negative: refusals are not logged).
	RefusalLogsPerSecond int
	// MaxDepth bounds the nesting depth of a POSTed message (default
	// 64, as the mcp Server).
	MaxDepth int
	// SupportedVersions are the protocol revisions accepted in the
	// MCP-Protocol-Version header; another value gets 400. Nil means
	// 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05
	// (NewServerHandler passes mcp.AllVersions()). Listing 2026-07-28
	// turns on the modern, sessionless revision (see Handler): Serve must
	// then serve it; a modern request for a revision not listed gets 400
	// with error -32022, whose data lists these versions.
	SupportedVersions []string

	// AllowedHosts lists the Host header values accepted, against DNS
	// rebinding: a bare host name ("localhost", "::1") matches any port,
	// "host:port" only that port, "*" anything. Nil means localhost,
	// 127.0.0.1 and ::1 on any port: a server reachable under another
	// name must list it. A request with another Host gets 403.
	AllowedHosts []string
	// AllowedOrigins lists the Origin header values accepted (requests
	// without Origin, from non-browser clients, are always accepted): an
	// origin "https://app.example.com" matches exactly, a bare host name
	// any scheme and port, "*" anything. Nil means localhost, 127.0.0.1
	// and ::1. A request with another Origin gets 403.
	AllowedOrigins []string

	// EventStore keeps SSE events for resumption (Last-Event-ID); nil
	// means a NewMemoryEventStore(nil) per handler. Stateless handlers
	// keep no events.
	EventStore EventStore
	// DisableResumption sends events without ids and keeps none: streams
	// cannot be resumed and CloseSSEStream is refused.
	DisableResumption bool
	// RetryInterval is the SSE retry field sent with priming events: how
	// long a client waits before reconnecting (default
	// DefaultRetryInterval).
	RetryInterval time.Duration
	// KeepAlive is how often an SSE comment is sent on the open stream of
	// a modern subscriptions/listen request, which may stay silent for
	// long, so that proxies do not close it as idle (default
	// DefaultKeepAlive; negative: never).
	KeepAlive time.Duration

	// ToolParamHeaders, when set, returns the x-mcp-header annotated input
	// properties of a tool (nil for none, or an unknown tool); the Handler
	// then checks the Mcp-Param-{Name} headers of each modern tools/call
	// against its arguments (400, -32020 when one is missing, malformed or
	// different). NewServerHandler sets it from the server's tools.
	ToolParamHeaders func(ctx context.Context, tool string) []ParamHeader

	// Logger receives diagnostics (nil = slog.Default()): each string
	// value cut to 2 KiB, at most 100 lines a second (refusals have their
	// own limit, RefusalLogsPerSecond); suppressed lines are counted in a
	// later line.
	Logger *slog.Logger
	// NewSessionID generates session ids (nil: 128 random bits from
	// crypto/rand, base64url). Ids must be visible ASCII and unguessable.
	NewSessionID func() string
}

var defaultLocalHosts = []string{"localhost", "127.0.0.1", "::1"}
