package mcp

// Protocol revisions keel serves, newest first.
const (
	Version20251125 = "2025-11-25"
	Version20250618 = "2025-06-18"
	Version20250326 = "2025-03-26"
	Version20241105 = "2024-11-05"

	// LatestVersion is the revision a server answers with when the client
	// asks for one it does not support.
	LatestVersion = Version20251125
)

// SupportedVersions lists the protocol revisions keel negotiates, newest first.
var SupportedVersions = []string{Version20251125, Version20250618, Version20250326, Version20241105}

// Method names.
const (
	MethodInitialize             = "initialize"
	MethodPing                   = "ping"
	MethodToolsList              = "tools/list"
	MethodToolsCall              = "tools/call"
	MethodResourcesList          = "resources/list"
	MethodResourcesTemplatesList = "resources/templates/list"
	MethodResourcesRead          = "resources/read"
	MethodResourcesSubscribe     = "resources/subscribe"
	MethodResourcesUnsubscribe   = "resources/unsubscribe"
	MethodPromptsList            = "prompts/list"
	MethodPromptsGet             = "prompts/get"
	MethodCompletionComplete     = "completion/complete"
	MethodLoggingSetLevel        = "logging/setLevel"
	MethodSamplingCreateMessage  = "sampling/createMessage"
	MethodElicitationCreate      = "elicitation/create"
	MethodRootsList              = "roots/list"
	MethodTasksGet               = "tasks/get"
	MethodTasksResult            = "tasks/result"
	MethodTasksCancel            = "tasks/cancel"
	MethodTasksList              = "tasks/list"

	NotificationInitialized          = "notifications/initialized"
	NotificationCancelled            = "notifications/cancelled"
	NotificationProgress             = "notifications/progress"
	NotificationMessage              = "notifications/message"
	NotificationToolsListChanged     = "notifications/tools/list_changed"
	NotificationResourcesListChanged = "notifications/resources/list_changed"
	NotificationResourceUpdated      = "notifications/resources/updated"
	NotificationPromptsListChanged   = "notifications/prompts/list_changed"
	NotificationRootsListChanged     = "notifications/roots/list_changed"
	NotificationElicitationComplete  = "notifications/elicitation/complete"
	NotificationTasksStatus          = "notifications/tasks/status"
)

// Meta is the _meta member allowed on params, results and most objects.
// Unknown keys pass through untouched.
type Meta map[string]any

// MetaCorrelationID is the _meta key a client may set on tools/call to choose
// the correlation id of that call.
const MetaCorrelationID = "correlationId"

// MetaProgressToken is the _meta key that carries a request's progress token.
const MetaProgressToken = "progressToken"

// MetaRelatedTask is the _meta key that ties a request or notification to a task.
const MetaRelatedTask = "io.modelcontextprotocol/related-task"
