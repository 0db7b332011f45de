package mcp

import (
	"encoding/json"

	"github.com/keelmcp/keel/internal/revision"
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

// AllVersions returns every revision keel serves, newest first: those
// served per request (Version20260728), then supportedVersions.
// server/discover lists them as supportedVersions, and -32022 errors as
// data.supported.
func AllVersions() []string {
	out := make([]string, 0, len(revision.PerRequestVersions)+len(supportedVersions))
	return append(append(out, revision.PerRequestVersions...), supportedVersions...)
}

// Methods and notifications of revision 2026-07-28.
const (
	methodServerDiscover                  = "server/discover"
	methodSubscriptionsListen             = "subscriptions/listen"
	methodTasksUpdate                     = "tasks/update"
	notificationSubscriptionsAcknowledged = "notifications/subscriptions/acknowledged"
	notificationTasks                     = "notifications/tasks"
)

// Result types (the resultType member of every modern result).
const (
	resultTypeComplete      = "complete"
	resultTypeInputRequired = "input_required"
	resultTypeTask          = "task" // only with the tasks extension
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
	CodeHeaderMismatch = revision.CodeHeaderMismatch
	// CodeMissingClientCapability: the request needs a client capability
	// the request did not declare; data.requiredCapabilities names it.
	CodeMissingClientCapability = revision.CodeMissingClientCapability
	// CodeUnsupportedProtocolVersion: the request's revision is unknown
	// or not served; data lists the supported ones.
	CodeUnsupportedProtocolVersion = revision.CodeUnsupportedProtocolVersion
)

// UnsupportedVersionData is error.data of -32022. CorrelationID is the
// request's correlationId (the Server fills it in, as in every protocol
// error).
type UnsupportedVersionData struct {
	Supported     []string `json:"supported"`
	Requested     string   `json:"requested"`
	CorrelationID string   `json:"correlationId,omitempty"`
}

func (d UnsupportedVersionData) correlatedWith(id func() string) any {
	if d.CorrelationID != "" {
		return nil
	}
	d.CorrelationID = id()
	return d
}

// unsupportedVersionError returns the -32022 error for a request that
// asked for revision requested.
func unsupportedVersionError(requested string) *Error {
	e := refused(revision.UnsupportedVersion(requested, quote))
	e.Data = UnsupportedVersionData{Supported: AllVersions(), Requested: requested}
	return e
}

// missingCapabilityData is error.data of -32021.
type missingCapabilityData struct {
	RequiredCapabilities ClientCapabilities `json:"requiredCapabilities"`
	CorrelationID        string             `json:"correlationId,omitempty"`
}

func (d missingCapabilityData) correlatedWith(id func() string) any {
	if d.CorrelationID != "" {
		return nil
	}
	d.CorrelationID = id()
	return d
}

// MissingCapabilityError returns the -32021 error for a request that needs
// the client capabilities in required, which it did not declare. A handler
// may return it (from a tool, prompt or resource handler) to refuse a
// 2026-07-28 request.
func MissingCapabilityError(required ClientCapabilities, message string) *Error {
	if message == "" {
		message = "Missing required client capability"
	}
	return &Error{Code: CodeMissingClientCapability, Message: message,
		Data: missingCapabilityData{RequiredCapabilities: required}}
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

// listenParams are the params of subscriptions/listen.
type listenParams struct {
	Notifications SubscriptionFilter `json:"notifications"`
	Meta          Meta               `json:"_meta,omitempty"`
}

// subscriptionAcknowledgedParams are the params of
// notifications/subscriptions/acknowledged: the subset of the filter the
// server honours.
type subscriptionAcknowledgedParams struct {
	Notifications SubscriptionFilter `json:"notifications"`
	Meta          Meta               `json:"_meta"`
}

// requestMeta is the decoded _meta of a 2026-07-28 request.
type requestMeta struct {
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
