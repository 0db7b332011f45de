package mcp

import "github.com/keelmcp/keel/internal/revision"

// Protocol revisions keel serves, newest first.
const (
	Version20251125 = "2025-11-25"
	Version20250618 = "2025-06-18"
	Version20250326 = "2025-03-26"
	Version20241105 = "2024-11-05"

	// latestVersion is the revision a server answers with when the client
	// asks for one it does not support.
	latestVersion = Version20251125
)

// Method names.
const (
	methodInitialize             = "initialize"
	methodPing                   = "ping"
	methodToolsList              = "tools/list"
	methodToolsCall              = "tools/call"
	methodResourcesList          = "resources/list"
	methodResourcesTemplatesList = "resources/templates/list"
	methodResourcesRead          = "resources/read"
	methodResourcesSubscribe     = "resources/subscribe"
	methodResourcesUnsubscribe   = "resources/unsubscribe"
	methodPromptsList            = "prompts/list"
	methodPromptsGet             = "prompts/get"
	methodCompletionComplete     = "completion/complete"
	methodLoggingSetLevel        = "logging/setLevel"
	methodSamplingCreateMessage  = "sampling/createMessage"
	methodElicitationCreate      = "elicitation/create"
	methodRootsList              = "roots/list"
	methodTasksGet               = "tasks/get"
	methodTasksResult            = "tasks/result"
	methodTasksCancel            = "tasks/cancel"
	methodTasksList              = "tasks/list"

	notificationInitialized          = "notifications/initialized"
	notificationCancelled            = "notifications/cancelled"
	notificationProgress             = "notifications/progress"
	notificationMessage              = "notifications/message"
	notificationToolsListChanged     = "notifications/tools/list_changed"
	notificationResourcesListChanged = "notifications/resources/list_changed"
	notificationResourceUpdated      = "notifications/resources/updated"
	notificationPromptsListChanged   = "notifications/prompts/list_changed"
	notificationRootsListChanged     = "notifications/roots/list_changed"
	notificationElicitationComplete  = "notifications/elicitation/complete"
	notificationTasksStatus          = "notifications/tasks/status"
)

// Meta is the _meta member allowed on params, results and most objects.
// Unknown keys pass through untouched.
type Meta map[string]any

// MetaCorrelationID is the _meta key a client may set on tools/call to choose
// the correlation id of that call.
const MetaCorrelationID = "correlationId"

// MetaServerInfo is the _meta key under which a 2026-07-28 result names
// the server that answered it (an Implementation: name and version). The
// Server stamps it on every result it sends under that revision.
const MetaServerInfo = revision.MetaServerInfo

// MetaProgressToken is the _meta key that carries a request's progress token.
const MetaProgressToken = "progressToken"

// metaRelatedTask is the _meta key that ties a request or notification to a task.
const metaRelatedTask = "io.modelcontextprotocol/related-task"
