package middleware

import (
	"time"

	"github.com/keelmcp/keel/registry"
)

// Defaults of StandardOptions and HealthOptions (the defaults of the
// server configuration, keel.DefaultConfig).
const (
	// DefaultMaxPayloadBytes is the default argument size limit
	// (tools.maxPayloadBytes, 1 MiB).
	DefaultMaxPayloadBytes = 1 << 20
	// DefaultMaxConcurrent is the default number of concurrency slots
	// (resources.maxConcurrentExecutions).
	DefaultMaxConcurrent = 10
	// DefaultTimeout is the default deadline of a call
	// (tools.defaultTimeoutMs): see StandardOptions.DefaultTimeout.
	DefaultTimeout = 30 * time.Second
)

// StandardOptions configure Standard. Nil means all defaults.
type StandardOptions struct {
	// MaxPayloadBytes bounds the arguments' size (0 = DefaultMaxPayloadBytes;
	// negative = no limit).
	MaxPayloadBytes int
	// MaxConcurrent bounds concurrent executions (0 = DefaultMaxConcurrent;
	// negative = no limit). Ignored when Limiter is set.
	MaxConcurrent int
	// MaxConcurrentPerClient bounds the executions of one client (see
	// ClientKey) at once, so that one client cannot take every slot (0 =
	// DefaultPerClientShare(MaxConcurrent): half of the slots, at least 1;
	// negative = no per-client share). Ignored when Limiter is set.
	MaxConcurrentPerClient int
	// Limiter is the concurrency limiter to use, so that it can be shared
	// with the health tool (HealthOptions.Limiter). Nil = a new Limiter of
	// MaxConcurrent slots, MaxConcurrentPerClient per client, told apart
	// by ClientKey.
	Limiter *Limiter
	// ClientKey says which client a call comes from, for the per-client
	// limits: the concurrency share and the rate limit (nil =
	// DefaultClientKey: the peer, as mcp.PeerFromContext says: the bearer
	// token's subject or client id, else the remote address, else the
	// connection). Both stages use this one function.
	ClientKey ClientKeyFunc
	// RateLimit, if set, adds the rate-limit stage (RateLimiter) with
	// these options; its ClientKey is ignored in favour of ClientKey
	// above. Nil = no rate limit. Standard panics if the options are not
	// valid (see NewRateLimiter).
	RateLimit *RateLimitOptions
	// MaxResponseBytes bounds the size of a tool result's JSON encoding (0
	// = DefaultMaxResponseBytes, 4 MiB - 64 KiB; negative = no limit). See
	// ResponseLimit.
	MaxResponseBytes int
	// MaxArrayItems bounds the items of each array in a tool result: the
	// content blocks and every array in structuredContent (0 =
	// DefaultMaxArrayItems, 1000; negative = no limit). See ResponseLimit.
	MaxArrayItems int
	// DefaultTimeout is the deadline of the calls of tools without their
	// own ToolOptions.Timeout (0 = DefaultTimeout; negative = none): their
	// handler's context ends then, and the answer is TIMEOUT (the Deadline
	// stage). A tool's own Timeout is a response deadline: TIMEOUT is
	// answered at once, whatever the handler does (the Timeout stage).
	DefaultTimeout time.Duration
	// LockAll serializes calls of every tool, not only of tools registered
	// with ToolOptions.Serial.
	LockAll bool
	// AuditSink receives enter/exit events (nil = NopAuditSink, which
	// costs nothing).
	AuditSink AuditSink
	// Now is the clock of audit timestamps (nil = time.Now).
	Now func() time.Time
	// Admission decides which tools each request may list and call (nil =
	// all): ModePolicy, TrustPolicy, your own, or AllOf several
	// (admission.go). Its stage runs right after Lookup.
	Admission AdmissionPolicy
	// Admin, if enabled, adds the administrative tools (admin.go): they
	// are listed and served besides the registry's, and its admin policy
	// is checked right after Admission.
	Admin *Admin
}

// Standard returns the chain in the tools/call processing order, for people who
// do not want to choose:
//
//	Recover → PayloadLimit → Lookup → [Admit] → [RateLimit] → Concurrency →
//	Lock → Validate → AuditExit → AuditEnter → ResponseLimit → Deadline →
//	Timeout → Dispatch
//
// A panic anywhere becomes INTERNAL; oversized arguments and a full limiter
// are rejected with RESOURCE_EXHAUSTED before any work; unknown tools get
// -32602; with Admission (or Admin) set, tools the request may not use are
// left out of tools/list and their calls refused before taking a slot
// (Admit); with RateLimit set, a client over its rate gets RATE_LIMITED
// before taking a slot; a client already holding its share of the slots
// gets RESOURCE_EXHAUSTED while others still find free ones; only
// validated calls are audited, and AuditExit, outside AuditEnter, records
// calls whose Enter failed; a result over the response limits becomes a
// RESOURCE_EXHAUSTED error (audited as such); the deadline covers the
// handler alone, and the slot and lock are held until it returns: the
// default one (DefaultTimeout) ends the handler's context (Deadline), a
// tool's own registry.ToolOptions.Timeout answers TIMEOUT at once whatever
// the handler does (Timeout). Add your own stages with Use (they run inside
// Timeout, just before Dispatch), or build your own order with New.
func Standard(reg *registry.Registry, opts *StandardOptions) *Chain {
	var o StandardOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxPayloadBytes == 0 {
		o.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if o.MaxConcurrent == 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	if o.DefaultTimeout == 0 {
		o.DefaultTimeout = DefaultTimeout
	}
	lim := o.Limiter
	if lim == nil {
		lim = NewLimiterWith(&LimiterOptions{Max: o.MaxConcurrent, PerClient: o.MaxConcurrentPerClient, ClientKey: o.ClientKey})
	}
	var rate *RateLimiter
	if o.RateLimit != nil {
		ro := *o.RateLimit
		ro.ClientKey = o.ClientKey
		var err error
		if rate, err = NewRateLimiter(&ro); err != nil {
			panic(err)
		}
	}
	audit := &Audit{Sink: o.AuditSink, Now: o.Now}
	ch := New(reg,
		Recover(),
		PayloadLimit(o.MaxPayloadBytes),
		Lookup(),
	)
	if o.Admission != nil {
		ch.Admit(o.Admission)
	}
	ch.Mount(o.Admin) // after Admission: a tool Admission hides looks unknown even to admins
	if rate != nil {
		ch.Use(rate.Middleware())
	}

	return ch.Use(
		lim.Middleware(),
		Lock(&LockOptions{All: o.LockAll}),
		Validate(),
		audit.Exit(),
		audit.Enter(),
		ResponseLimit(&ResponseLimitOptions{MaxBytes: o.MaxResponseBytes, MaxArrayItems: o.MaxArrayItems}),
		Deadline(o.DefaultTimeout),
		Timeout(0),
	)
}
