package mcp

import (
	"encoding/json"
)

// Protocol revision 2026-07-28 ("modern", stateless): every request carries
// its own revision and client capabilities in params._meta; there is no
// initialize handshake, no session and no server-to-client request. keel
// serves it beside the 2025 revisions ("legacy"): a request is modern when
// its _meta names a protocol version (or, over HTTP, when its
// MCP-Protocol-Version header is 2026-07-28 or later); everything else is
// served by the legacy rules of its session.

// Version20260728 is the stateless protocol revision.
const Version20260728 = "2026-07-28"

// ModernVersions lists the stateless revisions keel serves per request,
// newest first. They are never negotiated by initialize: an initialize
// asking for one is answered with LatestVersion.
var ModernVersions = []string{Version20260728}

// IsModernEra reports whether revision v belongs to the per-request era:
// 2026-07-28 or later (revisions are dates and compare as strings). It is
// the one era test of package mcp and its transports: an unknown later
// revision is of the modern era too, and is then refused with -32022
// (IsModernVersion is false for it).
func IsModernEra(v string) bool { return v >= Version20260728 }

// IsModernVersion reports whether v is a stateless revision keel serves.
func IsModernVersion(v string) bool {
	for _, s := range ModernVersions {
		if s == v {
			return true
		}
	}
	return false
}

// AllVersions returns every revision keel serves, newest first: the modern
// ones, then SupportedVersions. server/discover lists them as
// supportedVersions, and -32022 errors as data.supported.
func AllVersions() []string {
	out := make([]string, 0, len(ModernVersions)+len(SupportedVersions))
	return append(append(out, ModernVersions...), SupportedVersions...)
}

// Methods and notifications of revision 2026-07-28.
const (
	MethodServerDiscover                  = "server/discover"
	MethodSubscriptionsListen             = "subscriptions/listen"
	MethodTasksUpdate                     = "tasks/update"
	NotificationSubscriptionsAcknowledged = "notifications/subscriptions/acknowledged"
	NotificationTasks                     = "notifications/tasks"
)

// _meta keys of revision 2026-07-28.
const (
	// MetaProtocolVersion (request _meta, required) is the revision of the request.
	MetaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	// MetaClientCapabilities (request _meta, required) is the client's
	// capabilities for this request ({} = none).
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	// MetaClientInfo (request _meta, optional) names the client software;
	// it is self-reported and never trusted.
	MetaClientInfo = "io.modelcontextprotocol/clientInfo"
	// MetaLogLevel (request _meta, optional) opts the request in to
	// notifications/message at or above this level.
	MetaLogLevel = "io.modelcontextprotocol/logLevel"
	// MetaServerInfo (result _meta) names the server.
	MetaServerInfo = "io.modelcontextprotocol/serverInfo"
	// MetaSubscriptionID (notification and result _meta) is the JSON-RPC
	// id of the subscriptions/listen request a message belongs to.
	MetaSubscriptionID = "io.modelcontextprotocol/subscriptionId"
)

// Result types (the resultType member of every modern result).
const (
	ResultTypeComplete      = "complete"
	ResultTypeInputRequired = "input_required"
	ResultTypeTask          = "task" // only with the tasks extension
)

// Cache scopes of cacheable results (discover, the four lists, resources/read).
const (
	CacheScopePublic  = "public"
	CacheScopePrivate = "private"
)

// ExtensionTasks is the identifier of the tasks extension (SEP-2663).
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// Error codes of revision 2026-07-28 (over HTTP all three answer 400).
const (
	// CodeHeaderMismatch: an HTTP header is missing, malformed, or
	// disagrees with the body.
	CodeHeaderMismatch = -32020
	// CodeMissingClientCapability: the request needs a client capability
	// the request did not declare; data.requiredCapabilities names it.
	CodeMissingClientCapability = -32021
	// CodeUnsupportedProtocolVersion: the request's revision is unknown
	// or not served; data lists the supported ones.
	CodeUnsupportedProtocolVersion = -32022
)

// UnsupportedVersionData is error.data of -32022. CorrelationID is the
// request's correlationId (the Server fills it in, as in every protocol
// error).
type UnsupportedVersionData struct {
	Supported     []string `json:"supported"`
	Requested     string   `json:"requested"`
	CorrelationID string   `json:"correlationId,omitempty"`
}

// UnsupportedVersionError returns the -32022 error for a request that
// asked for revision requested.
func UnsupportedVersionError(requested string) *Error {
	return &Error{Code: CodeUnsupportedProtocolVersion,
		Message: "Unsupported protocol version: " + quote(requested),
		Data:    UnsupportedVersionData{Supported: AllVersions(), Requested: requested}}
}

// MissingCapabilityData is error.data of -32021.
type MissingCapabilityData struct {
	RequiredCapabilities ClientCapabilities `json:"requiredCapabilities"`
}

// MissingCapabilityError returns the -32021 error for a request that needs
// the client capabilities in required, which it did not declare. A handler
// may return it (from a tool, prompt or resource handler) to refuse a
// modern request.
func MissingCapabilityError(required ClientCapabilities, message string) *Error {
	if message == "" {
		message = "Missing required client capability"
	}
	return &Error{Code: CodeMissingClientCapability, Message: message,
		Data: MissingCapabilityData{RequiredCapabilities: required}}
}

// HeaderMismatchError returns the -32020 error for an HTTP header that is
// missing, malformed or disagrees with the body.
func HeaderMismatchError(message string) *Error {
	return &Error{Code: CodeHeaderMismatch, Message: "Header mismatch: " + message}
}

// DiscoverResult is the result of server/discover (2026-07-28).
type DiscoverResult struct {
	SupportedVersions []string           `json:"supportedVersions"`
	Capabilities      ServerCapabilities `json:"capabilities"`
	Instructions      string             `json:"instructions,omitempty"`
	Meta              Meta               `json:"_meta,omitempty"`
}

// SubscriptionFilter is the notifications member of subscriptions/listen:
// the notification types the client opts in to.
type SubscriptionFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitzero"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitzero"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitzero"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
	// TaskIDs subscribes to notifications/tasks for these tasks (the
	// tasks extension; only tasks of the caller are honoured).
	TaskIDs []string `json:"taskIds,omitempty"`
}

// ListenParams are the params of subscriptions/listen.
type ListenParams struct {
	Notifications SubscriptionFilter `json:"notifications"`
	Meta          Meta               `json:"_meta,omitempty"`
}

// SubscriptionAcknowledgedParams are the params of
// notifications/subscriptions/acknowledged: the subset of the filter the
// server honours.
type SubscriptionAcknowledgedParams struct {
	Notifications SubscriptionFilter `json:"notifications"`
	Meta          Meta               `json:"_meta"`
}

// RequestMeta is the decoded per-request _meta of a modern request.
type RequestMeta struct {
	ProtocolVersion    string
	ClientCapabilities ClientCapabilities
	ClientInfo         *Implementation
	LogLevel           LoggingLevel // "": no log messages for this request
	ProgressToken      json.RawMessage
	// Meta holds the members of _meta other than the four of the
	// revision (protocolVersion, clientCapabilities, clientInfo,
	// logLevel), progressToken included, each decoded as an any; nil
	// when there are none. A member no any can hold (a number beyond
	// float64) is left out. ToolCall.Meta is this map.
	Meta Meta

	partial bool // a member was left out of Meta
}
